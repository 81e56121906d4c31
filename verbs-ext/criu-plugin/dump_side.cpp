#include "dump_side.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "fds.hpp"
#include "ibv_migr.h"
#include "plugin_log.hpp"

namespace crx::verbs_plugin {
namespace {

const char* type_name(uint32_t type) {
  switch (type) {
    case RXE_MIGR_OBJ_PD: return "pd";
    case RXE_MIGR_OBJ_AH: return "ah";
    case RXE_MIGR_OBJ_MR: return "mr";
    case RXE_MIGR_OBJ_CQ: return "cq";
    case RXE_MIGR_OBJ_SRQ: return "srq";
    case RXE_MIGR_OBJ_QP: return "qp";
    case RXE_MIGR_OBJ_ASYNC_EVENT: return "async_event_fd";
    case RXE_MIGR_OBJ_COMP_CHANNEL: return "comp_channel";
    default: return "unknown";
  }
}

// The queues of one record whose buffers the process has mapped.
void queues_of(const rxe_migr_rec_hdr* r, std::vector<QueueMap>* out) {
  switch (r->type) {
    case RXE_MIGR_OBJ_CQ: out->push_back({RXE_MIGR_Q_CQ, r->handle, 0, 0}); break;
    case RXE_MIGR_OBJ_SRQ: out->push_back({RXE_MIGR_Q_SRQ, r->handle, 0, 0}); break;
    case RXE_MIGR_OBJ_QP: {
      auto* q = reinterpret_cast<const rxe_migr_qp*>(r + 1);
      out->push_back({RXE_MIGR_Q_SQ, r->handle, 0, 0});
      if (q->srq_handle == ~0u) out->push_back({RXE_MIGR_Q_RQ, r->handle, 0, 0});
      break;
    }
    default: break;
  }
}

}  // namespace

int Dumper::handle_device_vma(const struct stat& st) { return is_uverbs(st) ? 0 : -ENOTSUP; }

int Dumper::dump_file(int fd, uint32_t id) {
  struct stat st;
  if (fstat(fd, &st) < 0) return -errno;
  if (is_uverbs(st)) {
    int err = dump_context(fd, id);
    if (err) return err;
    // event fds seen before their context
    for (auto it = pending_.begin(); it != pending_.end();) {
      int r = identify_event(it->fd, it->id);
      if (r < 0) return r;
      if (r == 1) {
        close(it->fd);
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    return 0;
  }
  if (!is_event_file(fd)) return -ENOTSUP;
  int r = identify_event(fd, id);
  if (r < 0) return r;
  if (r == 0) {
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return -errno;
    pending_.push_back({id, copy});
    log_debug("event file " + std::to_string(id) + " waits for its context");
  }
  return 0;
}

int Dumper::dump_context(int fd, uint32_t id) {
  struct stat st;
  if (fstat(fd, &st) < 0) return -errno;
  FdContext c(fd);
  double t0 = now_ms();
  std::vector<uint8_t> dump;
  int count = 0;
  // the CQs' rings as their live entries: the kernel copies no more
  int err = dump_context_of(fd, IBV_MIGR_DUMP_CQ_WINDOWS, &dump, &count);
  if (err) {
    log_error("ibv_dump_context of file " + std::to_string(id) + ": " + strerror(-err));
    return err;
  }
  const size_t n = dump.size();
  dump_ms_ += now_ms() - t0;

  Image img;
  img.kind = ImageKind::Context;
  img.ctx_id = id;
  img.device = ibdev_of(st);
  img.cdev_path = fd_path(fd);
  const rxe_migr_rec_hdr* r = nullptr;
  while ((r = ibv_migr_next_record(dump.data(), dump.size(), r, &err))) {
    objects_[type_name(r->type)]++;
    if (r->type == RXE_MIGR_OBJ_MR) {
      auto* mr = reinterpret_cast<const rxe_migr_mr*>(r + 1);
      mr_bytes_ += mr->length;
    }
    if (r->type == RXE_MIGR_OBJ_QP) {
      auto* qp = reinterpret_cast<const rxe_migr_qp*>(r + 1);
      if (qp->resp_has_wqe) receives_in_progress_++;
      responder_resources_ += qp->resp_res_count;
    }
    if (r->type == RXE_MIGR_OBJ_CQ) {
      const rxe_migr_queue& q = reinterpret_cast<const rxe_migr_cq*>(r + 1)->queue;
      if (q.num_elem) completions_ += (q.producer - q.consumer) & (q.num_elem - 1);
    }
    queues_of(r, &img.queues);
  }
  if (err) {
    log_error("dump of file " + std::to_string(id) + " is malformed");
    return err;
  }
  for (QueueMap& q : img.queues) {
    err = ibv_migr_queue_mmap(&c.ctx, q.which, q.handle, 0, &q.offset, &q.size);
    if (err) {
      log_error("queue mmap offset of handle " + std::to_string(q.handle) + ": " +
                strerror(-err));
      return err;
    }
  }
  img.dump = std::move(dump);
  std::string why;
  auto bytes = encode(img, &why);
  if (!bytes) {
    log_error("image of file " + std::to_string(id) + ": " + why);
    return -EINVAL;
  }
  err = write_image_file(image_name(id), bytes->data(), bytes->size());
  if (err) {
    log_error("writing " + image_name(id) + ": " + strerror(-err));
    return err;
  }
  image_bytes_ += bytes->size();
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return -errno;
  contexts_.push_back({id, copy});
  log_info("context " + std::to_string(id) + " on " + img.device + ": " +
           std::to_string(count) + " objects, " + std::to_string(img.queues.size()) +
           " mapped queues, " + std::to_string(n) + " bytes dumped, " +
           std::to_string(bytes->size()) + " in the image");
  return 0;
}

int Dumper::identify_event(int fd, uint32_t id) {
  for (const Context& ctx : contexts_) {
    FdContext c(ctx.fd);
    struct ibv_migr_fd_info info{};
    int err = ibv_migr_identify_fd(&c.ctx, fd, &info);
    if (err) return err;
    if (!info.type) continue;
    Image img;
    img.kind = ImageKind::Event;
    img.ctx_id = ctx.id;
    img.evt_type = info.type;
    img.evt_handle = info.handle;
    std::string why;
    auto bytes = encode(img, &why);
    if (!bytes) return -EINVAL;  // an event image has no dump to refuse
    err = write_image_file(image_name(id), bytes->data(), bytes->size());
    if (err) return err;
    return 1;
  }
  return 0;
}

void Dumper::write_stats() {
  nlohmann::json j = {{"contexts", contexts_.size()},
                      {"objects", objects_},
                      {"mr_bytes", mr_bytes_},
                      {"receives_in_progress", receives_in_progress_},
                      {"responder_resources", responder_resources_},
                      {"completions", completions_},
                      {"image_bytes", image_bytes_},
                      {"dump_ms", dump_ms_}};
  std::string s = j.dump() + "\n";
  int err = write_image_file("crx-verbs-dump.json", s.data(), s.size());
  if (err) log_error(std::string("writing crx-verbs-dump.json: ") + strerror(-err));
}

void Dumper::finish(int ret) {
  for (const PendingEvent& p : pending_) {
    log_error("event file " + std::to_string(p.id) +
              " belongs to no dumped verbs context: the restore will fail");
    close(p.fd);
  }
  pending_.clear();
  if (!contexts_.empty()) write_stats();
  for (const Context& ctx : contexts_) {
    if (ret) {
      FdContext c(ctx.fd);
      int n = ibv_migr_resume_stopped(&c.ctx);
      if (n < 0)
        log_error("resuming the QPs of context " + std::to_string(ctx.id) + ": " +
                  strerror(-n));
      else
        log_info("dump failed: resumed " + std::to_string(n) + " QPs of context " +
                 std::to_string(ctx.id));
    }
    close(ctx.fd);
  }
  contexts_.clear();
}

}  // namespace crx::verbs_plugin
