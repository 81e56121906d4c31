// Private to runtime/spec: the parsers of each part of config.json. Each
// takes the Field of its JSON object, so errors carry the full path.
#pragma once
#include "spec/json_field.hpp"
#include "spec/spec.hpp"

namespace crx::spec::detail {

Process parse_process_field(const Field& f);
Linux parse_linux_field(const Field& f);
Resources parse_resources_field(const Field& f);
Seccomp parse_seccomp_field(const Field& f);
// Checks that need more than one part of the document (hostname needs a
// UTS namespace, sysctls need the matching namespace, ...).
void validate_cross_fields(const Spec& spec, const Field& root);

}  // namespace crx::spec::detail
