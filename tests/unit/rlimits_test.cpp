#include "linux/rlimits.hpp"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <fstream>

#include "child_process.hpp"
#include "common/error.hpp"

namespace {

crx::spec::Rlimit limit(int resource, const char* name, uint64_t soft, uint64_t hard) {
  crx::spec::Rlimit r;
  r.resource = resource;
  r.type = name;
  r.soft = soft;
  r.hard = hard;
  return r;
}

TEST(Rlimits, AppliesEachLimit) {
  const std::string out = crx::test::in_child([] {
    crx::linux_::apply_rlimits({limit(RLIMIT_NOFILE, "RLIMIT_NOFILE", 100, 200),
                                limit(RLIMIT_CORE, "RLIMIT_CORE", 0, 0)});
    rlimit nofile{}, core{};
    ::getrlimit(RLIMIT_NOFILE, &nofile);
    ::getrlimit(RLIMIT_CORE, &core);
    return std::to_string(nofile.rlim_cur) + "/" + std::to_string(nofile.rlim_max) + " " +
           std::to_string(core.rlim_cur) + "/" + std::to_string(core.rlim_max);
  });
  EXPECT_EQ(out, "100/200 0/0");
}

TEST(Rlimits, ErrorsNameTheLimit) {
  const std::string soft_above_hard = crx::test::in_child([] {
    crx::linux_::apply_rlimits({limit(RLIMIT_NOFILE, "RLIMIT_NOFILE", 300, 200)});
    return std::string("applied");
  });
  EXPECT_NE(soft_above_hard.find("RLIMIT_NOFILE: soft limit 300 is above hard limit 200"),
            std::string::npos)
      << soft_above_hard;
  const std::string bad = crx::test::in_child([] {
    crx::linux_::apply_rlimits({limit(999, "RLIMIT_BOGUS", 1, 1)});
    return std::string("applied");
  });
  EXPECT_NE(bad.find("RLIMIT_BOGUS"), std::string::npos) << bad;
  EXPECT_NE(bad.find("Invalid argument"), std::string::npos) << bad;
}

TEST(Rlimits, OomScoreAdjAndNoNewPrivs) {
  const std::string out = crx::test::in_child([] {
    crx::linux_::write_oom_score_adj(500);
    crx::linux_::set_no_new_privs();
    std::ifstream in("/proc/self/oom_score_adj");
    std::string score;
    in >> score;
    return score + " " + std::to_string(::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
  });
  EXPECT_EQ(out, "500 1");
  EXPECT_THROW(crx::linux_::write_oom_score_adj(1001), crx::Error);
}

}  // namespace
