// --mr-remote-write: the sender RDMA-WRITEs every page of the receiver's
// --mr-size MR in passes; the receiver checks that no page ever goes back to
// an older pass. The CPU of the receiver never writes that MR, so only the
// NIC's writes (rxe copying into the pinned pages from the kernel) change
// it: a migration that restores such a page as an earlier round saw it (a
// dump that trusted soft-dirty bits the NIC never sets) fails the check.
//
// Every page starts with its stamp: the pass number, then its complement.
// A pass is one WRITE of the whole MR; the next data message the sender
// posts on QP 0 after it carries kFlagMrPass and the pass number, and RC
// ordering places the WRITE before that message completes. From then on
// every page must hold that pass or a later one. No verbs here: the
// checking is unit-tested on the host.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace crx::verbs_seq {

inline constexpr size_t kStampPage = 4096;

// Writes pass into the stamp of every page of buf (bytes long).
void stamp_pages(char* buf, size_t bytes, uint64_t pass);

// The pass a page holds: 0 for the fill it had before the first pass,
// nullopt while a WRITE is changing its stamp (the two words disagree).
std::optional<uint64_t> page_pass(const char* page, unsigned char initial_fill);

// The receiver's side: remembers the latest pass announced to it.
class MrPassChecker {
 public:
  MrPassChecker(const char* mr, size_t bytes, unsigned char initial_fill)
      : mr_(mr), bytes_(bytes), fill_(initial_fill) {}
  // A message announced that pass is in place.
  void announced(uint64_t pass) {
    if (pass > announced_) announced_ = pass;
  }
  // "" or the first page behind the latest announced pass.
  std::string check() const;
  uint64_t announced() const { return announced_; }

 private:
  const char* mr_;
  size_t bytes_;
  unsigned char fill_;
  uint64_t announced_ = 0;
};

}  // namespace crx::verbs_seq
