#include "migrate/page_ledger.hpp"

// libxxhash-dev's header, used inline: no library to link or to ship.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace crx::migrate {

PageHash hash_page(const void* page, size_t size) {
  XXH128_hash_t h = XXH3_128bits(page, size);
  return PageHash{h.low64, h.high64};
}

size_t PageLedger::KeyHash::operator()(const Key& k) const noexcept {
  // Page addresses differ in their high bits little: mix both words.
  uint64_t words[2] = {k.image, k.vaddr};
  return static_cast<size_t>(XXH3_64bits(words, sizeof words));
}

bool PageLedger::unchanged(uint64_t image, uint64_t vaddr, const PageHash& h) {
  Key k{image, vaddr};
  next_[k] = h;
  auto it = prev_.find(k);
  return it != prev_.end() && it->second == h;
}

void PageLedger::carry(uint64_t image, uint64_t vaddr) {
  Key k{image, vaddr};
  auto it = prev_.find(k);
  if (it != prev_.end()) next_[k] = it->second;
}

void PageLedger::end_round() {
  prev_ = std::move(next_);
  next_ = Map{};
}

void PageLedger::abandon_round() { next_ = Map{}; }

}  // namespace crx::migrate
