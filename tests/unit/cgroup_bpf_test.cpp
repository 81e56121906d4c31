// The v2 device filter: the hand-assembled eBPF program is run here by a
// small interpreter and must decide exactly like the rule semantics.
#include <gtest/gtest.h>

#include "cgroup/cgroup.hpp"
#include "cgroup/bpf_devices.hpp"

namespace bpf = crx::cgroup::bpf;
using crx::spec::DeviceRule;

namespace {

// Runs a BPF_PROG_TYPE_CGROUP_DEVICE program on one request; fails the
// test on an instruction the filter is not supposed to use.
int run(const std::vector<bpf_insn>& prog, char type, uint32_t major, uint32_t minor,
        const std::string& access) {
  bpf_cgroup_dev_ctx ctx{};
  uint32_t acc = 0;
  for (char c : access)
    acc |= c == 'm' ? BPF_DEVCG_ACC_MKNOD : c == 'r' ? BPF_DEVCG_ACC_READ : BPF_DEVCG_ACC_WRITE;
  ctx.access_type = (acc << 16) | (type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR);
  ctx.major = major;
  ctx.minor = minor;
  uint64_t r[11] = {};
  size_t pc = 0;
  for (int steps = 0; steps < 100000; ++steps) {
    if (pc >= prog.size()) {
      ADD_FAILURE() << "fell off the program at " << pc;
      return -1;
    }
    const bpf_insn& i = prog[pc++];
    uint64_t imm = static_cast<uint64_t>(static_cast<int64_t>(i.imm));
    switch (i.code) {
      case BPF_LDX | BPF_W | BPF_MEM: {
        EXPECT_EQ(i.src_reg, 1);
        uint32_t v;
        std::memcpy(&v, reinterpret_cast<const char*>(&ctx) + i.off, 4);
        r[i.dst_reg] = v;
        break;
      }
      case BPF_ALU64 | BPF_MOV | BPF_X: r[i.dst_reg] = r[i.src_reg]; break;
      case BPF_ALU64 | BPF_MOV | BPF_K: r[i.dst_reg] = imm; break;
      case BPF_ALU64 | BPF_RSH | BPF_K: r[i.dst_reg] >>= imm; break;
      case BPF_ALU64 | BPF_AND | BPF_K: r[i.dst_reg] &= imm; break;
      case BPF_JMP | BPF_JA: pc += i.off; break;
      case BPF_JMP | BPF_JSET | BPF_K:
        if (r[i.dst_reg] & imm) pc += i.off;
        break;
      case BPF_JMP | BPF_JNE | BPF_K:
        if (r[i.dst_reg] != imm) pc += i.off;
        break;
      case BPF_JMP | BPF_EXIT: return static_cast<int>(r[0]);
      default:
        ADD_FAILURE() << "unexpected opcode " << int(i.code);
        return -1;
    }
  }
  ADD_FAILURE() << "no exit";
  return -1;
}

DeviceRule rule(bool allow, const char* type, std::optional<int64_t> major,
                std::optional<int64_t> minor, const char* access) {
  DeviceRule r;
  r.allow = allow;
  r.type = type;
  r.major = major;
  r.minor = minor;
  r.access = access;
  return r;
}

std::vector<DeviceRule> runc_like() {
  std::vector<DeviceRule> rules{rule(false, "a", std::nullopt, std::nullopt, "rwm")};
  for (auto& r : crx::cgroup::default_device_rules()) rules.push_back(r);
  return rules;
}

TEST(CgroupBpf, SemanticsOfTheUsualRuleList) {
  auto rules = runc_like();
  EXPECT_TRUE(bpf::device_allowed(rules, 'c', 1, 3, "rw"));   // /dev/null
  EXPECT_TRUE(bpf::device_allowed(rules, 'c', 136, 7, "rw"));  // a pty
  EXPECT_FALSE(bpf::device_allowed(rules, 'b', 8, 0, "r"));   // /dev/sda
  EXPECT_TRUE(bpf::device_allowed(rules, 'b', 8, 0, "m"));    // mknod only
  EXPECT_FALSE(bpf::device_allowed(rules, 'b', 8, 0, "rm"));
  EXPECT_FALSE(bpf::device_allowed(rules, 'c', 10, 229, "rw"));  // /dev/fuse
}

TEST(CgroupBpf, LaterDenyOfOneBitWins) {
  auto rules = runc_like();
  rules.push_back(rule(false, "c", 1, 3, "w"));
  EXPECT_TRUE(bpf::device_allowed(rules, 'c', 1, 3, "r"));
  EXPECT_FALSE(bpf::device_allowed(rules, 'c', 1, 3, "rw"));
  EXPECT_FALSE(bpf::device_allowed(rules, 'c', 1, 3, "w"));
}

TEST(CgroupBpf, NoRulesAllowEverything) {
  EXPECT_TRUE(bpf::device_allowed({}, 'b', 8, 0, "rwm"));
  EXPECT_EQ(run(bpf::device_filter({}), 'b', 8, 0, "rwm"), 1);
}

TEST(CgroupBpf, ProgramAgreesWithSemanticsOnAGrid) {
  std::vector<std::vector<DeviceRule>> lists = {
      runc_like(),
      {rule(false, "a", std::nullopt, std::nullopt, "rwm"), rule(true, "c", 1, std::nullopt, "r"),
       rule(true, "c", std::nullopt, 3, "w"), rule(false, "c", 1, 5, "rwm")},
      {rule(false, "b", std::nullopt, std::nullopt, "w"), rule(true, "b", 8, 1, "w")},
      {rule(true, "a", std::nullopt, std::nullopt, "m"), rule(false, "c", 5, 0, "")},
  };
  const char* accesses[] = {"m", "r", "w", "rw", "rm", "wm", "rwm"};
  for (size_t l = 0; l < lists.size(); ++l) {
    auto prog = bpf::device_filter(lists[l]);
    for (char type : {'c', 'b'})
      for (uint32_t major : {1u, 5u, 8u, 136u, 10u})
        for (uint32_t minor : {0u, 1u, 3u, 5u, 229u})
          for (const char* acc : accesses) {
            bool want = bpf::device_allowed(lists[l], type, major, minor, acc);
            EXPECT_EQ(run(prog, type, major, minor, acc), want ? 1 : 0)
                << "list " << l << ": " << type << " " << major << ":" << minor << " " << acc;
          }
  }
}

}  // namespace
