// SPDX-License-Identifier: MIT
// Record files the kernel reads whole from the chunks' SSD tier (FUSE
// passthrough). The tier keeps a record file's chunks in one sparse file
// of the record file's size, each at its own offset (SsdOptions::place),
// so once every chunk of a file is there and verified (--ssd-check once:
// written in this mount) that file is handed to the kernel at the record
// file's open, and no READ of it reaches the daemon.
//
// Only a file its reader read as a stream: there the kernel's own
// readahead of the SSD file serves the reader as the chunks' read-ahead
// did. A reader that jumps about (an LMDB's page faults, random preads)
// keeps the chunks' path: their prefetch of the samples it touches next
// is what no kernel readahead matches, and under a memory budget it is
// what keeps such a job ahead of a local copy.
#pragma once

#include "clairfs/cache/ssd_tier.hpp"
#include "clairfs/index/index.hpp"
#include "clairfs/prefetch/chunk_map.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>

namespace clairfs::prefetch {

class KernelShards {
public:
    KernelShards(const ChunkMap& map, const index::Index& idx);
    // Before the tier is shared: the chunks' SSD tier (null: never on).
    void attach(cache::SsdTier* ssd) { ssd_ = ssd; }
    // At FUSE init: whether passthrough is on, and who is told of a record
    // file one of whose chunks left the tier (its kept backing id).
    void turn_on(bool on, std::function<void(index::NodeId)> dropped);
    bool on() const { return on_.load(std::memory_order_relaxed); }
    // From each READ of a covered file: whether it continued a stream
    // (sequential, not a small READ short of the file's end).
    void saw_read(size_t file_index, bool stream) {
        streamed_[file_index].store(stream, std::memory_order_relaxed);
    }
    // At an OPEN: a descriptor of the record file's SSD file for the
    // kernel, or -errno (-ENOTSUP while off, -EAGAIN for a file not read
    // as a stream, SsdTier::open_whole_for_kernel's otherwise).
    int open(index::NodeId node);
    // The OPEN's outcome: handed over, or refused by the kernel.
    void count(index::NodeId node, bool handed);
    // Whether the kernel read the file itself at its last open, and no
    // chunk of it has left the tier since: its first chunks need no
    // prefetch into RAM (prefetch_shard_heads).
    bool reads(index::NodeId node) const;
    // Whether the kernel reads the file itself at its next open, as far as
    // can be told before it: it did at its last open, or (--ssd-check
    // once) it was read as a stream and every chunk is in the tier and
    // verified.
    bool will_read(index::NodeId node) const;
    // A file the kernel reads itself, due to open soon: its first `chunks`
    // chunks read ahead into the page cache from its SSD file (--ssd-check
    // once only: under resident the file is not the kernel's), once per
    // open, so that its reader's first reads wait for no disk.
    void read_ahead(index::NodeId node, uint32_t chunks);
    // Key "kernel" of status's "chunks".
    void status(nlohmann::json& out) const;

private:
    const ChunkMap& map_;
    const index::Index& index_;
    cache::SsdTier* ssd_ = nullptr;
    std::atomic<bool> on_{false};
    // Per covered file (ChunkMap::file_index): read as a stream lately;
    // handed to the kernel at its last open; its head read ahead since.
    std::unique_ptr<std::atomic<bool>[]> streamed_, handed_, ahead_;
    std::atomic<uint64_t> opens_{0}, refused_{0}, not_whole_{0}, not_streamed_{0}, read_ahead_{0};
};

} // namespace clairfs::prefetch
