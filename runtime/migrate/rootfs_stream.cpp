#include "migrate/rootfs_stream.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>

#include "common/child_process.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/retry_eintr.hpp"
#include "common/unique_fd.hpp"
#include "migrate/auth.hpp"

namespace crx::migrate {
namespace {

constexpr size_t kChunk = 1024 * 1024;

struct Pipe {
  UniqueFd read, write;
  Pipe() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw_errno("pipe");
    read.reset(p[0]);
    write.reset(p[1]);
  }
};

void check_tar(ChildProcess& tar, const std::string& what) {
  int status = tar.wait();
  if (status != 0) throw Error(what + ": tar " + describe_wait_status(status));
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr))
    throw Error("sha256 failed in OpenSSL");
  return to_hex(std::string_view(reinterpret_cast<char*>(md), len));
}

std::string sha256_file(const std::string& path) { return sha256_hex(read_file(path)); }

uint64_t send_bundle(FrameConn& conn, const std::string& bundle_dir) {
  Pipe out;
  auto tar = spawn({"tar", "--numeric-owner", "--xattrs", "-C", bundle_dir, "-cf", "-", "config.json",
                    "rootfs"},
                   {.stdout_fd = out.write.get()});
  out.write.reset();
  std::string buf(kChunk, '\0');
  uint64_t total = 0;
  for (;;) {
    ssize_t n = retry_eintr([&] { return ::read(out.read.get(), buf.data(), buf.size()); });
    if (n < 0) throw_errno("read tar of " + bundle_dir);
    if (n == 0) break;
    conn.send(FrameType::RootfsData, std::string_view(buf.data(), n));
    total += static_cast<uint64_t>(n);
  }
  check_tar(tar, "pack bundle " + bundle_dir);
  conn.send(FrameType::RootfsEnd, std::to_string(total));
  return total;
}

uint64_t receive_bundle(FrameConn& conn, const std::string& dest_dir) {
  if (path_exists(dest_dir + "/config.json")) {
    throw Error("bundle " + dest_dir + " already exists on the destination");
  }
  mkdir_p(dest_dir, 0711);
  Pipe in;
  auto tar = spawn({"tar", "--numeric-owner", "--xattrs", "-C", dest_dir, "-xf", "-"},
                   {.stdin_fd = in.read.get()});
  in.read.reset();
  uint64_t total = 0;
  for (;;) {
    Frame f = conn.receive();
    if (f.type == FrameType::RootfsEnd) {
      if (f.payload != std::to_string(total)) {
        throw Error("rootfs stream cut: got " + std::to_string(total) + " bytes, sender sent " +
                    f.payload);
      }
      break;
    }
    if (f.type == FrameType::Error || f.type == FrameType::Abort) {
      throw Error("sender aborted while sending the rootfs: " + f.payload);
    }
    if (f.type != FrameType::RootfsData) {
      throw Error("unexpected " + std::string(frame_type_name(f.type)) + " frame in rootfs stream");
    }
    std::string_view d = f.payload;
    while (!d.empty()) {
      ssize_t n = retry_eintr([&] { return ::write(in.write.get(), d.data(), d.size()); });
      if (n < 0) throw_errno("unpack rootfs into " + dest_dir);
      d.remove_prefix(static_cast<size_t>(n));
    }
    total += f.payload.size();
  }
  in.write.reset();
  check_tar(tar, "unpack bundle into " + dest_dir);
  return total;
}

}  // namespace crx::migrate
