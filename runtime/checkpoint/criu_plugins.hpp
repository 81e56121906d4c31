// Where CRIU finds crx's plugins (crx_ibverbs.so): CRIU's RPC has no libdir
// field, so crx writes a CRIU config file with one line, `libdir <dir>`,
// into the work dir of every dump, pre-dump and restore and names it in
// criu_opts.config_file (criu_rpc.cpp). <dir> is, in this order:
//   $CRX_CRIU_LIBDIR if set (empty: none, CRIU's default);
//   <dir of the running executable>/criu-plugins     (the build dir)
//   <dir of the running executable>/../lib/crx/criu-plugins  (installed)
// whichever exists; else no config file, and CRIU looks in its default
// /usr/lib/criu (where a packaged plugin goes). The directory must hold
// CRIU plugins only: CRIU loads every .so in it.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace crx::checkpoint {

inline constexpr const char* kCriuLibdirEnv = "CRX_CRIU_LIBDIR";
inline constexpr const char* kCriuConfigName = "crx-criu.conf";

// The rule above, with its inputs given (env: nullptr when unset).
std::string choose_criu_plugin_dir(const char* env, const std::string& exe_dir,
                                   const std::function<bool(const std::string&)>& is_dir);
// The rule for this process ("" = CRIU's default).
std::string criu_plugin_dir();

// The verbs plugin's file in the directory CRIU loads plugins from (CRIU's
// default when criu_plugin_dir() is ""); it need not exist.
inline constexpr const char* kVerbsPluginName = "crx_ibverbs.so";
inline constexpr const char* kCriuDefaultLibdir = "/usr/lib/criu";
std::string verbs_plugin_path();

// For a dump or restore that needs no plugin (CommonOptions::plugins
// false): an empty directory made (or found) in dir_fd, by the path CRIU
// opens it through (/proc/<our pid>/fd/<dir_fd>/kNoPluginsDir). Not
// leaving the libdir out: CRIU would then load whatever its default dir
// holds. Throws Error (with errno) when it cannot be made.
inline constexpr const char* kNoPluginsDir = "crx-no-plugins";
std::string make_no_plugins_dir(int dir_fd);

// Writes `libdir <libdir>` (none when libdir is "") and the lines of
// `more` (CRIU's config syntax: "option value") as kCriuConfigName into
// the directory dir_fd (ours) and returns the path CRIU opens it by:
// /proc/<our pid>/fd/<dir_fd>/… Throws Error (with errno) when it cannot
// be written.
std::string write_criu_config(int dir_fd, const std::string& libdir,
                              const std::vector<std::string>& more = {});

}  // namespace crx::checkpoint
