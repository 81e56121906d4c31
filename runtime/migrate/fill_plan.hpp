// Pages filled after the resume (README.md, "Pages filled after the
// resume"): which pages of a pre-copy migration's final round the restore
// leaves to a lazy-pages daemon on this host, and the images that daemon
// reads.
//
// The pages to fill are those whose data is still the first round's (the
// bulk of a container's memory, sent before the freeze) and which CRIU
// itself marked lazy there (PE_LAZY: private anonymous memory that is not a
// stack), in a VMA the final dump still has as one a lazy restore registers
// with userfaultfd. The final round names them "in parent". CRIU 3.17's
// lazy-pages daemon cannot read a page through a parent dump (its local
// page read copies a parent's page into its buffer but never into the task:
// the fault is never answered), so the daemon gets a view of the final round
// whose pagemaps point straight at the first round's pages images:
//   - the final round's pagemaps are rewritten: the pages to fill say
//     PE_PARENT | PE_LAZY (the restore skips them), no other page says
//     PE_LAZY (the restore copies it, from this round or a parent);
//   - view_dir holds links to the final round's images, but its pagemaps
//     are the first round's, with PE_LAZY on exactly the pages to fill, and
//     its pages images are the first round's.
// Nothing is read from the pages images: a plan costs milliseconds. A
// final round rewritten so still restores with every page copied in (a
// restore without lazy pages reads PE_LAZY pages like any other), so a
// plan or daemon that fails half-way leaves the restore to do just that.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "checkpoint/memory_images.hpp"

namespace crx::migrate {

struct FillPlan {
  uint64_t pages = 0;  // to fill after the resume; 0: nothing was changed
};

// The pagemaps of the rounds before the final one, read before the final
// round's images come (they no longer change once it opens; the receiver
// reads them before the source freezes), by the real path the plan finds
// them at.
struct ParentPagemaps {
  std::map<std::string, checkpoint::Pagemap> by_path;
};

// Every task pagemap of final_dir's parent rounds (final_dir and its
// "parent" link exist; its images need not). Throws Error for images it
// cannot read.
ParentPagemaps read_parent_pagemaps(const std::string& final_dir);

// final_dir: the final round's images, linked to its parents by "parent"
// symlinks down to the first round. With fewer than min_pages to fill,
// or a task the plan cannot cover (one without a first-round pagemap, say),
// nothing is written and the plan is empty. A parent's pagemap found in
// `ahead` is not read again. Throws Error for images it cannot read.
FillPlan plan_fill_after_resume(const std::string& final_dir, const std::string& view_dir,
                                uint64_t min_pages, const ParentPagemaps* ahead = nullptr);

}  // namespace crx::migrate
