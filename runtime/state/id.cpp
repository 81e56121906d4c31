#include "state/id.hpp"

#include "common/error.hpp"

namespace crx::state {

void validate_id(const std::string& id) {
  if (id.empty()) throw Error("invalid container id: the id is empty");
  if (id == "." || id == "..") throw Error("invalid container id \"" + id + "\": not allowed");
  if (id.size() > kMaxIdLength)
    throw Error("invalid container id: longer than " + std::to_string(kMaxIdLength) + " characters");
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '+' || c == '-' || c == '.';
    if (!ok) {
      std::string shown = (c >= 0x20 && c < 0x7f) ? std::string(1, c) : "\\x" + std::to_string(static_cast<unsigned char>(c));
      throw Error("invalid container id \"" + id + "\": character '" + shown +
                  "' is not allowed (use letters, digits, _ + - .)");
    }
  }
}

}  // namespace crx::state
