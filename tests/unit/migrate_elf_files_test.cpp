// Libraries checked before the freeze (migrate/elf_files.hpp): the build-id
// reader, the tasks' files, where a file is on the destination and what
// the destination says of it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "checkpoint/elf_build_id.hpp"
#include "checkpoint/task_files.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/unique_fd.hpp"
#include "migrate/elf_files.hpp"

namespace {

using namespace crx::migrate;
using crx::checkpoint::elf_build_id;
using crx::checkpoint::parse_maps_line;
using crx::checkpoint::task_files;

std::string self_exe() { return std::filesystem::read_symlink("/proc/self/exe"); }

// readelf's "Build ID: <hex>" of a file: the binutils reading to compare with.
std::string readelf_build_id(const std::string& path) {
  std::string cmd = "readelf -n '" + path + "' 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  ::pclose(p);
  auto at = out.find("Build ID: ");
  if (at == std::string::npos) return "";
  auto end = out.find('\n', at);
  return out.substr(at + 10, end - at - 10);
}

struct TempDir {
  std::string path = [] {
    char t[] = "/tmp/crx-elf-files-XXXXXX";
    return std::string(::mkdtemp(t));
  }();
  ~TempDir() { std::filesystem::remove_all(path); }
};

TEST(ElfBuildId, IsTheNoteTheLinkerWrote) {
  const std::string exe = self_exe();
  const std::string expected = readelf_build_id(exe);
  if (expected.empty()) GTEST_SKIP() << "readelf shows no build-id for " << exe;
  crx::UniqueFd fd(::open(exe.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd);
  EXPECT_EQ(elf_build_id(fd.get()), expected);
}

TEST(ElfBuildId, NoneForAFileThatIsNotElf) {
  TempDir d;
  std::ofstream(d.path + "/text") << "#!/bin/sh\necho not an ELF file\n";
  std::ofstream(d.path + "/short") << "\x7f";
  for (const char* name : {"/text", "/short"}) {
    crx::UniqueFd fd(::open((d.path + name).c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd);
    EXPECT_EQ(elf_build_id(fd.get()), std::nullopt) << name;
  }
}

TEST(ElfBuildId, AnElfFileLibelfCannotReadIsAnError) {
  TempDir d;
  std::ofstream(d.path + "/broken", std::ios::binary) << std::string("\x7f" "ELF\x02\x01\x01", 7)
                                                      << std::string(9, '\0');
  crx::UniqueFd fd(::open((d.path + "/broken").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd);
  try {
    elf_build_id(fd.get());
    FAIL() << "a truncated ELF header read as a file";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::IO) << e.what();
  }
}

TEST(TaskFiles, MapsLinesParse) {
  crx::checkpoint::MapsLine m;
  ASSERT_TRUE(parse_maps_line(
      "7f1c2a400000-7f1c2a428000 r--p 00000000 fe:01 1835212                    "
      "/usr/lib/x86_64-linux-gnu/libc.so.6",
      m));
  EXPECT_EQ(m.range, "7f1c2a400000-7f1c2a428000");
  EXPECT_EQ(m.dev, "fe:01");
  EXPECT_EQ(m.inode, 1835212u);
  EXPECT_EQ(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_FALSE(m.deleted);
  // A static executable's low addresses: map_files names them without
  // the leading zeros (the kernel refuses "00400000-00401000" there).
  ASSERT_TRUE(parse_maps_line("00400000-00401000 r--p 00000000 00:1d 7          /bin/busybox", m));
  EXPECT_EQ(m.range, "400000-401000");
  EXPECT_EQ(m.path, "/bin/busybox");
  ASSERT_TRUE(parse_maps_line("7f00-7f10 rw-s 00000000 00:01 2057 /memfd:pool (deleted)", m));
  EXPECT_EQ(m.path, "/memfd:pool");
  EXPECT_TRUE(m.deleted);
  ASSERT_TRUE(parse_maps_line("7f00-7f10 r-xp 00000000 08:01 12 /opt/my lib/x.so", m));
  EXPECT_EQ(m.path, "/opt/my lib/x.so");
  ASSERT_TRUE(parse_maps_line("55d0-55f0 rw-p 00000000 00:00 0                          [heap]", m));
  EXPECT_EQ(m.path, "");
  ASSERT_TRUE(parse_maps_line("7ff0-7ff1 rw-p 00000000 00:00 0", m));
  EXPECT_EQ(m.path, "");
  EXPECT_FALSE(parse_maps_line("", m));
  EXPECT_FALSE(parse_maps_line("Name: x", m));
}

TEST(TaskFiles, OpenFilesAndMappingsOnceEach) {
  TempDir d;
  std::ofstream(d.path + "/kept") << "kept";
  std::ofstream(d.path + "/gone") << "gone";
  crx::UniqueFd kept(::open((d.path + "/kept").c_str(), O_RDONLY | O_CLOEXEC));
  crx::UniqueFd again(::open((d.path + "/kept").c_str(), O_RDONLY | O_CLOEXEC));
  crx::UniqueFd gone(::open((d.path + "/gone").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(kept && again && gone);
  ASSERT_EQ(::unlink((d.path + "/gone").c_str()), 0);
  struct stat st;
  ASSERT_EQ(::fstat(kept.get(), &st), 0);
  auto scan = task_files({::getpid()});
  EXPECT_EQ(scan.unreadable, 0u);
  const auto& files = scan.files;
  int seen_kept = 0, seen_gone = 0;
  bool seen_exe = false;
  for (const auto& f : files) {
    if (f.path == d.path + "/kept") {
      ++seen_kept;
      EXPECT_EQ(f.id.ino, st.st_ino);
      EXPECT_EQ(f.size, 4);
      EXPECT_FALSE(f.deleted);
    }
    if (f.path == d.path + "/gone") {
      ++seen_gone;
      EXPECT_TRUE(f.deleted);
    }
    if (f.path == self_exe()) seen_exe = true;
  }
  EXPECT_EQ(seen_kept, 1) << "one entry per file, open twice";
  EXPECT_EQ(seen_gone, 1);
  // map_files needs CAP_SYS_ADMIN (CAP_CHECKPOINT_RESTORE): root only.
  if (::geteuid() == 0) {
    EXPECT_TRUE(seen_exe) << "the executable's mapping";
  }
  EXPECT_TRUE(task_files({999999999}).files.empty()) << "a task that is gone";
}

// maps pads addresses to 8 digits; map_files names them without: a static
// executable at 0x400000 was missed until the names were trimmed.
TEST(TaskFiles, AMappingAtALowAddressIsFound) {
  if (::geteuid() != 0) GTEST_SKIP() << "map_files needs CAP_SYS_ADMIN";
  TempDir d;
  std::ofstream(d.path + "/low") << std::string(4096, 'x');
  crx::UniqueFd fd(::open((d.path + "/low").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd);
  void* want = reinterpret_cast<void*>(0x01000000);
  void* at = ::mmap(want, 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd.get(), 0);
  if (at != want) GTEST_SKIP() << "0x01000000 is taken here";
  fd.reset();  // mapped only
  auto scan = task_files({::getpid()});
  ::munmap(at, 4096);
  EXPECT_EQ(scan.unreadable, 0u);
  bool found = false;
  for (const auto& f : scan.files) found = found || f.path == d.path + "/low";
  EXPECT_TRUE(found);
}

TEST(ElfFilesSeen, CoversWhatItReadAndNoticesANewLibrary) {
  if (::geteuid() != 0) GTEST_SKIP() << "map_files needs CAP_SYS_ADMIN";
  const std::string exe = self_exe();
  if (readelf_build_id(exe).empty()) GTEST_SKIP() << "no build-id in " << exe;
  // This process's files as a container's whose rootfs is the host's /.
  crx::spec::Spec as_root;
  as_root.root.path = "/";
  ElfFilesSeen seen({::getpid()}, as_root, "/");
  bool has_exe = false;
  for (const auto& f : seen.files())
    if (f.path == exe) {
      has_exe = true;
      EXPECT_EQ(f.build_id, readelf_build_id(exe));
      EXPECT_EQ(f.size, std::filesystem::file_size(exe));
    }
  EXPECT_TRUE(has_exe);
  EXPECT_TRUE(seen.covers({::getpid()}));
  TempDir d;
  // A new file without a build-id changes nothing CRIU would check.
  std::ofstream(d.path + "/notes.txt") << "text";
  crx::UniqueFd text(::open((d.path + "/notes.txt").c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(seen.covers({::getpid()}));
  // A new ELF file (a copy of the executable: another inode) does.
  std::filesystem::copy_file(exe, d.path + "/copy");
  crx::UniqueFd copy(::open((d.path + "/copy").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(copy);
  EXPECT_FALSE(seen.covers({::getpid()}));
}

// A file is listed only where the destination's rule finds it on the
// source too; one it would look for elsewhere leaves the list incomplete.
TEST(ElfFilesSeen, AFileTheDestinationWouldLookForElsewhereIsNotListed) {
  if (::geteuid() != 0) GTEST_SKIP() << "map_files needs CAP_SYS_ADMIN";
  if (readelf_build_id(self_exe()).empty()) GTEST_SKIP() << "no build-id";
  TempDir d;
  crx::spec::Spec elsewhere;
  elsewhere.root.path = d.path;  // an empty rootfs: the files are not there
  ElfFilesSeen seen({::getpid()}, elsewhere, "/");
  EXPECT_TRUE(seen.files().empty());
  EXPECT_FALSE(seen.covers({::getpid()}));
  crx::spec::Spec under_tmpfs;
  under_tmpfs.root.path = "/";
  under_tmpfs.mounts = {{"/", "tmpfs", "tmpfs", {}}};
  EXPECT_TRUE(ElfFilesSeen({::getpid()}, under_tmpfs, "/").files().empty());
}

crx::spec::Spec spec_with_mounts() {
  crx::spec::Spec s;
  s.root.path = "rootfs";
  s.mounts = {{"/proc", "proc", "proc", {}},
              {"/opt/tools", "bind", "/srv/tools", {"rbind", "ro"}},
              {"/etc/hosts", "none", "/var/lib/c1/hosts", {"bind"}},
              {"/run", "tmpfs", "tmpfs", {}},
              {"/opt", "none", "/srv/opt", {"rbind"}},
              {"/opt/tools/plugins", "tmpfs", "tmpfs", {}}};
  return s;
}

TEST(ElfFiles, WhereAFileIsOnTheDestination) {
  auto s = spec_with_mounts();
  auto at = [&](const std::string& p) { return host_place(s, "/bundles/c1", p); };
  auto place = at("/usr/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_TRUE(place);
  EXPECT_EQ(place->root, "/bundles/c1/rootfs");
  EXPECT_EQ(place->path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  s.root.path = "/var/lib/rootfs";
  EXPECT_EQ(at("/bin/sh")->root, "/var/lib/rootfs");
  // The last mount over a path is what the container sees there: /opt
  // came after /opt/tools.
  place = at("/opt/tools/bin/x");
  ASSERT_TRUE(place);
  EXPECT_EQ(place->root, "/srv/opt");
  EXPECT_EQ(place->path, "/tools/bin/x");
  place = at("/etc/hosts");
  ASSERT_TRUE(place);
  EXPECT_EQ(place->root, "/");
  EXPECT_EQ(place->path, "/var/lib/c1/hosts");
  EXPECT_EQ(at("/etc/hostsx")->root, "/var/lib/rootfs") << "a prefix that is not a directory";
  EXPECT_FALSE(at("/run/lib.so")) << "a tmpfs: nothing there before the restore";
  EXPECT_FALSE(at("/opt/tools/plugins/p.so"));
  EXPECT_FALSE(at("/proc/self/exe"));
}

TEST(ElfFiles, TheDestinationRefusesAMissingOrDifferentLibraryByName) {
  crx::spec::Spec s;
  s.root.path = "rootfs";
  s.mounts = {{"/run", "tmpfs", "tmpfs", {}}};
  std::map<std::string, FoundFile> host = {
      {"/b/rootfs/lib/same.so", {FoundFile::State::Found, 100, "aa"}},
      {"/b/rootfs/lib/bigger.so", {FoundFile::State::Found, 200, "bb"}},
      {"/b/rootfs/lib/other.so", {FoundFile::State::Found, 300, "c0"}},
      {"/b/rootfs/lib/plain.so", {FoundFile::State::Found, 400, std::nullopt}},
      {"/b/rootfs/lib/secret.so", {FoundFile::State::Unreadable, 0, std::nullopt}}};
  auto look = [&](const HostPlace& p) {
    auto it = host.find(p.root + p.path);
    return it == host.end() ? FoundFile{} : it->second;
  };
  auto check = [&](std::vector<ElfFile> files) { return check_elf_files(s, "/b", files, look); };

  auto c = check({{"/lib/same.so", 100, "aa"}});
  EXPECT_TRUE(c.refusals.empty());
  EXPECT_TRUE(c.all_same);
  EXPECT_TRUE(check({}).all_same);

  c = check({{"/lib/same.so", 100, "aa"}, {"/lib/missing.so", 10, "dd"}});
  ASSERT_EQ(c.refusals.size(), 1u);
  EXPECT_EQ(c.refusals[0],
            "file /lib/missing.so, which the container maps or holds open, does not exist on the "
            "destination");
  EXPECT_FALSE(c.all_same);

  c = check({{"/lib/bigger.so", 150, "bb"}});
  ASSERT_EQ(c.refusals.size(), 1u);
  EXPECT_EQ(c.refusals[0],
            "file /lib/bigger.so, which the container maps or holds open, differs on the "
            "destination (200 bytes here, 150 on the source)");

  c = check({{"/lib/other.so", 300, "c1"}, {"/lib/plain.so", 400, "ee"}});
  ASSERT_EQ(c.refusals.size(), 2u);
  EXPECT_EQ(c.refusals[0],
            "file /lib/other.so, which the container maps or holds open, differs on the "
            "destination (build-id c0 here, c1 on the source)");
  EXPECT_NE(c.refusals[1].find("(build-id none here, ee on the source)"), std::string::npos);

  // What cannot be compared refuses nothing; CRIU's restore checks it.
  c = check({{"/lib/same.so", 100, "aa"}, {"/lib/secret.so", 1, "ff"}});
  EXPECT_TRUE(c.refusals.empty());
  EXPECT_FALSE(c.all_same);
  c = check({{"/run/made.so", 1, "ff"}});
  EXPECT_TRUE(c.refusals.empty());
  EXPECT_FALSE(c.all_same);
}

TEST(ElfFiles, LookOnHostResolvesInsideTheRoot) {
  TempDir d;
  std::filesystem::create_directories(d.path + "/root/lib");
  std::filesystem::copy_file(self_exe(), d.path + "/root/lib/x.so");
  std::filesystem::create_symlink("/lib/x.so", d.path + "/root/lib/link.so");
  std::ofstream(d.path + "/root/lib/text") << "abc";
  auto f = look_on_host({d.path + "/root", "/lib/x.so"});
  ASSERT_EQ(f.state, FoundFile::State::Found);
  EXPECT_EQ(f.size, std::filesystem::file_size(self_exe()));
  EXPECT_EQ(f.build_id.value_or(""), readelf_build_id(self_exe()));
  // An absolute link resolves in the root, as in the container.
  EXPECT_EQ(look_on_host({d.path + "/root", "/lib/link.so"}).state, FoundFile::State::Found);
  f = look_on_host({d.path + "/root", "/lib/text"});
  EXPECT_EQ(f.state, FoundFile::State::Found);
  EXPECT_EQ(f.size, 3u);
  EXPECT_EQ(f.build_id, std::nullopt);
  EXPECT_EQ(look_on_host({d.path + "/root", "/lib/none.so"}).state, FoundFile::State::Missing);
  EXPECT_EQ(look_on_host({d.path + "/nothing", "/lib/x.so"}).state, FoundFile::State::Missing);
  EXPECT_EQ(look_on_host({d.path + "/root", "/lib"}).state, FoundFile::State::Unreadable);
}

TEST(ElfFiles, TheManifestListRoundTripsAndMalformedIsNamed) {
  std::vector<ElfFile> files{{"/lib/a.so", 10, "ab"}, {"/usr/bin/b", 20, "cd"}};
  auto back = elf_files_from_json(elf_files_to_json(files));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].path, "/usr/bin/b");
  EXPECT_EQ(back[1].size, 20u);
  EXPECT_EQ(back[1].build_id, "cd");
  for (const char* bad : {R"({"path":"/a"})", R"([{"path":"/a","size":-1,"build_id":"x"}])",
                          R"([{"path":"a","size":1,"build_id":"x"}])", R"([{"size":1}])"}) {
    try {
      elf_files_from_json(nlohmann::json::parse(bad));
      ADD_FAILURE() << "accepted " << bad;
    } catch (const crx::Error& e) {
      EXPECT_EQ(e.cause(), crx::Cause::Invalid) << bad;
      EXPECT_NE(std::string(e.what()).find("\"elf_files\""), std::string::npos) << e.what();
    }
  }
}

}  // namespace
