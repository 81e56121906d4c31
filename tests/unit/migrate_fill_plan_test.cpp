// fill_plan.hpp and memory_images.hpp: which pages of a final round the
// restore leaves to be filled after the resume, worked out on CRIU's
// pagemap and mm images as CRIU writes them.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/memory_images.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "criu-rpc/criu_memory.pb-c.h"
#include "criu_stats_images.hpp"
#include "migrate/fill_plan.hpp"

namespace {

namespace ck = crx::checkpoint;
using crx::migrate::plan_fill_after_resume;
using crx::test::criu_u32;
constexpr uint32_t P = ck::kPageInParent, L = ck::kPageLazy, D = ck::kPagePresent;
constexpr uint64_t kPage = 4096;

std::string temp_dir() {
  char t[] = "/tmp/crx-fill-XXXXXX";
  if (!mkdtemp(t)) throw std::runtime_error("mkdtemp");
  return t;
}

ck::Pagemap pagemap(uint32_t id, std::vector<ck::PagemapEntry> e) { return ck::Pagemap{id, std::move(e)}; }

// mm-<id>.img with these VMAs: CRIU's two magics, one mm entry.
void write_mm(const std::string& path, const std::vector<ck::Vma>& vmas) {
  std::vector<CrxVmaEntry> v(vmas.size());
  std::vector<CrxVmaEntry*> ptrs;
  for (size_t i = 0; i < vmas.size(); i++) {
    v[i] = CRX_VMA_ENTRY__INIT;
    v[i].has_start = v[i].has_end = v[i].has_flags = v[i].has_status = true;
    v[i].start = vmas[i].start;
    v[i].end = vmas[i].end;
    v[i].flags = vmas[i].flags;
    v[i].status = vmas[i].status;
    ptrs.push_back(&v[i]);
  }
  CrxMmEntry mm = CRX_MM_ENTRY__INIT;
  mm.n_vmas = ptrs.size();
  mm.vmas = ptrs.data();
  std::string body(crx_mm_entry__get_packed_size(&mm), '\0');
  crx_mm_entry__pack(&mm, reinterpret_cast<uint8_t*>(body.data()));
  crx::write_file(path, criu_u32(0x54564319) + criu_u32(0x57492820) +
                            criu_u32(static_cast<uint32_t>(body.size())) + body);
}

constexpr uint32_t kAnon = MAP_ANONYMOUS | MAP_PRIVATE;
constexpr uint64_t A = 0x10000;  // a heap: 8 pages, lazy
constexpr uint64_t B = 0x20000;  // 2 pages, locked since the first round
constexpr uint64_t S = 0x30000;  // a stack page: never lazy

// Three rounds of task 1 below root: the first sends everything, the
// second a changed page, the final dump another; the rest is "in parent".
struct Rounds {
  std::string root = temp_dir();
  std::string final_dir = root + "/3", view = root + "/3.fill";
  Rounds() {
    for (const char* r : {"1", "2", "3"}) crx::mkdir_p(root + "/" + r, 0700);
    std::filesystem::create_directory_symlink("../1", root + "/2/parent");
    std::filesystem::create_directory_symlink("../2", root + "/3/parent");
    ck::write_pagemap(root + "/1/pagemap-1.img",
                      pagemap(11, {{A, 8, D | L}, {B, 2, D | L}, {S, 1, D}}));
    crx::write_file(root + "/1/pages-11.img", std::string(11 * kPage, 'a'));
    ck::write_pagemap(root + "/2/pagemap-1.img",
                      pagemap(21, {{A, 2, P}, {A + 2 * kPage, 1, D | L}, {A + 3 * kPage, 5, P},
                                   {B, 2, P}, {S, 1, P}}));
    ck::write_pagemap(final_dir + "/pagemap-1.img",
                      pagemap(31, {{A, 4, P}, {A + 4 * kPage, 1, D | L}, {A + 5 * kPage, 3, P},
                                   {B, 2, P}, {S, 1, P}}));
    crx::write_file(final_dir + "/pages-31.img", std::string(kPage, 'c'));
    write_mm(final_dir + "/mm-1.img",
             {{A, A + 8 * kPage, kAnon, 1}, {B, B + 2 * kPage, kAnon | MAP_LOCKED, 1},
              {S, S + kPage, kAnon | MAP_GROWSDOWN, 1}});
    crx::write_file(final_dir + "/core-1.img", "core");
  }
  ~Rounds() { crx::remove_tree(root); }
};

TEST(FillPlan, LeavesThePagesWhoseDataIsTheFirstRoundsAndLazyToTheDaemon) {
  Rounds r;
  auto plan = plan_fill_after_resume(r.final_dir, r.view, 1);
  // A's pages 0, 1, 3, 5, 6, 7: page 2 changed in round 2, page 4 in the
  // final round; B is locked now, S was never lazy.
  EXPECT_EQ(plan.pages, 6u);
  // The restore's pagemap: the pages to fill say PE_PARENT|PE_LAZY (it
  // skips them), none other says PE_LAZY (it copies them).
  auto fin = ck::read_pagemap(r.final_dir + "/pagemap-1.img");
  EXPECT_EQ(fin.pages_id, 31u);
  EXPECT_EQ(fin.entries, (std::vector<ck::PagemapEntry>{{A, 2, P | L},
                                                        {A + 2 * kPage, 1, P},
                                                        {A + 3 * kPage, 1, P | L},
                                                        {A + 4 * kPage, 1, D},
                                                        {A + 5 * kPage, 3, P | L},
                                                        {B, 2, P},
                                                        {S, 1, P}}));
  // The daemon's: the first round's entries and pages, PE_LAZY on exactly
  // those pages; the data of every entry still where it was.
  auto view = ck::read_pagemap(r.view + "/pagemap-1.img");
  EXPECT_EQ(view.pages_id, 11u);
  EXPECT_EQ(view.entries, (std::vector<ck::PagemapEntry>{{A, 2, D | L},
                                                         {A + 2 * kPage, 1, D},
                                                         {A + 3 * kPage, 1, D | L},
                                                         {A + 4 * kPage, 1, D},
                                                         {A + 5 * kPage, 3, D | L},
                                                         {B, 2, D},
                                                         {S, 1, D}}));
  namespace fs = std::filesystem;
  EXPECT_EQ(fs::read_symlink(r.view + "/pages-11.img"), fs::canonical(r.root + "/1/pages-11.img"));
  EXPECT_TRUE(fs::is_symlink(r.view + "/core-1.img"));
  EXPECT_TRUE(fs::is_symlink(r.view + "/mm-1.img"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(r.view + "/parent")));  // no parent to read through
  EXPECT_FALSE(fs::exists(fs::symlink_status(r.view + "/pages-31.img")));
}

TEST(FillPlan, ANameTheViewHasAlreadyStays) {
  // A daemon started before the images came waits on a FIFO in its view
  // (criu_sides.cpp, prepare_fill); the plan links everything else.
  namespace fs = std::filesystem;
  Rounds r;
  crx::write_file(r.final_dir + "/inventory.img", "inventory");
  crx::mkdir_p(r.view, 0700);
  ASSERT_EQ(::mkfifo((r.view + "/inventory.img").c_str(), 0600), 0);
  EXPECT_EQ(plan_fill_after_resume(r.final_dir, r.view, 1).pages, 6u);
  struct stat st{};
  ASSERT_EQ(::lstat((r.view + "/inventory.img").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(fs::is_symlink(r.view + "/core-1.img"));
}

// The earlier rounds' pagemaps read before the final images come: the plan
// takes them from there (here their files are gone by then) and plans
// what it plans reading them itself.
TEST(FillPlan, TheParentsPagemapsReadAheadAreNotReadAgain) {
  Rounds r;
  // What the receiver has when the final round opens: its dir and parent
  // link, none of its images (those of the fixture are moved away).
  const std::string later = r.root + "/later";
  std::filesystem::rename(r.final_dir, later);
  crx::mkdir_p(r.final_dir, 0700);
  std::filesystem::create_directory_symlink("../2", r.final_dir + "/parent");
  crx::write_file(r.root + "/1/pagemap-shmem-5.img", "not a task's");
  const crx::migrate::ParentPagemaps ahead = crx::migrate::read_parent_pagemaps(r.final_dir);
  const auto real = [&](const std::string& p) { return std::filesystem::canonical(p).string(); };
  ASSERT_EQ(ahead.by_path.size(), 2u);
  EXPECT_EQ(ahead.by_path.at(real(r.root + "/1/pagemap-1.img")).pages_id, 11u);
  EXPECT_EQ(ahead.by_path.at(real(r.root + "/2/pagemap-1.img")).pages_id, 21u);
  // The final images arrive; the parents' pagemaps are no longer read.
  std::filesystem::remove(r.final_dir + "/parent");
  std::filesystem::remove(r.final_dir);
  std::filesystem::rename(later, r.final_dir);
  for (const char* p : {"/1/pagemap-1.img", "/2/pagemap-1.img"})
    crx::write_file(r.root + p, "garbage, were it read again");
  auto plan = plan_fill_after_resume(r.final_dir, r.view, 1, &ahead);
  EXPECT_EQ(plan.pages, 6u);
  EXPECT_EQ(ck::read_pagemap(r.view + "/pagemap-1.img").pages_id, 11u);
  EXPECT_EQ(ck::read_pagemap(r.final_dir + "/pagemap-1.img").entries.size(), 7u);
  // Without them, the same plan reads the (now broken) files: it throws.
  Rounds again;
  crx::write_file(again.root + "/1/pagemap-1.img", "garbage");
  EXPECT_THROW(plan_fill_after_resume(again.final_dir, again.view, 1), crx::Error);
}

TEST(FillPlan, ChangesNothingBelowItsMinimum) {
  Rounds r;
  std::string before = crx::read_file(r.final_dir + "/pagemap-1.img");
  EXPECT_EQ(plan_fill_after_resume(r.final_dir, r.view, 7).pages, 0u);
  EXPECT_EQ(crx::read_file(r.final_dir + "/pagemap-1.img"), before);
  EXPECT_FALSE(crx::path_exists(r.view));
}

TEST(FillPlan, ChangesNothingForATaskWithoutAFirstRoundOrARoundWithoutParent) {
  {
    // A task the first round did not have (started since): its pages are
    // all in the final round; the plan covers every task or none.
    Rounds r;
    ck::write_pagemap(r.final_dir + "/pagemap-7.img", pagemap(32, {{A, 1, D | L}}));
    write_mm(r.final_dir + "/mm-7.img", {{A, A + kPage, kAnon, 1}});
    EXPECT_EQ(plan_fill_after_resume(r.final_dir, r.view, 1).pages, 0u);
    EXPECT_EQ(ck::read_pagemap(r.final_dir + "/pagemap-1.img").entries.size(), 5u);
    EXPECT_FALSE(crx::path_exists(r.view));
  }
  {
    Rounds r;
    EXPECT_EQ(plan_fill_after_resume(r.root + "/1", r.root + "/1.fill", 1).pages, 0u);
  }
}

TEST(MemoryImages, APagemapReadsBackAsWrittenAndAnythingElseIsRefused) {
  std::string dir = temp_dir();
  auto m = pagemap(5, {{A, 3, D | L}, {B, 1, P}});
  ck::write_pagemap(dir + "/pagemap-1.img", m);
  auto back = ck::read_pagemap(dir + "/pagemap-1.img");
  EXPECT_EQ(back.pages_id, 5u);
  EXPECT_EQ(back.entries, m.entries);
  write_mm(dir + "/mm-1.img", {{A, B, kAnon, 1}});
  try {
    ck::read_pagemap(dir + "/mm-1.img");
    ADD_FAILURE() << "an mm image read as a pagemap";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::Invalid);
    EXPECT_NE(std::string(e.what()).find(dir + "/mm-1.img"), std::string::npos) << e.what();
  }
  std::string whole = crx::read_file(dir + "/pagemap-1.img");
  crx::write_file(dir + "/cut.img", whole.substr(0, whole.size() - 3));
  EXPECT_THROW(ck::read_pagemap(dir + "/cut.img"), crx::Error);
  auto vmas = ck::read_vmas(dir + "/mm-1.img");
  ASSERT_EQ(vmas.size(), 1u);
  EXPECT_EQ(vmas[0].end, B);
  EXPECT_TRUE(ck::vma_can_be_lazy(vmas[0]));
  EXPECT_FALSE(ck::vma_can_be_lazy({A, B, kAnon | MAP_LOCKED, 1}));
  EXPECT_FALSE(ck::vma_can_be_lazy({A, B, MAP_PRIVATE, 1}));           // a file mapping
  EXPECT_FALSE(ck::vma_can_be_lazy({A, B, kAnon, 1 | (1u << 3)}));     // the vDSO
  crx::remove_tree(dir);
}

}  // namespace
