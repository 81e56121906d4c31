// CRIU's memory images, as far as crx reads and rewrites them: a task's
// pagemap (pagemap-<id>.img: runs of pages, each with where its data is:
// in this dump's pages-<pages_id>.img in order, or in the parent dump) and
// its VMAs (mm-<id>.img). The migration's receiver rewrites the final
// round's pagemaps when it fills the pages after the resume
// (migrate/fill_plan.hpp). Files are CRIU's: two magics, then entries, each
// a u32 length and a protobuf message (criu_memory.proto).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace crx::checkpoint {

// A pagemap entry's flags (CRIU's PE_*).
inline constexpr uint32_t kPageInParent = 1u << 0;  // data in the parent dump
inline constexpr uint32_t kPageLazy = 1u << 1;      // a lazy restore leaves it to userfaultfd
inline constexpr uint32_t kPagePresent = 1u << 2;   // data in this dump's pages image

inline constexpr uint64_t kImagePageSize = 4096;

struct PagemapEntry {
  uint64_t vaddr = 0;
  uint32_t nr_pages = 0;
  uint32_t flags = 0;
  uint64_t end() const { return vaddr + nr_pages * kImagePageSize; }
  bool operator==(const PagemapEntry&) const = default;
};

struct Pagemap {
  uint32_t pages_id = 0;  // the data's file: pages-<pages_id>.img
  std::vector<PagemapEntry> entries;
};

// Throws Error (Cause::Invalid) naming the file for anything but a
// pagemap image; an older image's in_parent reads as kPageInParent.
Pagemap read_pagemap(const std::string& path);
// Replaces path atomically.
void write_pagemap(const std::string& path, const Pagemap& m);

struct Vma {
  uint64_t start = 0, end = 0;
  uint32_t flags = 0;   // mmap flags
  uint32_t status = 0;  // CRIU's VMA_AREA_*
};

// The VMAs of mm-<id>.img, in the image's order (ascending).
std::vector<Vma> read_vmas(const std::string& path);

// Whether a restore with lazy pages registers the VMA with userfaultfd
// (CRIU 3.17's vma_entry_can_be_lazy): private anonymous memory that is
// not locked, huge-TLB, the vDSO or vsyscall.
bool vma_can_be_lazy(const Vma& v);

}  // namespace crx::checkpoint
