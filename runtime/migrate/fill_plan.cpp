#include "migrate/fill_plan.hpp"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <vector>

#include "checkpoint/memory_images.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"

namespace crx::migrate {
namespace {

namespace ck = crx::checkpoint;
namespace fs = std::filesystem;
using ck::kImagePageSize;

// Address ranges [lo, hi), sorted, apart.
struct Range {
  uint64_t lo, hi;
};
using Ranges = std::vector<Range>;

// Of [lo, hi) in round r of maps (0: the final round; the last: the
// first), the parts whose data is the first round's and marked PE_LAZY
// there, appended to out in order. Works on entries, not pages: the plan
// runs in the frozen window, and 256 MiB are 65536 pages but a handful of
// entries.
void first_round_lazy(const std::vector<ck::Pagemap>& maps, size_t r, uint64_t lo, uint64_t hi,
                      Ranges& out) {
  const auto& es = maps[r].entries;
  auto it = std::upper_bound(es.begin(), es.end(), lo,
                             [](uint64_t a, const ck::PagemapEntry& e) { return a < e.vaddr; });
  if (it != es.begin() && std::prev(it)->end() > lo) --it;
  for (; it != es.end() && it->vaddr < hi; ++it) {
    uint64_t a = std::max(lo, it->vaddr), b = std::min(hi, it->end());
    if (a >= b) continue;
    if (it->flags & ck::kPagePresent) {
      if (r + 1 == maps.size() && (it->flags & ck::kPageLazy)) {
        if (!out.empty() && out.back().hi == a)
          out.back().hi = b;
        else
          out.push_back({a, b});
      }
    } else if ((it->flags & ck::kPageInParent) && r + 1 < maps.size()) {
      first_round_lazy(maps, r + 1, a, b, out);
    }
  }
}

// The parts of `ranges` inside VMAs a lazy restore registers.
Ranges in_lazy_vmas(const Ranges& ranges, const std::vector<ck::Vma>& vmas) {
  Ranges out;
  for (const auto& r : ranges)
    for (const auto& v : vmas) {
      uint64_t a = std::max(r.lo, v.start), b = std::min(r.hi, v.end);
      if (a < b && ck::vma_can_be_lazy(v)) out.push_back({a, b});
    }
  std::sort(out.begin(), out.end(), [](const Range& x, const Range& y) { return x.lo < y.lo; });
  return out;
}

// e split where `fill` starts and ends: the pages inside take
// flags(true), the others flags(false).
template <class Flags>
void split(const ck::PagemapEntry& e, const Ranges& fill, Flags flags,
           std::vector<ck::PagemapEntry>& out) {
  auto pages = [](uint64_t a, uint64_t b) { return static_cast<uint32_t>((b - a) / kImagePageSize); };
  uint64_t at = e.vaddr;
  for (const auto& f : fill) {
    uint64_t a = std::max(f.lo, e.vaddr), b = std::min(f.hi, e.end());
    if (a >= b) continue;
    if (at < a) out.push_back({at, pages(at, a), flags(false)});
    out.push_back({a, pages(a, b), flags(true)});
    at = b;
  }
  if (at < e.end()) out.push_back({at, pages(at, e.end()), flags(false)});
}

uint64_t page_count(const Ranges& rs) {
  uint64_t n = 0;
  for (const auto& r : rs) n += (r.hi - r.lo) / kImagePageSize;
  return n;
}

// One task's plan: its final pagemap rewritten and its view pagemap.
struct TaskPlan {
  std::string name;  // pagemap-<id>.img
  ck::Pagemap final_map, view_map;
  std::string first_pages;  // the first round's pages image for the view
  uint64_t pages = 0;
};

std::optional<TaskPlan> plan_task(const std::vector<std::string>& chain, const std::string& id,
                                  const ParentPagemaps* ahead) {
  const std::string name = "pagemap-" + id + ".img";
  std::vector<ck::Pagemap> maps;
  for (size_t i = 0; i < chain.size(); i++) {
    const std::string path = chain[i] + "/" + name;
    if (i > 0 && ahead) {
      if (auto it = ahead->by_path.find(path); it != ahead->by_path.end()) {
        maps.push_back(it->second);
        continue;
      }
    }
    if (!path_exists(path)) return std::nullopt;  // a task newer than the first round
    maps.push_back(ck::read_pagemap(path));
  }
  const std::string mm = chain[0] + "/mm-" + id + ".img";
  if (!path_exists(mm)) return std::nullopt;
  const std::vector<ck::Vma> vmas = ck::read_vmas(mm);
  // The pages to fill: "in parent" in the final round, the first round's
  // lazy data, in a VMA the final dump has as lazy.
  Ranges from_first;
  for (const auto& e : maps[0].entries)
    if ((e.flags & ck::kPageInParent) && !(e.flags & ck::kPagePresent))
      first_round_lazy(maps, 1, e.vaddr, e.end(), from_first);
  const Ranges fill = in_lazy_vmas(from_first, vmas);
  TaskPlan t;
  t.name = name;
  t.pages = page_count(fill);
  t.final_map.pages_id = maps[0].pages_id;
  for (const auto& e : maps[0].entries) {
    if ((e.flags & ck::kPageInParent) && !(e.flags & ck::kPagePresent))
      split(e, fill, [](bool f) { return ck::kPageInParent | (f ? ck::kPageLazy : 0); },
            t.final_map.entries);
    else
      t.final_map.entries.push_back({e.vaddr, e.nr_pages, e.flags & ~ck::kPageLazy});
  }
  const ck::Pagemap& first = maps.back();
  t.view_map.pages_id = first.pages_id;
  for (const auto& e : first.entries) {
    const uint32_t plain = e.flags & ~ck::kPageLazy;
    if (e.flags & ck::kPagePresent)
      split(e, fill, [plain](bool f) { return plain | (f ? ck::kPageLazy : 0); },
            t.view_map.entries);
    else
      t.view_map.entries.push_back({e.vaddr, e.nr_pages, plain});
  }
  t.first_pages = chain.back() + "/pages-" + std::to_string(first.pages_id) + ".img";
  return t;
}

// The final dir and its parents, newest first.
std::vector<std::string> round_chain(const std::string& final_dir) {
  std::vector<std::string> chain{fs::weakly_canonical(final_dir).string()};
  for (;;) {
    fs::path parent = fs::path(chain.back()) / "parent";
    std::error_code ec;
    if (!fs::is_symlink(parent, ec)) break;
    chain.push_back(fs::canonical(parent).string());
    if (chain.size() > 1024) throw Error("a parent chain without end below " + final_dir);
  }
  return chain;
}

// The <id> of a task's pagemap-<id>.img (not pagemap-shmem-<id>.img), or "".
std::string task_pagemap_id(const std::string& n) {
  if (n.rfind("pagemap-", 0) != 0 || n.size() <= 12 || n.substr(n.size() - 4) != ".img") return "";
  std::string id = n.substr(8, n.size() - 12);
  if (id.empty() || !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return "";
  return id;
}

}  // namespace

ParentPagemaps read_parent_pagemaps(const std::string& final_dir) {
  const auto chain = round_chain(final_dir);
  ParentPagemaps p;
  for (size_t i = 1; i < chain.size(); i++)
    for (const auto& ent : fs::directory_iterator(chain[i])) {
      const std::string n = ent.path().filename().string();
      if (!task_pagemap_id(n).empty())
        p.by_path.emplace(chain[i] + "/" + n, ck::read_pagemap(chain[i] + "/" + n));
    }
  return p;
}

FillPlan plan_fill_after_resume(const std::string& final_dir, const std::string& view_dir,
                                uint64_t min_pages, const ParentPagemaps* ahead) {
  const auto chain = round_chain(final_dir);
  if (chain.size() < 2) return {};  // no first round to fill from
  std::vector<TaskPlan> tasks;
  uint64_t pages = 0;
  for (const auto& ent : fs::directory_iterator(chain[0])) {
    const std::string id = task_pagemap_id(ent.path().filename().string());
    if (id.empty()) continue;
    auto t = plan_task(chain, id, ahead);
    if (!t) return {};
    pages += t->pages;
    tasks.push_back(std::move(*t));
  }
  if (pages == 0 || pages < min_pages) return {};
  // The daemon's view: the final round's images but its pagemaps and pages.
  mkdir_p(view_dir, 0700);
  for (const auto& ent : fs::directory_iterator(chain[0])) {
    std::string n = ent.path().filename().string();
    if (n == "parent" || n.rfind("pages-", 0) == 0 || n.rfind("pagemap-", 0) == 0) continue;
    // A name the view has already stays: the FIFO of a daemon started
    // before the images came (CriuLazyPages::Gated), fed by its caller.
    // (One system call a file: this runs in the frozen window.)
    const std::string link = view_dir + "/" + n;
    if (::symlink(ent.path().c_str(), link.c_str()) != 0 && errno != EEXIST)
      throw_errno("symlink " + link);
  }
  for (const auto& t : tasks) {
    ck::write_pagemap(view_dir + "/" + t.name, t.view_map);
    fs::path pages = fs::path(view_dir) / fs::path(t.first_pages).filename();
    if (!fs::exists(fs::symlink_status(pages))) fs::create_symlink(t.first_pages, pages);
  }
  // Last, the restore's own pagemaps: until here the final round is as it
  // arrived.
  for (const auto& t : tasks) ck::write_pagemap(chain[0] + "/" + t.name, t.final_map);
  return FillPlan{pages};
}

}  // namespace crx::migrate
