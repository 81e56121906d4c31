// What the receiver checks in accept(), before the sender freezes anything,
// so that a destination that cannot run the container refuses with one
// line instead of failing the restore after the downtime began: CRIU and
// kernel not older than the source's (the images may use what the source's
// had), and every bind mount's source present here. Pure functions, unit-
// tested (tests/unit/migrate_destination_checks_test.cpp).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace crx::migrate {

// The leading numbers of a version: "3.17.1" -> {3,17,1},
// "6.1.0-18-amd64" -> {6,1,0,18} (up to the first part with a letter).
std::vector<long> version_numbers(const std::string& v);
// a older than b, comparing version_numbers (missing parts count as 0).
bool version_older(const std::string& a, const std::string& b);
// Throws crx::Error "the destination's <what> <here> is older than the
// source's <source>" when here is older; does nothing when either is "".
void check_not_older(const std::string& what, const std::string& here, const std::string& source);

// "bind mount <destination>: <source> does not exist on the destination"
// for each bind mount of s whose source `exists` says is missing.
std::vector<std::string> missing_bind_sources(const spec::Spec& s,
                                              const std::function<bool(const std::string&)>& exists);
// "<type> namespace <path> does not exist on the destination" for each
// namespace the config joins by path.
std::vector<std::string> missing_namespace_paths(
    const spec::Spec& s, const std::function<bool(const std::string&)>& exists);
// "device <path> (char M:m) does not exist on the destination" for each
// char/block device of linux.devices whose /sys/dev/{char,block}/M:m
// `exists` says is missing (crx would make the node, but nothing behind it).
std::vector<std::string> missing_devices(const spec::Spec& s,
                                         const std::function<bool(const std::string&)>& exists);

}  // namespace crx::migrate
