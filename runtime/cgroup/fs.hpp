// File access inside cgroupfs with errors that name the file and the value.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace crx::cgroup::fs {

// One write() of value to dir/file; throws
// "cgroup: write <value> to <dir/file>: <strerror>".
void write(const std::string& dir, const std::string& file, const std::string& value);
// Contents without the trailing newline; throws naming the file.
std::string read(const std::string& dir, const std::string& file);
std::optional<std::string> read_if_exists(const std::string& dir, const std::string& file);
bool exists(const std::string& dir, const std::string& file);
// A number; "max" reads as UINT64_MAX; a missing file as 0.
uint64_t read_u64(const std::string& dir, const std::string& file);
// "key value" lines (memory.stat, cpu.stat, memory.events, ...).
std::map<std::string, uint64_t> read_flat_keyed(const std::string& dir, const std::string& file);
// The same from a file's text; fields that are not numbers are skipped.
std::map<std::string, uint64_t> parse_flat_keyed(const std::string& text);

// rmdir dir and any sub-cgroups below it, deepest first, retrying while
// EBUSY (exiting tasks) until the deadline. Missing dirs are fine.
void remove_dir(const std::string& dir, std::chrono::steady_clock::time_point deadline);

}  // namespace crx::cgroup::fs
