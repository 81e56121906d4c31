#include "checkpoint/elf_build_id.hpp"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <mutex>

#include "common/error.hpp"

namespace crx::checkpoint {
namespace {

struct ElfEnd {
  void operator()(Elf* e) const { elf_end(e); }
};

void init_libelf() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (elf_version(EV_CURRENT) == EV_NONE)
      throw Error(std::string("libelf: ") + elf_errmsg(-1), Cause::Unsupported);
  });
}

std::string hex(const unsigned char* p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 0xf];
  }
  return s;
}

}  // namespace

std::optional<std::string> elf_build_id(int fd) {
  unsigned char magic[SELFMAG];
  if (::pread(fd, magic, sizeof magic, 0) != static_cast<ssize_t>(sizeof magic) ||
      std::memcmp(magic, ELFMAG, SELFMAG) != 0)
    return std::nullopt;
  init_libelf();
  std::unique_ptr<Elf, ElfEnd> elf(elf_begin(fd, ELF_C_READ_MMAP, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF)
    throw Error(std::string("libelf: ") + elf_errmsg(-1), Cause::IO);
  size_t phnum = 0;
  if (elf_getphdrnum(elf.get(), &phnum) != 0)
    throw Error(std::string("libelf: program headers: ") + elf_errmsg(-1), Cause::IO);
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf.get(), static_cast<int>(i), &ph) || ph.p_type != PT_NOTE) continue;
    Elf_Data* d = elf_getdata_rawchunk(elf.get(), static_cast<int64_t>(ph.p_offset), ph.p_filesz,
                                       ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
    if (!d) continue;
    GElf_Nhdr nh;
    size_t name_at = 0, desc_at = 0;
    for (size_t at = 0; (at = gelf_getnote(d, at, &nh, &name_at, &desc_at)) > 0;) {
      const auto* base = static_cast<const unsigned char*>(d->d_buf);
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == sizeof ELF_NOTE_GNU &&
          std::memcmp(base + name_at, ELF_NOTE_GNU, sizeof ELF_NOTE_GNU) == 0 && nh.n_descsz > 0)
        return hex(base + desc_at, nh.n_descsz);
    }
  }
  return std::nullopt;
}

}  // namespace crx::checkpoint
