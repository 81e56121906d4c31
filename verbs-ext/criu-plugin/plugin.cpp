// crx_ibverbs: CRIU 3.17 plugin for processes holding InfiniBand verbs
// objects of crx's patched rdma_rxe. The hooks only dispatch; the work is
// in dump_side.* and restore_side.* (README.md says why it is done so).
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

extern "C" {
#include <criu/criu-plugin.h>
}

#include "dump_side.hpp"
#include "fds.hpp"
#include "plugin_log.hpp"
#include "restore_side.hpp"

using namespace crx::verbs_plugin;

namespace {

std::unique_ptr<Dumper> g_dumper;
std::unique_ptr<TaskRestorer> g_restorer;
struct ibv_device** g_devices;
bool g_providers_preloaded;

// crx preloads this file into a `criu swrk` it starts ahead of a
// migration's images (LD_PRELOAD, with CRX_VERBS_PRELOAD=1): libibverbs'
// providers are loaded here, while pre-copy runs, rather than by
// plugin_init in the frozen window (ibv_get_device_list's first call
// dlopens every provider; later calls find them loaded). CRIU's own
// dlopen of this file then finds it loaded. Neither variable reaches
// what CRIU executes.
__attribute__((constructor)) void preload_providers() {
  const char* v = std::getenv("CRX_VERBS_PRELOAD");
  if (!v || std::strcmp(v, "1") != 0) return;
  unsetenv("CRX_VERBS_PRELOAD");
  unsetenv("LD_PRELOAD");
  int n = 0;
  if (struct ibv_device** list = ibv_get_device_list(&n)) {
    ibv_free_device_list(list);
    g_providers_preloaded = true;
  }
}

int plugin_init(int stage) {
  if (stage == CR_PLUGIN_STAGE__DUMP || stage == CR_PLUGIN_STAGE__PRE_DUMP) {
    g_dumper = std::make_unique<Dumper>();
  } else if (stage == CR_PLUGIN_STAGE__RESTORE) {
    int n = 0;
    double t0 = now_ms();
    g_devices = ibv_get_device_list(&n);  // loads the providers, unless preloaded
    record_plugin_init(g_providers_preloaded, now_ms() - t0);
    g_restorer = std::make_unique<TaskRestorer>(g_devices, g_devices ? n : 0);
  }
  return 0;
}

void plugin_fini(int stage, int ret) {
  if (g_dumper && (stage == CR_PLUGIN_STAGE__DUMP || stage == CR_PLUGIN_STAGE__PRE_DUMP))
    g_dumper->finish(ret);
  g_dumper.reset();
  g_restorer.reset();
  if (g_devices) ibv_free_device_list(g_devices);
  g_devices = nullptr;
}

int handle_device_vma(int fd, const struct stat* st) {
  (void)fd;
  return g_dumper ? g_dumper->handle_device_vma(*st) : -ENOTSUP;
}

int dump_ext_file(int fd, int id) {
  return g_dumper ? g_dumper->dump_file(fd, static_cast<uint32_t>(id)) : -ENOTSUP;
}

int restore_ext_file(int id) {
  return g_restorer ? g_restorer->restore_file(static_cast<uint32_t>(id)) : -ENOTSUP;
}

int update_vma_map(const char* path, const uint64_t addr, const uint64_t old_pgoff,
                   uint64_t* new_pgoff, int* plugin_fd) {
  (void)addr;
  return g_restorer ? g_restorer->update_vma(path, old_pgoff, new_pgoff, plugin_fd) : -ENOTSUP;
}

int resume_devices_late(int pid) { return late_resume(pid); }

}  // namespace

CR_PLUGIN_REGISTER("crx_ibverbs", plugin_init, plugin_fini)
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA, handle_device_vma)
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__DUMP_EXT_FILE, dump_ext_file)
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__RESTORE_EXT_FILE, restore_ext_file)
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__UPDATE_VMA_MAP, update_vma_map)
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__RESUME_DEVICES_LATE, resume_devices_late)
