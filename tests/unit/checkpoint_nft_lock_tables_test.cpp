// CRIU's nftables lock table taken out of a ruleset image (nft_lock_tables.hpp)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "checkpoint/nft_lock_tables.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/unique_fd.hpp"
#include "../support/temp_dir.hpp"

using namespace crx::checkpoint;

namespace {

// What CRIU 3.17.1 dumped from a busybox container's own namespace (its
// lock only), as read back from nftables-10.img in a guest.
const std::string kLock =
    "table inet CRIU-172 {\n"
    "\tchain output {\n"
    "\t\ttype filter hook output priority filter; policy drop;\n"
    "\t\tmeta mark 0x0000c114 accept\n"
    "\t}\n"
    "\n"
    "\tchain input {\n"
    "\t\ttype filter hook input priority filter; policy drop;\n"
    "\t\tmeta mark 0x0000c114 accept\n"
    "\t}\n"
    "}\n";

const std::string kUsers =
    "table ip filter {\n"
    "\tchain INPUT {\n"
    "\t\ttype filter hook input priority filter; policy accept;\n"
    "\t\ttcp dport 22 accept\n"
    "\t}\n"
    "}\n";

const std::string kUsersInet =
    "table inet CRIU-app {\n"  // not CRIU's: its name is no pid
    "\tset s {\n"
    "\t\ttype ipv4_addr\n"
    "\t}\n"
    "}\n";

}  // namespace

TEST(NftLockTables, TheLockAloneLeavesNothing) {
  EXPECT_EQ(without_criu_lock_tables(kLock), "");
}

TEST(NftLockTables, TheContainersOwnTablesStayAsTheyWere) {
  EXPECT_EQ(without_criu_lock_tables(kUsers + kLock + kUsersInet), kUsers + kUsersInet);
  EXPECT_EQ(without_criu_lock_tables(kLock + kUsers), kUsers);
  EXPECT_EQ(without_criu_lock_tables(kUsers), kUsers);
  EXPECT_EQ(without_criu_lock_tables(kUsersInet), kUsersInet);
}

TEST(NftLockTables, EveryLockTableGoes) {
  std::string other = kLock;
  other.replace(other.find("172"), 3, "40961");
  EXPECT_EQ(without_criu_lock_tables(kLock + kUsers + other), kUsers);
}

TEST(NftLockTables, ALockWithoutItsClosingLineIsLeftAlone) {
  std::string cut = kLock.substr(0, kLock.size() - 2);  // no "}\n"
  EXPECT_EQ(without_criu_lock_tables(kUsers + cut), kUsers + cut);
}

TEST(NftLockTables, ALastLineWithoutNewlineCloses) {
  std::string last = kLock.substr(0, kLock.size() - 1);  // "}" without '\n'
  EXPECT_EQ(without_criu_lock_tables(kUsers + last), kUsers);
}

TEST(NftLockTables, OnlyATopLevelTableLineOpensOne) {
  std::string nested = "table ip t {\n\tcomment \"table inet CRIU-1 {\"\n}\n";
  EXPECT_EQ(without_criu_lock_tables(nested), nested);
  std::string indented = "\ttable inet CRIU-1 {\n}\n";
  EXPECT_EQ(without_criu_lock_tables(indented), indented);
}

class NftLockImages : public ::testing::Test {
 protected:
  crx::test::TempDir tmp{"crx-nft-images"};
  std::string at(const std::string& name) { return tmp.path() + "/" + name; }
  crx::UniqueFd dir() { return crx::UniqueFd(::open(tmp.path().c_str(), O_RDONLY | O_DIRECTORY)); }
};

TEST_F(NftLockImages, RewritesOnlyRulesetImagesThatHoldALock) {
  crx::write_file(at("nftables-10.img"), kUsers + kLock);
  crx::write_file(at("nftables-11.img"), kUsers);
  crx::write_file(at("iptables-10.img"), kLock);  // not a ruleset image
  crx::write_file(at("nftables-12.img.bak"), kLock);
  struct stat before {};
  ASSERT_EQ(::stat(at("nftables-11.img").c_str(), &before), 0);
  crx::UniqueFd d = dir();
  EXPECT_EQ(drop_criu_lock_tables(d.get()), 1u);
  EXPECT_EQ(crx::read_file(at("nftables-10.img")), kUsers);
  EXPECT_EQ(crx::read_file(at("nftables-11.img")), kUsers);
  struct stat after {};
  ASSERT_EQ(::stat(at("nftables-11.img").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "an image without a lock is not rewritten";
  EXPECT_EQ(crx::read_file(at("iptables-10.img")), kLock);
  EXPECT_EQ(crx::read_file(at("nftables-12.img.bak")), kLock);
  EXPECT_EQ(drop_criu_lock_tables(d.get()), 0u) << "a second pass finds nothing";
}

TEST_F(NftLockImages, ALockOnlyImageBecomesEmpty) {
  crx::write_file(at("nftables-10.img"), kLock);
  crx::UniqueFd d = dir();
  EXPECT_EQ(drop_criu_lock_tables(d.get()), 1u);
  EXPECT_EQ(crx::read_file(at("nftables-10.img")), "");
  EXPECT_FALSE(crx::path_exists(at(".nftables-10.img.crx-new")));
}

TEST_F(NftLockImages, AnUnreadableImageFailsWithItsErrno) {
  ASSERT_EQ(::symlink("/etc/hostname", at("nftables-10.img").c_str()), 0);
  crx::UniqueFd d = dir();
  try {
    drop_criu_lock_tables(d.get());
    FAIL() << "a symlink image was read";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.sys_errno(), ELOOP);
    EXPECT_NE(std::string(e.what()).find("nftables-10.img"), std::string::npos) << e.what();
  }
}
