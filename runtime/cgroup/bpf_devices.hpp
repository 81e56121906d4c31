// cgroup v2 device control: an eBPF BPF_PROG_TYPE_CGROUP_DEVICE program
// built from the OCI device rules, hand-assembled and loaded with the raw
// bpf() syscall, as runc and crun do (v2 has no devices.allow file).
//
// Semantics are those of the v1 devices list applied in order: for each
// access bit asked for (mknod, read, write) the last rule that matches the
// device and names that bit decides; no match means allowed (a fresh v1
// cgroup allows everything until a deny rule says otherwise).
#pragma once
#include <linux/bpf.h>

#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace crx::cgroup::bpf {

std::vector<bpf_insn> device_filter(const std::vector<spec::DeviceRule>& rules);

// The same decision in C++: type 'c' or 'b', access a subset of "rwm".
// Reference for tests of device_filter().
bool device_allowed(const std::vector<spec::DeviceRule>& rules, char type, int64_t major,
                    int64_t minor, const std::string& access);

// Loads device_filter(rules) and attaches it to the cgroup2 directory with
// BPF_F_ALLOW_MULTI; device programs attached before (an earlier apply) are
// detached afterwards, so there is no window without a filter. The program
// stays attached after the fd is closed.
void attach_device_filter(const std::string& cgroup_dir, const std::vector<spec::DeviceRule>& rules);

// Ids of the device programs attached to the directory (for tests).
std::vector<uint32_t> attached_device_programs(const std::string& cgroup_dir);

}  // namespace crx::cgroup::bpf
