// What the destination's chain of page images holds, page by page: a hash
// of the content every page of every task had when it last crossed the
// page channel. The sender's page filter (page_dedup.hpp) asks it, for
// each page CRIU dumps again, whether the destination has that content
// already; if so the page goes as "in the parent image" instead of its
// 4 KiB.
//
// Why content and not CRIU's soft-dirty bits: the kernel never clears the
// soft-dirty bit of a page pinned for DMA (fs/proc/task_mmu.c skips pinned
// PTEs in clear_refs), so every page of a registered RDMA memory region is
// dumped in every round, whether or not the CPU or the NIC wrote it; and
// the NIC's writes would not set the bit anyway. Comparing content catches
// both writers and needs nothing from the kernel.
//
// A round's ledger is built from what the round carries: pages with data
// (their new hash), pages CRIU itself sent as "in parent" (the hash they
// had), nothing else. A page a round does not mention at all (unmapped,
// say) is forgotten, because the next round's parent - this round - has no
// entry for it, and naming it "in parent" would fail the restore.
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

namespace crx::migrate {

// A page's 128-bit hash (two XXH64 of it, seeded apart): an accidental
// collision is out of reach, so equal hashes mean equal content. Not a
// cryptographic hash: a process that crafted two colliding pages could
// only make its own memory wrong after the move.
struct PageHash {
  uint64_t low = 0, high = 0;
  bool operator==(const PageHash&) const = default;
};

PageHash hash_page(const void* page, size_t size);

// One round's page channel through the filter (page_dedup.hpp).
struct PageDedupStats {
  uint64_t pages_in = 0;         // pages CRIU sent with data
  uint64_t pages_unchanged = 0;  // of them, sent as "in parent"
  uint64_t bytes_out = 0;        // what went onto the network
  // Pages CRIU sent as "in parent" that the relay read and compared
  // (page_dedup.hpp, check_parent), and of them, those whose content had
  // changed: sent with their data.
  uint64_t parent_pages_checked = 0;
  uint64_t parent_pages_changed = 0;
  // Pages of zeros that crossed as their count (zero_runs.hpp).
  uint64_t zero_pages = 0;
  // Bytes of frames that crossed in LZ4 frames, and those frames' size
  // (zero_runs.hpp, "Compressed").
  uint64_t compressed_in = 0, compressed_out = 0;
  // The relay thread's CPU (user + system): reading CRIU's stream, hashing,
  // compressing, and the kernel's encryption of what it sends.
  double cpu_seconds = 0;
};

class PageLedger {
 public:
  // image: CRIU's pagemap id on the wire (task id and type); vaddr: page.
  // Whether the previous rounds left this content for this page at the
  // destination. Records it for the round being built either way.
  bool unchanged(uint64_t image, uint64_t vaddr, const PageHash& h);
  // A page the round sends as "in parent" (CRIU's own decision): what the
  // destination had stays what it has. Pages never seen stay unknown.
  void carry(uint64_t image, uint64_t vaddr);
  // The round opens this pagemap image (CRIU's OPEN2). Whether the
  // previous round opened it too: the destination's page server then has
  // a parent image for it, which is what it answers the OPEN2 with.
  bool opened(uint64_t image);
  // The round is complete at the destination: it becomes the parent.
  void end_round();
  // The round failed: what it recorded is dropped (nothing it sent counts).
  void abandon_round();

  size_t known_pages() const { return prev_.size(); }

 private:
  struct Key {
    uint64_t image, vaddr;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const noexcept;
  };
  using Map = std::unordered_map<Key, PageHash, KeyHash>;
  Map prev_, next_;
  std::unordered_set<uint64_t> prev_images_, next_images_;
};

}  // namespace crx::migrate
