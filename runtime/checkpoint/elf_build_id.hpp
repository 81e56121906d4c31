// The GNU build-id of an ELF file: what CRIU's default file validation
// (`--file-validation buildid`, criu/files-reg.c) stores at the dump for
// every regular file the tasks map or hold open and compares at the
// restore, so that a task is not restored onto a different library at the
// same path. crx reads the same note before the freeze
// (runtime/migrate/README.md, "Libraries checked before the freeze").
#pragma once
#include <optional>
#include <string>

namespace crx::checkpoint {

// The NT_GNU_BUILD_ID note of the ELF file open at fd, as lowercase hex;
// nullopt when the file is not ELF or has no such note (CRIU then
// validates its size only). Reads through libelf from the file's start;
// the fd's offset is not used. Throws Error (Cause::IO) only when libelf
// cannot read a file that says it is ELF.
std::optional<std::string> elf_build_id(int fd);

}  // namespace crx::checkpoint
