// Run-time options of the sanitizer build's crx, crx-migrate and unit and
// host test binaries (tests/sanitizer/README.md): the sanitizer runtimes
// call these before main(). ASAN_OPTIONS and UBSAN_OPTIONS still override
// them; ctest adds log_path (where reports go) in ASAN_OPTIONS.
//
// - detect_leaks=1: LeakSanitizer at every exit() of these programs
//   (ASan's default on x86_64, spelled out because the suites rely on it).
// - detect_stack_use_after_return=1: a pointer to a returned frame's stack
//   is caught; off by default in clang 14.
// - check_initialization_order, strict_init_order: a global initialised
//   from another file's global that is not initialised yet.
// - strict_string_checks: the whole string passed to strchr, strtol and
//   friends must be NUL-terminated, not just the part they read.
// - UBSan print_stacktrace: where the undefined operation was called from,
//   not only the line (often a nlohmann or std header) it happened on.
// UBSan is fatal at its first report (-fno-sanitize-recover=all), ASan's
// halt_on_error is its default.

extern "C" const char* __asan_default_options() {
  return "detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1"
         ":strict_init_order=1:strict_string_checks=1";
}

extern "C" const char* __ubsan_default_options() { return "print_stacktrace=1"; }
