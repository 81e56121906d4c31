#include "cgroup/bpf_devices.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "common/unique_fd.hpp"

namespace crx::cgroup::bpf {

namespace {

// Registers used by the program: r1 = ctx, r2 = device type, r3 = access
// bits, r4 = major, r5 = minor, r0 = verdict.
constexpr uint8_t R0 = 0, R1 = 1, R2 = 2, R3 = 3, R4 = 4, R5 = 5;

bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  return i;
}

// A tiny assembler with forward labels.
class Assembler {
 public:
  int new_label() {
    labels_.push_back(-1);
    return static_cast<int>(labels_.size()) - 1;
  }
  void bind(int label) { labels_[label] = static_cast<int>(code_.size()); }
  void emit(bpf_insn i) { code_.push_back(i); }
  // Conditional or unconditional jump to label (resolved in finish()).
  void jump(uint8_t code, uint8_t dst, int32_t imm, int label) {
    fixups_.push_back({code_.size(), label});
    emit(insn(code, dst, 0, 0, imm));
  }
  std::vector<bpf_insn> finish() {
    for (auto [at, label] : fixups_)
      code_[at].off = static_cast<int16_t>(labels_[label] - static_cast<int>(at) - 1);
    return std::move(code_);
  }

 private:
  std::vector<bpf_insn> code_;
  std::vector<int> labels_;
  std::vector<std::pair<size_t, int>> fixups_;
};

struct AccessBit {
  char letter;
  int32_t bit;
};
constexpr AccessBit kBits[] = {
    {'m', BPF_DEVCG_ACC_MKNOD}, {'r', BPF_DEVCG_ACC_READ}, {'w', BPF_DEVCG_ACC_WRITE}};

bool has_letter(const spec::DeviceRule& r, char letter) {
  const std::string& a = r.access.empty() ? std::string("rwm") : r.access;
  return a.find(letter) != std::string::npos;
}

bool wildcard(const std::optional<int64_t>& v) { return !v || *v < 0; }

int32_t dev_type(const std::string& t) {
  if (t == "c") return BPF_DEVCG_DEV_CHAR;
  if (t == "b") return BPF_DEVCG_DEV_BLOCK;
  return 0;  // "a": any
}

long sys_bpf(int cmd, bpf_attr* attr) {
  return ::syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

UniqueFd open_dir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("cgroup: open " + dir);
  return fd;
}

std::vector<uint32_t> query(int cg_fd, const std::string& dir) {
  std::vector<uint32_t> ids(64);
  bpf_attr attr{};
  attr.query.target_fd = static_cast<uint32_t>(cg_fd);
  attr.query.attach_type = BPF_CGROUP_DEVICE;
  attr.query.prog_ids = reinterpret_cast<uint64_t>(ids.data());
  attr.query.prog_cnt = static_cast<uint32_t>(ids.size());
  if (sys_bpf(BPF_PROG_QUERY, &attr) < 0) throw_errno("cgroup: query device programs of " + dir);
  ids.resize(attr.query.prog_cnt);
  return ids;
}

UniqueFd load(const std::vector<bpf_insn>& prog, const std::string& dir) {
  static const char license[] = "GPL";
  bpf_attr attr{};
  attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  attr.insns = reinterpret_cast<uint64_t>(prog.data());
  attr.insn_cnt = static_cast<uint32_t>(prog.size());
  attr.license = reinterpret_cast<uint64_t>(license);
  UniqueFd fd(static_cast<int>(sys_bpf(BPF_PROG_LOAD, &attr)));
  if (fd) return fd;
  int err = errno;
  // Load again with the verifier's log so the error says why.
  std::string log(16384, '\0');
  attr.log_level = 1;
  attr.log_buf = reinterpret_cast<uint64_t>(log.data());
  attr.log_size = static_cast<uint32_t>(log.size());
  sys_bpf(BPF_PROG_LOAD, &attr);
  log.resize(std::strlen(log.c_str()));
  while (!log.empty() && log.back() == '\n') log.pop_back();
  auto last_line = log.substr(log.find_last_of('\n') == std::string::npos ? 0 : log.find_last_of('\n') + 1);
  std::string what = "cgroup: load device filter for " + dir;
  if (!last_line.empty()) what += " (verifier: " + last_line + ")";
  throw_errno(what, err);
}

}  // namespace

std::vector<bpf_insn> device_filter(const std::vector<spec::DeviceRule>& rules) {
  Assembler as;
  // r2 = type, r3 = access, r4 = major, r5 = minor (all u32 loads).
  as.emit(insn(BPF_LDX | BPF_W | BPF_MEM, R2, R1, 0, 0));
  as.emit(insn(BPF_ALU64 | BPF_MOV | BPF_X, R3, R2, 0, 0));
  as.emit(insn(BPF_ALU64 | BPF_RSH | BPF_K, R3, 0, 0, 16));
  as.emit(insn(BPF_ALU64 | BPF_AND | BPF_K, R2, 0, 0, 0xffff));
  as.emit(insn(BPF_LDX | BPF_W | BPF_MEM, R4, R1, 4, 0));
  as.emit(insn(BPF_LDX | BPF_W | BPF_MEM, R5, R1, 8, 0));
  int deny = as.new_label();
  bool deny_used = false;  // the verifier rejects unreachable code
  for (const auto& b : kBits) {
    int next_bit = as.new_label();
    int check = as.new_label();
    // Bit not asked for: nothing to decide.
    as.jump(BPF_JMP | BPF_JSET | BPF_K, R3, b.bit, check);
    as.jump(BPF_JMP | BPF_JA, 0, 0, next_bit);
    as.bind(check);
    // Last rule naming this bit wins: walk the rules backwards.
    for (auto it = rules.rbegin(); it != rules.rend(); ++it) {
      if (!has_letter(*it, b.letter)) continue;
      int skip = as.new_label();
      int32_t type = dev_type(it->type);
      if (type) as.jump(BPF_JMP | BPF_JNE | BPF_K, R2, type, skip);
      if (!wildcard(it->major))
        as.jump(BPF_JMP | BPF_JNE | BPF_K, R4, static_cast<int32_t>(*it->major), skip);
      if (!wildcard(it->minor))
        as.jump(BPF_JMP | BPF_JNE | BPF_K, R5, static_cast<int32_t>(*it->minor), skip);
      as.jump(BPF_JMP | BPF_JA, 0, 0, it->allow ? next_bit : deny);
      deny_used = deny_used || !it->allow;
      as.bind(skip);
      // A rule matching every device decides alone; earlier rules would be
      // unreachable code, which the verifier rejects.
      if (!type && wildcard(it->major) && wildcard(it->minor)) break;
    }
    // No rule matched: allowed, like a fresh v1 devices cgroup.
    as.bind(next_bit);
  }
  as.emit(insn(BPF_ALU64 | BPF_MOV | BPF_K, R0, 0, 0, 1));
  as.emit(insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  as.bind(deny);
  if (deny_used) {
    as.emit(insn(BPF_ALU64 | BPF_MOV | BPF_K, R0, 0, 0, 0));
    as.emit(insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  }
  return as.finish();
}

bool device_allowed(const std::vector<spec::DeviceRule>& rules, char type, int64_t major,
                    int64_t minor, const std::string& access) {
  for (char letter : access) {
    bool allowed = true;
    for (auto it = rules.rbegin(); it != rules.rend(); ++it) {
      if (!has_letter(*it, letter)) continue;
      if (dev_type(it->type) && it->type[0] != type) continue;
      if (!wildcard(it->major) && *it->major != major) continue;
      if (!wildcard(it->minor) && *it->minor != minor) continue;
      allowed = it->allow;
      break;
    }
    if (!allowed) return false;
  }
  return true;
}

std::vector<uint32_t> attached_device_programs(const std::string& cgroup_dir) {
  auto cg = open_dir(cgroup_dir);
  return query(cg.get(), cgroup_dir);
}

void attach_device_filter(const std::string& cgroup_dir,
                          const std::vector<spec::DeviceRule>& rules) {
  auto cg = open_dir(cgroup_dir);
  auto old_ids = query(cg.get(), cgroup_dir);
  auto prog = load(device_filter(rules), cgroup_dir);

  bpf_attr attr{};
  attr.target_fd = static_cast<uint32_t>(cg.get());
  attr.attach_bpf_fd = static_cast<uint32_t>(prog.get());
  attr.attach_type = BPF_CGROUP_DEVICE;
  attr.attach_flags = BPF_F_ALLOW_MULTI;
  if (sys_bpf(BPF_PROG_ATTACH, &attr) < 0)
    throw_errno("cgroup: attach device filter to " + cgroup_dir);

  for (uint32_t id : old_ids) {
    bpf_attr get{};
    get.prog_id = id;
    UniqueFd old(static_cast<int>(sys_bpf(BPF_PROG_GET_FD_BY_ID, &get)));
    if (!old) {
      if (errno == ENOENT) continue;  // gone meanwhile
      throw_errno("cgroup: open device program " + std::to_string(id) + " of " + cgroup_dir);
    }
    bpf_attr det{};
    det.target_fd = static_cast<uint32_t>(cg.get());
    det.attach_bpf_fd = static_cast<uint32_t>(old.get());
    det.attach_type = BPF_CGROUP_DEVICE;
    if (sys_bpf(BPF_PROG_DETACH, &det) < 0 && errno != ENOENT)
      throw_errno("cgroup: detach old device program " + std::to_string(id) + " from " +
                  cgroup_dir);
  }
}

}  // namespace crx::cgroup::bpf
