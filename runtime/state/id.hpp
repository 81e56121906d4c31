// Container id rules (same alphabet as runc: letters, digits, '_', '+', '-', '.').
#pragma once
#include <string>

namespace crx::state {

inline constexpr size_t kMaxIdLength = 250;  // leaves room in a 255-byte file name

// Throws crx::Error with a clear reason when `id` cannot name a container.
void validate_id(const std::string& id);

}  // namespace crx::state
