// SPDX-License-Identifier: MIT
// The kernel's readahead on the mount. A FUSE mount's backing device info
// starts at the kernel's default of 128 KiB, and the max_readahead of the
// FUSE handshake can only lower it, so a sequential reader of a large file
// (a TFRecord shard, a ranges file) made one READ round trip per 128 KiB
// whatever --max-read said. After the mount, root raises the mount's
// /sys/class/bdi/MAJOR:MINOR/read_ahead_kb to --max-read, so a readahead
// request carries up to --max-read. A small or random read is not made
// larger: the kernel reads ahead only for a sequential stream (and around
// an mmap fault, unless the reader asked for MADV_RANDOM).
#pragma once

#include <cstdint>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace clairfs::fuse {

class KernelReadahead {
public:
    // Once the mount exists and before it serves: sets the mount's
    // readahead at `abs_mountpoint` to `bytes` (rounded down to KiB) and
    // reads back what the kernel took. Logs once why not.
    void set(const std::string& abs_mountpoint, uint64_t bytes);
    // {"kb": what the kernel uses (null if unread), "asked_kb", "bdi",
    //  "reason": why it is not what was asked (null if it is)}.
    void status(nlohmann::json& out) const;

private:
    mutable std::mutex mu_; // leaf: status() reads what set() wrote
    std::string bdi_;
    uint64_t asked_kb_ = 0;
    int64_t kb_ = -1; // -1: unknown
    std::string why_not_;
};

} // namespace clairfs::fuse
