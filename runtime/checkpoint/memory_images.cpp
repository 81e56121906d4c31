#include "checkpoint/memory_images.hpp"

#include <sys/mman.h>

#include "checkpoint/criu_image_reader.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "criu-rpc/criu_memory.pb-c.h"

namespace crx::checkpoint {
namespace {

// CRIU's VMA_AREA_* (criu/include/image.h).
constexpr uint32_t kVmaVsyscall = 1u << 2, kVmaVdso = 1u << 3;

void append_u32(std::string& out, uint32_t v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <class Msg, size_t (*Size)(const Msg*), size_t (*Pack)(const Msg*, uint8_t*)>
void append_entry(std::string& out, const Msg& m) {
  size_t n = Size(&m);
  append_u32(out, static_cast<uint32_t>(n));
  size_t at = out.size();
  out.resize(at + n);
  Pack(&m, reinterpret_cast<uint8_t*>(out.data() + at));
}

}  // namespace

Pagemap read_pagemap(const std::string& path) {
  CriuImageReader r(path, kPagemapMagic);
  const uint8_t* msg;
  size_t len;
  if (!r.next(&msg, &len)) r.bad("no head");
  CrxPagemapHead* head = crx_pagemap_head__unpack(nullptr, len, msg);
  if (!head) r.bad("its head does not parse");
  Pagemap m;
  m.pages_id = head->pages_id;
  crx_pagemap_head__free_unpacked(head, nullptr);
  while (r.next(&msg, &len)) {
    CrxPagemapEntry* e = crx_pagemap_entry__unpack(nullptr, len, msg);
    if (!e) r.bad("entry " + std::to_string(m.entries.size()) + " does not parse");
    uint32_t flags = e->has_flags ? e->flags
                     : (e->has_in_parent && e->in_parent) ? kPageInParent
                                                          : kPagePresent;
    m.entries.push_back(PagemapEntry{e->vaddr, e->nr_pages, flags});
    crx_pagemap_entry__free_unpacked(e, nullptr);
  }
  return m;
}

void write_pagemap(const std::string& path, const Pagemap& m) {
  std::string out;
  append_u32(out, kImageCommonMagic);
  append_u32(out, kPagemapMagic);
  CrxPagemapHead head = CRX_PAGEMAP_HEAD__INIT;
  head.pages_id = m.pages_id;
  append_entry<CrxPagemapHead, crx_pagemap_head__get_packed_size, crx_pagemap_head__pack>(out, head);
  for (const auto& e : m.entries) {
    CrxPagemapEntry pe = CRX_PAGEMAP_ENTRY__INIT;
    pe.vaddr = e.vaddr;
    pe.nr_pages = e.nr_pages;
    pe.has_flags = true;
    pe.flags = e.flags;
    append_entry<CrxPagemapEntry, crx_pagemap_entry__get_packed_size, crx_pagemap_entry__pack>(out,
                                                                                              pe);
  }
  write_file_atomic(path, out, 0600);
}

std::vector<Vma> read_vmas(const std::string& path) {
  CriuImageReader r(path, kMmMagic);
  const uint8_t* msg;
  size_t len;
  if (!r.next(&msg, &len)) r.bad("no mm entry");
  CrxMmEntry* mm = crx_mm_entry__unpack(nullptr, len, msg);
  if (!mm) r.bad("its mm entry does not parse");
  std::vector<Vma> out;
  for (size_t i = 0; i < mm->n_vmas; i++) {
    const CrxVmaEntry* v = mm->vmas[i];
    out.push_back(Vma{v->start, v->end, v->flags, v->status});
  }
  crx_mm_entry__free_unpacked(mm, nullptr);
  return out;
}

bool vma_can_be_lazy(const Vma& v) {
  return (v.flags & MAP_ANONYMOUS) && (v.flags & MAP_PRIVATE) && !(v.flags & MAP_LOCKED) &&
         !(v.flags & MAP_HUGETLB) && (v.status & kVmaVdso) != kVmaVdso &&
         (v.status & kVmaVsyscall) != kVmaVsyscall;
}

}  // namespace crx::checkpoint
