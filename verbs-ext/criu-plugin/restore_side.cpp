#include "restore_side.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "fds.hpp"
#include "ibv_migr.h"
#include "plugin_log.hpp"

extern "C" int criu_get_image_dir(void);

namespace crx::verbs_plugin {
namespace {

// *read_at: when the file had been read (before the decode)
int load_image(uint32_t id, Image* out, double* read_at) {
  std::vector<uint8_t> bytes;
  int err = read_image_file(image_name(id), &bytes);
  if (err) return err;
  *read_at = now_ms();
  std::string why;
  auto img = decode(bytes, &why);
  if (!img) {
    log_error(image_name(id) + ": " + why);
    return -EINVAL;
  }
  *out = std::move(*img);
  return 0;
}

const char* kind_of(uint32_t type) {
  switch (type) {
    case RXE_MIGR_OBJ_PD: return "pd";
    case RXE_MIGR_OBJ_AH: return "ah";
    case RXE_MIGR_OBJ_MR: return "mr";
    case RXE_MIGR_OBJ_CQ: return "cq";
    case RXE_MIGR_OBJ_SRQ: return "srq";
    case RXE_MIGR_OBJ_QP: return "qp";
    case RXE_MIGR_OBJ_COMP_CHANNEL: return "comp_channel";
    default: return "async_event_fd";
  }
}

struct Created {
  uint32_t type;
  void* obj;
  const rxe_migr_rec_hdr* rec;
};

void destroy_all(std::vector<Created>& made) {
  for (auto it = made.rbegin(); it != made.rend(); ++it)
    ibv_migr_destroy_object(it->obj, static_cast<int>(it->type));
  made.clear();
}

}  // namespace

int TaskRestorer::restore_file(uint32_t id) {
  if (!image_file_exists(image_name(id))) return -ENOTSUP;
  LoadTimes times{now_ms()};
  Image img;
  int err = load_image(id, &img, &times.read);
  if (err) return err;
  const ImageKind kind = img.kind;
  const uint32_t evt_type = img.evt_type, evt_handle = img.evt_handle;
  uint32_t ctx_id = kind == ImageKind::Context ? id : img.ctx_id;
  if (!contexts_.count(ctx_id)) {
    // a context's image is loaded once: here, if its own file comes first
    if (kind == ImageKind::Context)
      err = restore_context(ctx_id, std::move(img), times);
    else
      err = restore_context(ctx_id);
    if (err) return err;
  }
  Restored& r = contexts_.at(ctx_id);
  int* fd = nullptr;
  if (kind == ImageKind::Context) {
    fd = &r.cmd_fd;
  } else if (evt_type == RXE_MIGR_OBJ_ASYNC_EVENT) {
    fd = &r.async_fd;
  } else {
    auto it = r.channel_fds.find(evt_handle);
    if (it == r.channel_fds.end()) {
      log_error("file " + std::to_string(id) + ": no completion channel " +
                std::to_string(evt_handle) + " in context " + std::to_string(ctx_id));
      return -ENOENT;
    }
    fd = &it->second;
  }
  if (*fd < 0) {
    log_error("file " + std::to_string(id) + " was restored twice");
    return -EEXIST;
  }
  // CRIU moves it to its number and closes this one
  int out = *fd;
  *fd = -1;
  return out;
}

int TaskRestorer::restore_context(uint32_t ctx_id) {
  LoadTimes times{now_ms()};
  Image img;
  int err = load_image(ctx_id, &img, &times.read);
  if (err) {
    log_error("context " + std::to_string(ctx_id) + ": no image: " + strerror(-err));
    return err;
  }
  if (img.kind != ImageKind::Context) return -EINVAL;
  return restore_context(ctx_id, std::move(img), times);
}

int TaskRestorer::restore_context(uint32_t ctx_id, Image&& img, LoadTimes times) {
  const double t0 = times.start;
  Restored r;
  r.img = std::move(img);
  int err = 0;
  double t_load = now_ms();

  struct ibv_device* dev = nullptr;
  for (int i = 0; i < num_devices_; i++)
    if (r.img.device == ibv_get_device_name(devices_[i])) dev = devices_[i];
  if (!dev && num_devices_ == 1) dev = devices_[0];
  if (!dev) {
    log_error("context " + std::to_string(ctx_id) + ": no RDMA device " + r.img.device +
              " here (" + std::to_string(num_devices_) + " devices)");
    return -ENODEV;
  }
  struct ibv_context* ctx = ibv_open_device(dev);
  if (!ctx) {
    err = errno ? -errno : -ENODEV;
    log_error(std::string("opening ") + ibv_get_device_name(dev) + ": " + strerror(-err));
    return err;
  }
  // out of the way of the fd numbers CRIU is placing
  ctx->cmd_fd = move_high(ctx->cmd_fd);
  ctx->async_fd = move_high(ctx->async_fd);
  if (ctx->cmd_fd < 0 || ctx->async_fd < 0) return ctx->cmd_fd < 0 ? ctx->cmd_fd : ctx->async_fd;
  r.cmd_fd = ctx->cmd_fd;
  r.cdev_path = std::string("/dev/infiniband/") + dev->dev_name;
  // where the time goes: load (read the image, check its CQ windows; of
  // it load_read the file's read), open, create, refill, map
  // (crx-verbs-restore.json)
  double t_open = now_ms();

  const std::vector<uint8_t>& dump = r.img.dump;
  std::map<uint32_t, void*> pds, cqs, srqs;
  std::map<uint32_t, struct ibv_comp_channel*> channels;
  std::map<std::string, uint64_t> objects;
  std::vector<Created> made;
  const rxe_migr_rec_hdr* rec = nullptr;
  while ((rec = ibv_migr_next_record(dump.data(), dump.size(), rec, &err))) {
    struct ibv_restore_args a{};
    a.record = rec;
    const void* body = rec + 1;
    switch (rec->type) {
      case RXE_MIGR_OBJ_ASYNC_EVENT: {
        auto* e = static_cast<const rxe_migr_event_file*>(body);
        if (!(e->flags & RXE_MIGR_EVF_DEFAULT_ASYNC)) {
          log_error("context " + std::to_string(ctx_id) +
                    ": an extra async event file is not restorable");
          destroy_all(made);
          return -EOPNOTSUPP;
        }
        r.async_fd = ctx->async_fd;
        continue;
      }
      case RXE_MIGR_OBJ_COMP_CHANNEL: {
        struct ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
        if (!ch) {
          err = errno ? -errno : -ENOMEM;
          destroy_all(made);
          return err;
        }
        ch->fd = move_high(ch->fd);
        if (ch->fd < 0) {
          destroy_all(made);
          return ch->fd;
        }
        channels[rec->handle] = ch;
        r.channel_fds[rec->handle] = ch->fd;
        objects["comp_channel"]++;
        continue;
      }
      case RXE_MIGR_OBJ_AH:
        a.pd = static_cast<struct ibv_pd*>(pds[static_cast<const rxe_migr_ah*>(body)->pd_handle]);
        break;
      case RXE_MIGR_OBJ_MR:
        a.flags = IBV_MIGR_RESTORE_UNPINNED;
        a.pd = static_cast<struct ibv_pd*>(pds[static_cast<const rxe_migr_mr*>(body)->pd_handle]);
        break;
      case RXE_MIGR_OBJ_CQ: {
        auto* c = static_cast<const rxe_migr_cq*>(body);
        if (c->comp_channel != ~0u) a.channel = channels[c->comp_channel];
        break;
      }
      case RXE_MIGR_OBJ_SRQ:
        a.pd = static_cast<struct ibv_pd*>(pds[static_cast<const rxe_migr_srq*>(body)->pd_handle]);
        break;
      case RXE_MIGR_OBJ_QP: {
        auto* q = static_cast<const rxe_migr_qp*>(body);
        a.pd = static_cast<struct ibv_pd*>(pds[q->pd_handle]);
        a.send_cq = static_cast<struct ibv_cq*>(cqs[q->send_cq_handle]);
        a.recv_cq = static_cast<struct ibv_cq*>(cqs[q->recv_cq_handle]);
        if (q->srq_handle != ~0u) a.srq = static_cast<struct ibv_srq*>(srqs[q->srq_handle]);
        break;
      }
      default:
        break;
    }
    void* obj = nullptr;
    err = ibv_restore_object(ctx, &obj, static_cast<int>(rec->type), IBV_RESTORE_CREATE, &a,
                             sizeof(a));
    if (err) {
      log_error("context " + std::to_string(ctx_id) + ": creating " + kind_of(rec->type) +
                " handle " + std::to_string(rec->handle) + ": " + strerror(-err));
      destroy_all(made);
      return err;
    }
    made.push_back({rec->type, obj, rec});
    objects[kind_of(rec->type)]++;
    if (rec->type == RXE_MIGR_OBJ_PD) pds[rec->handle] = obj;
    if (rec->type == RXE_MIGR_OBJ_CQ) cqs[rec->handle] = obj;
    if (rec->type == RXE_MIGR_OBJ_SRQ) srqs[rec->handle] = obj;
  }
  if (err) {
    log_error("context " + std::to_string(ctx_id) + ": malformed dump");
    destroy_all(made);
    return err;
  }
  double t_create = now_ms();
  for (Created& c : made) {
    struct ibv_restore_args a{};
    a.record = c.rec;
    // the late hook resumes; the process's memory (CRIU's) expects its
    // own pointers in the events
    a.flags = IBV_MIGR_RESTORE_NO_RESUME | IBV_MIGR_RESTORE_USER_HANDLE | IBV_MIGR_RESTORE_EVENT_COUNTS;
    // the image carries each CQ's ring as its live entries (cq_window.hpp)
    if (c.type == RXE_MIGR_OBJ_CQ) a.flags |= IBV_MIGR_RESTORE_CQ_WINDOW;
    err = ibv_restore_object(ctx, &c.obj, static_cast<int>(c.type), IBV_RESTORE_REFILL, &a,
                             sizeof(a));
    if (err) {
      log_error("context " + std::to_string(ctx_id) + ": refilling " + kind_of(c.type) +
                " handle " + std::to_string(c.rec->handle) + ": " + strerror(-err));
      destroy_all(made);
      return err;
    }
  }
  ibv_restore_object(ctx, nullptr, 0, IBV_RESTORE_FINISH, nullptr, 0);
  double t_refill = now_ms();

  for (const QueueMap& q : r.img.queues) {
    uint64_t off = 0, size = 0;
    err = ibv_migr_queue_mmap(ctx, q.which, q.handle, RXE_MIGR_MMAP_AGAIN, &off, &size);
    if (!err && size != q.size) err = -EINVAL;
    if (err) {
      log_error("context " + std::to_string(ctx_id) + ": queue of handle " +
                std::to_string(q.handle) + " cannot be mapped again: " + strerror(-err));
      return err;
    }
    r.offsets[q.offset] = off;
  }

  double t_map = now_ms();
  nlohmann::json j = {{"context", ctx_id},
                      {"objects", objects},
                      {"recreate_ms", t_map - t0},
                      {"parts_ms",
                       {{"load", t_load - t0},
                        {"load_read", times.read - t0},
                        {"open", t_open - t_load},
                        {"create", t_create - t_open},
                        {"refill", t_refill - t_create},
                        {"map", t_map - t_refill}}}};
  std::string s = j.dump() + "\n";
  write_image_file("crx-verbs-restore-ctx-" + std::to_string(ctx_id) + ".json", s.data(),
                   s.size());
  log_info("context " + std::to_string(ctx_id) + " recreated on " +
           ibv_get_device_name(dev) + " in " + std::to_string(now_ms() - t0) + " ms");
  // the libibverbs structures of ctx die with CRIU's memory in this task;
  // the kernel objects live on with the file
  contexts_.emplace(ctx_id, std::move(r));
  return 0;
}

// The restored process's own fd of the context's uverbs file: a uverbs fd
// of this task whose queue offsets are the ones recreated here.
int TaskRestorer::find_task_fd(Restored& r) {
  if (r.task_fd >= 0) return r.task_fd;
  if (r.cmd_fd >= 0) return r.cmd_fd;  // not placed by CRIU (yet)
  if (r.img.queues.empty()) return -ENOENT;
  const QueueMap& q = r.img.queues.front();
  uint64_t want = r.offsets.at(q.offset);
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -errno;
  int found = -ENOENT;
  while (struct dirent* e = readdir(d)) {
    int fd = atoi(e->d_name);
    struct stat st;
    if (e->d_name[0] == '.' || fd == dirfd(d) || fstat(fd, &st) < 0 || !is_uverbs(st)) continue;
    FdContext c(fd);
    uint64_t off = 0, size = 0;
    if (ibv_migr_queue_mmap(&c.ctx, q.which, q.handle, 0, &off, &size) == 0 && off == want) {
      found = fd;
      break;
    }
  }
  closedir(d);
  if (found >= 0) r.task_fd = found;
  return found;
}

void TaskRestorer::close_leftovers(Restored& r) {
  // every file of the process was placed before its mappings: what is
  // left was not open in this task
  if (r.async_fd >= 0) close(r.async_fd);
  r.async_fd = -1;
  for (auto& [handle, fd] : r.channel_fds)
    if (fd >= 0) {
      log_debug("completion channel " + std::to_string(handle) + " not open in this task");
      close(fd);
      fd = -1;
    }
}

int TaskRestorer::update_vma(const char* path, uint64_t old_pgoff, uint64_t* new_pgoff,
                             int* plugin_fd) {
  if (strncmp(path, "/dev/infiniband/uverbs", 22) != 0 &&
      !strstr(path, "/infiniband/uverbs"))
    return -ENOTSUP;
  // CRIU's "pgoff" is the mapping's file offset in bytes (as in
  // /proc/PID/maps), and so is the new one it takes
  uint64_t old_off = old_pgoff;
  Restored* match = nullptr;
  for (auto& [id, r] : contexts_) {
    close_leftovers(r);
    if (!r.offsets.count(old_off)) continue;
    // offsets are unique per device; the path tells two devices apart
    if (!match || r.img.cdev_path == path) match = &r;
  }
  if (!match) {
    log_error(std::string("no restored queue was mapped at offset ") + std::to_string(old_off) +
              " of " + path);
    return -ENOENT;
  }
  int fd = find_task_fd(*match);
  if (fd < 0) {
    log_error(std::string("the uverbs file of ") + path + " is not open in the task");
    return fd;
  }
  *new_pgoff = match->offsets.at(old_off);
  *plugin_fd = fd;
  return 1;
}

namespace {

struct LateStats {
  int contexts = 0;
  uint64_t mrs_pinned = 0;
  uint64_t mr_bytes_pinned = 0;
  uint64_t qps_resumed = 0;
  double cred_ms = 0, pin_ms = 0, resume_ms = 0;
  bool deferred = false;
  bool providers_preloaded = false;
  double init_ms = 0;
};

int pidfd_getfd_copy(int pidfd, int fd) {
  return static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
}

// QPs still waiting for their partner's answer to the resume message
int resuming_qps(int fd) {
  std::vector<uint8_t> buf;
  int err = dump_context_of(fd, IBV_MIGR_DUMP_NO_STOP | IBV_MIGR_DUMP_NO_RINGS, &buf);
  if (err) return err;
  int waiting = 0;
  const rxe_migr_rec_hdr* r = nullptr;
  while ((r = ibv_migr_next_record(buf.data(), buf.size(), r, &err)))
    if (r->type == RXE_MIGR_OBJ_QP &&
        reinterpret_cast<const rxe_migr_qp*>(r + 1)->migr_state == RXE_MIGR_QPS_RESUMING)
      waiting++;
  return err ? err : waiting;
}

int finish_context(int pid, int fd, LateStats* st) {
  FdContext c(fd);
  double t0 = now_ms();
  // every thread of the process may post (a restorer gives each its own cred)
  int err = ibv_migr_adopt_cred(&c.ctx, pid, IBV_MIGR_ADOPT_CRED_THREADS);
  if (err) {
    log_error("pid " + std::to_string(pid) + ": the uverbs file cannot take the task's credentials: " +
              strerror(-err));
    return err;
  }
  double t1 = now_ms();
  st->cred_ms += t1 - t0;

  std::vector<uint8_t> buf;
  err = dump_context_of(fd, IBV_MIGR_DUMP_NO_STOP | IBV_MIGR_DUMP_NO_RINGS, &buf);
  if (err) return err;
  const rxe_migr_rec_hdr* r = nullptr;
  while ((r = ibv_migr_next_record(buf.data(), buf.size(), r, &err))) {
    if (r->type != RXE_MIGR_OBJ_MR) continue;
    auto* mr = reinterpret_cast<const rxe_migr_mr*>(r + 1);
    if (!(mr->flags & RXE_MIGR_MR_UNPINNED)) continue;
    err = ibv_migr_mr_pin(&c.ctx, r->handle);
    if (err) {
      log_error("pid " + std::to_string(pid) + ": pinning MR " + std::to_string(mr->mrn) +
                " (" + std::to_string(mr->length) + " bytes at 0x" + [&] {
                  char b[32];
                  snprintf(b, sizeof(b), "%llx", (unsigned long long)mr->addr);
                  return std::string(b);
                }() + "): " + strerror(-err));
      return err;
    }
    st->mrs_pinned++;
    st->mr_bytes_pinned += mr->length;
  }
  if (err) return err;
  double t2 = now_ms();
  st->pin_ms += t2 - t1;

  const char* defer = getenv("CRX_VERBS_DEFER_RESUME");
  if (defer && strcmp(defer, "1") == 0) {
    st->deferred = true;
    return 0;
  }
  int resumed = ibv_migr_resume_stopped(&c.ctx);
  if (resumed < 0) {
    log_error("pid " + std::to_string(pid) + ": resuming QPs: " + strerror(-resumed));
    return resumed;
  }
  st->qps_resumed += static_cast<uint64_t>(resumed);
  // the partners answer from their kernels: wait (bounded) for the
  // handshakes so that the time is measured, not guessed
  for (int i = 0; i < 2000 && resumed > 0; i++) {
    int w = resuming_qps(fd);
    if (w <= 0) break;
    usleep(1000);
  }
  st->resume_ms += now_ms() - t2;
  return 0;
}

void write_restore_report(const LateStats& st, const std::string& error) {
  nlohmann::json objects = nlohmann::json::object();
  nlohmann::json parts = nlohmann::json::object();
  double recreate_ms = 0;
  DIR* d = nullptr;
  int dir = dup(criu_get_image_dir());
  if (dir >= 0) d = fdopendir(dir);
  if (d) {
    while (struct dirent* e = readdir(d)) {
      if (strncmp(e->d_name, "crx-verbs-restore-ctx-", 22) != 0) continue;
      std::vector<uint8_t> bytes;
      if (read_image_file(e->d_name, &bytes)) continue;
      auto j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
      if (j.is_discarded()) continue;
      recreate_ms += j.value("recreate_ms", 0.0);
      for (auto& [k, v] : j["objects"].items())
        objects[k] = objects.value(k, 0) + v.get<int>();
      if (j.contains("parts_ms") && j["parts_ms"].is_object())
        for (auto& [k, v] : j["parts_ms"].items())
          if (v.is_number()) parts[k] = parts.value(k, 0.0) + v.get<double>();
    }
    closedir(d);
  }
  nlohmann::json j = {{"ok", error.empty()},
                      {"contexts", st.contexts},
                      {"objects", objects},
                      {"recreate_ms", recreate_ms},
                      {"recreate_parts_ms", parts},
                      {"cred_ms", st.cred_ms},
                      {"pin_ms", st.pin_ms},
                      {"mrs_pinned", st.mrs_pinned},
                      {"mr_bytes_pinned", st.mr_bytes_pinned},
                      {"resume_ms", st.resume_ms},
                      {"qps_resumed", st.qps_resumed},
                      {"resume_deferred", st.deferred},
                      {"init_ms", st.init_ms},
                      {"providers_preloaded", st.providers_preloaded}};
  if (!error.empty()) j["error"] = error;
  std::string s = j.dump() + "\n";
  write_image_file("crx-verbs-restore.json", s.data(), s.size());
}

LateStats g_late;

}  // namespace

void record_plugin_init(bool providers_preloaded, double init_ms) {
  g_late.providers_preloaded = providers_preloaded;
  g_late.init_ms = init_ms;
}

int late_resume(int pid) {
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (!d) return -errno;
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    int err = -errno;
    closedir(d);
    return err;
  }
  int err = 0;
  std::string error;
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, 0) < 0 || !is_uverbs(st)) continue;
    int copy = pidfd_getfd_copy(pidfd, atoi(e->d_name));
    if (copy < 0) {
      err = -errno;
      error = "pid " + std::to_string(pid) + ": no copy of fd " + e->d_name + ": " + strerror(errno);
      break;
    }
    g_late.contexts++;
    err = finish_context(pid, copy, &g_late);
    close(copy);
    if (err) {
      error = "pid " + std::to_string(pid) + ", fd " + e->d_name + ": " + strerror(-err);
      break;
    }
  }
  closedir(d);
  close(pidfd);
  if (!err && !g_late.contexts) return 0;  // no verbs in this process
  if (err) {
    // CRIU cannot fail a restore from this hook: the process must not run
    // with unpinned MRs or stopped QPs, so it dies and the report says why
    log_error(error + ": killing the restored process");
    kill(pid, SIGKILL);
  }
  write_restore_report(g_late, error);
  return err;
}

}  // namespace crx::verbs_plugin
