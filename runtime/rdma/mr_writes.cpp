#include "rdma/mr_writes.hpp"

#include <algorithm>

namespace crx::rdma {

namespace {
constexpr uint64_t kPage = 4096;
}

WriteBaseline::WriteBaseline(const std::vector<ContextWrites>& cleared) {
  for (const auto& c : cleared) {
    // the smallest: an MR deregistered between two contexts' answers
    // may have had bits set after the first context's clear
    auto& lost = lost_[c.device];
    if (c.context != 0) lost = lost ? std::min(*lost, c.lost_min) : c.lost_min;
  }
}

std::optional<std::map<pid_t, PageRanges>> WriteBaseline::written_since(
    const std::vector<ContextWrites>& now) const {
  std::map<pid_t, PageRanges> out;
  std::map<uint64_t, pid_t> owner;  // context serial -> the one pid holding it
  std::map<std::string, bool> vouched;  // every device seen, at the start or now
  for (const auto& [device, lost] : lost_) vouched[device] = false;
  for (const auto& c : now) {
    bool& ok = vouched[c.device];
    if (c.context == 0) continue;  // no MR: nothing written it could tell of
    auto [it, fresh] = owner.emplace(c.context, c.pid);
    if (!fresh && it->second != c.pid) return std::nullopt;
    auto at = lost_.find(c.device);
    if (at == lost_.end() || !at->second || *at->second != c.lost_min ||
        c.lost_min != c.lost_max)
      return std::nullopt;
    ok = true;
    PageRanges& r = out[c.pid];
    for (const auto& mr : c.mrs) r = merge(r, ranges_of(mr));
  }
  for (const auto& [device, ok] : vouched)
    if (!ok) return std::nullopt;
  return out;
}

PageRanges ranges_of(const MrWrites& mr) {
  PageRanges r;
  for (uint64_t p = 0; p < mr.pages && p / 64 < mr.bits.size(); p++) {
    if (!(mr.bits[p / 64] >> (p % 64) & 1)) continue;
    const uint64_t a = mr.addr + p * kPage;
    if (!r.empty() && r.back().second == a)
      r.back().second = a + kPage;
    else
      r.emplace_back(a, a + kPage);
  }
  return r;
}

PageRanges merge(const PageRanges& a, const PageRanges& b) {
  PageRanges all;
  all.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(all));
  PageRanges out;
  for (const auto& x : all) {
    if (!out.empty() && x.first <= out.back().second)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  }
  return out;
}

bool covers(const PageRanges& ranges, uint64_t addr, uint64_t len) {
  // the first range that ends after addr
  auto it = std::upper_bound(ranges.begin(), ranges.end(), addr,
                             [](uint64_t a, const auto& r) { return a < r.second; });
  return it != ranges.end() && it->first <= addr && addr + len <= it->second;
}

}  // namespace crx::rdma
