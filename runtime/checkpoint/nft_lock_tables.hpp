// CRIU's nftables network lock left in the restored network namespace.
//
// crx asks CRIU 3.17 for its nftables network lock (container_checkpoint.cpp:
// in CRIU's own process, where iptables costs four helper runs). CRIU makes
// the lock table, "table inet CRIU-<pid>" with policy drop on input and
// output, named after the dumped root task's pid, *before* it dumps the
// namespace's ruleset, so the ruleset image (nftables-<id>.img, the text of
// `nft list ruleset`) holds the lock too. The restore brings the whole
// ruleset back and then unlocks by deleting "inet CRIU-<pid>" with the
// *restored* root task's pid, another number: the old table stayed, and
// the restored container's network namespace dropped every packet, its
// loopback too. (The iptables lock has one fixed chain name, which the
// restore's unlock finds.)
//
// The restore side takes the lock tables out of the image before CRIU reads
// it: nothing of the container's own ruleset changes, and CRIU's unlock
// finds no table (its "No such file or directory" goes to its log).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace crx::checkpoint {

// ruleset (`nft list ruleset` text) without its top-level
// "table inet CRIU-<digits> {" ... "}" blocks. A block without its closing
// line is left as it is (not CRIU's listing: nothing is guessed).
std::string without_criu_lock_tables(std::string_view ruleset);

// Rewrites each nftables-*.img of the images dir (an O_DIRECTORY fd) that
// holds a lock table, without it (a new file renamed over the old). Returns
// how many images changed. Throws Error with errno.
std::size_t drop_criu_lock_tables(int images_dir_fd);

}  // namespace crx::checkpoint
