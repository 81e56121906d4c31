// linux.sysctl: validation (parent, before clone) and writing (container
// child, after its /proc is mounted and namespaces are in place).
// Only namespaced keys are accepted, with runc's rules:
//   kernel.msgmax/msgmnb/msgmni/sem/shmall/shmmax/shmmni/shm_rmid_forced and
//   fs.mqueue.*      need a new ipc namespace
//   net.*            need a network namespace other than crx's own
//   kernel.domainname needs a new uts namespace; kernel.hostname is refused
//                    (the OCI "hostname" field sets it)
// Keys may use '/' as separator (sysctl(8) style: "net/ipv4/conf/eth0.100/
// forwarding"), where dots are part of names.
#pragma once
#include <map>
#include <string>

#include "spec/spec.hpp"

namespace crx::linux_ {

// Throws crx::Error naming the first key that is not allowed.
void validate_sysctls(const spec::Linux& linux_config);
// Writes each value to /proc/sys/<key>; errors name the key.
void apply_sysctls(const std::map<std::string, std::string>& sysctl);

// "net.ipv4.ip_forward" -> "/proc/sys/net/ipv4/ip_forward";
// "net/ipv4/conf/eth0.100/forwarding" -> "/proc/sys/net/ipv4/conf/eth0.100/forwarding".
std::string sysctl_path(const std::string& key);
// The dotted name of a key in either form ("net/a.b/c" -> "net.a/b.c").
std::string sysctl_dotted(const std::string& key);

// Writes a value into an existing /proc file (no O_CREAT / O_TRUNC).
void write_proc_file(const std::string& path, const std::string& value);

}  // namespace crx::linux_
