#include "seq/mr_passes.hpp"

#include <cstring>

namespace crx::verbs_seq {

void stamp_pages(char* buf, size_t bytes, uint64_t pass) {
  const uint64_t words[2] = {pass, ~pass};
  for (size_t off = 0; off + sizeof words <= bytes; off += kStampPage)
    std::memcpy(buf + off, words, sizeof words);
}

std::optional<uint64_t> page_pass(const char* page, unsigned char initial_fill) {
  // The NIC writes these words while we read them: atomic loads, so the
  // compiler reads memory every time, and the pair tells a torn stamp.
  auto* w = reinterpret_cast<const uint64_t*>(page);
  uint64_t pass = __atomic_load_n(&w[0], __ATOMIC_ACQUIRE);
  uint64_t inverse = __atomic_load_n(&w[1], __ATOMIC_ACQUIRE);
  if (inverse == ~pass) return pass;
  uint64_t fill;
  std::memset(&fill, initial_fill, sizeof fill);
  if (pass == fill && inverse == fill) return 0;
  return std::nullopt;
}

std::string MrPassChecker::check() const {
  for (size_t off = 0; off + 2 * sizeof(uint64_t) <= bytes_; off += kStampPage) {
    std::optional<uint64_t> pass = page_pass(mr_ + off, fill_);
    if (pass && *pass < announced_)
      return "MR page " + std::to_string(off / kStampPage) + " holds remote write pass " +
             std::to_string(*pass) + ", but pass " + std::to_string(announced_) +
             " was announced as in place (a write of the peer's NIC was lost)";
  }
  return {};
}

}  // namespace crx::verbs_seq
