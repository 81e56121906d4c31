#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "common/error.hpp"
#include "common/scope_guard.hpp"

namespace {

using crx::ScopeGuard;

TEST(ScopeGuard, RunsWhenItsScopeEnds) {
  int runs = 0;
  {
    ScopeGuard undo([&] { ++runs; });
    EXPECT_EQ(runs, 0);
  }
  EXPECT_EQ(runs, 1);
}

TEST(ScopeGuard, RunsWhenAnExceptionLeavesItsScope) {
  int runs = 0;
  try {
    ScopeGuard undo([&] { ++runs; });
    throw crx::Error("step 2 failed");
  } catch (const crx::Error& e) {
    EXPECT_EQ(runs, 1) << "the undo ran before the handler";
    EXPECT_STREQ(e.what(), "step 2 failed");
  }
}

TEST(ScopeGuard, ADismissedGuardDoesNothing) {
  int runs = 0;
  {
    ScopeGuard undo([&] { ++runs; });
    undo.dismiss();
  }
  EXPECT_EQ(runs, 0);
}

TEST(ScopeGuard, GuardsUndoInReverseOrder) {
  std::string order;
  {
    ScopeGuard first([&] { order += "1"; });
    ScopeGuard second([&] { order += "2"; });
    ScopeGuard third([&] { order += "3"; });
    second.dismiss();
  }
  EXPECT_EQ(order, "31");
}

TEST(ScopeGuard, AFailingUndoIsAWarningAndTheOthersStillRun) {
  bool earlier_ran = false;
  testing::internal::CaptureStderr();
  try {
    ScopeGuard earlier([&] { earlier_ran = true; });
    ScopeGuard failing([] { throw crx::Error("rmdir /x: Device or resource busy"); });
    throw std::runtime_error("the original failure");
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the original failure") << "the undo's failure does not replace it";
  }
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(earlier_ran);
  EXPECT_NE(err.find("cleanup: rmdir /x: Device or resource busy"), std::string::npos) << err;
}

}  // namespace
