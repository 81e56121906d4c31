// OCI resource values -> cgroup file values, as runc converts them.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "cgroup/convert.hpp"

namespace cv = crx::cgroup::convert;

namespace {

TEST(CgroupConvert, LimitValue) {
  EXPECT_EQ(cv::limit_value(-1), "max");
  EXPECT_EQ(cv::limit_value(0), "");
  EXPECT_EQ(cv::limit_value(1048576), "1048576");
}

TEST(CgroupConvert, SharesToWeightLikeRunc) {
  EXPECT_EQ(cv::cpu_shares_to_weight(0), 0u);
  EXPECT_EQ(cv::cpu_shares_to_weight(2), 1u);
  EXPECT_EQ(cv::cpu_shares_to_weight(1024), 39u);
  EXPECT_EQ(cv::cpu_shares_to_weight(262144), 10000u);
  EXPECT_EQ(cv::cpu_shares_to_weight(1), 1u);  // clamped into range
}

TEST(CgroupConvert, CpuMax) {
  EXPECT_EQ(cv::cpu_max(std::nullopt, std::nullopt), "");
  EXPECT_EQ(cv::cpu_max(50000, std::nullopt), "50000 100000");
  EXPECT_EQ(cv::cpu_max(50000, 200000), "50000 200000");
  EXPECT_EQ(cv::cpu_max(-1, 200000), "max 200000");
  EXPECT_EQ(cv::cpu_max(std::nullopt, 20000), "max 20000");
}

TEST(CgroupConvert, SwapIsMemoryPlusSwapInOci) {
  EXPECT_EQ(cv::memory_swap_max(0, 0), "");
  EXPECT_EQ(cv::memory_swap_max(0, -1), "max");  // both unlimited
  EXPECT_EQ(cv::memory_swap_max(-1, 1000), "max");
  EXPECT_EQ(cv::memory_swap_max(3000, 1000), "2000");
  EXPECT_EQ(cv::memory_swap_max(1000, 1000), "0");
  EXPECT_THROW(cv::memory_swap_max(500, 1000), crx::Error);
  EXPECT_THROW(cv::memory_swap_max(500, 0), crx::Error);
  EXPECT_THROW(cv::memory_swap_max(500, -1), crx::Error);
}

TEST(CgroupConvert, BlkioWeightToIoWeight) {
  EXPECT_EQ(cv::blkio_weight_to_io_weight(0), 0u);
  EXPECT_EQ(cv::blkio_weight_to_io_weight(10), 1u);
  EXPECT_EQ(cv::blkio_weight_to_io_weight(500), 4950u);
  EXPECT_EQ(cv::blkio_weight_to_io_weight(1000), 10000u);
}

TEST(CgroupConvert, HugepageNames) {
  EXPECT_EQ(cv::hugepage_size_name(2097152), "2MB");
  EXPECT_EQ(cv::hugepage_size_name(1073741824), "1GB");
  EXPECT_EQ(cv::hugepage_size_name(65536), "64KB");
  EXPECT_EQ(cv::hugepage_dir_to_size_name("hugepages-2048kB"), "2MB");
  EXPECT_EQ(cv::hugepage_dir_to_size_name("hugepages-1048576kB"), "1GB");
  EXPECT_EQ(cv::hugepage_dir_to_size_name("hugepages-kB"), "");
  EXPECT_EQ(cv::hugepage_dir_to_size_name("nr_hugepages"), "");
}

TEST(CgroupConvert, DeviceRuleLines) {
  crx::spec::DeviceRule all;  // deny a *:* rwm
  EXPECT_EQ(cv::device_rule_line(all), "a *:* rwm");
  crx::spec::DeviceRule null;
  null.allow = true;
  null.type = "c";
  null.major = 1;
  null.minor = 3;
  null.access = "rw";
  EXPECT_EQ(cv::device_rule_line(null), "c 1:3 rw");
  crx::spec::DeviceRule pts;
  pts.type = "c";
  pts.major = 136;
  pts.minor = -1;  // wildcard written as -1 by some callers
  EXPECT_EQ(cv::device_rule_line(pts), "c 136:* rwm");
}

}  // namespace
