// SPDX-License-Identifier: MIT
#include "kernel_shards.hpp"

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

namespace clairfs::prefetch {

KernelShards::KernelShards(const ChunkMap& map, const index::Index& idx)
    : map_(map), index_(idx),
      streamed_(std::make_unique<std::atomic<bool>[]>(std::max<size_t>(map.files(), 1))),
      handed_(std::make_unique<std::atomic<bool>[]>(std::max<size_t>(map.files(), 1))),
      ahead_(std::make_unique<std::atomic<bool>[]>(std::max<size_t>(map.files(), 1))) {}

void KernelShards::turn_on(bool on, std::function<void(index::NodeId)> dropped) {
    if (!ssd_) return;
    // A chunk that leaves takes its file's kept backing id with it: the
    // tier unlinks the shared file whole, and the next open finds the
    // file not whole and serves it by chunk again.
    if (on)
        ssd_->set_drop_listener([this, dropped = std::move(dropped)](index::NodeId chunk) {
            const index::NodeId node = map_.range(chunk).node;
            handed_[map_.file_index(chunk)].store(false, std::memory_order_relaxed);
            if (dropped) dropped(node);
        });
    on_.store(on, std::memory_order_relaxed);
}

int KernelShards::open(index::NodeId node) {
    if (!on() || !map_.covers(node)) return -ENOTSUP;
    const index::Node& n = index_.node(node);
    if (n.size == 0) return -ENOENT;
    const ChunkId first = map_.chunk_at(node, 0), last = map_.chunk_at(node, n.size - 1);
    if (!streamed_[map_.file_index(first)].load(std::memory_order_relaxed)) {
        not_streamed_.fetch_add(1, std::memory_order_relaxed);
        return -EAGAIN;
    }
    int fd = ssd_->open_whole_for_kernel(first, last);
    if (fd < 0) not_whole_.fetch_add(1, std::memory_order_relaxed);
    return fd;
}

void KernelShards::count(index::NodeId node, bool handed) {
    (handed ? opens_ : refused_).fetch_add(1, std::memory_order_relaxed);
    if (!map_.covers(node)) return;
    const size_t f = map_.file_index(map_.chunk_at(node, 0));
    handed_[f].store(handed, std::memory_order_relaxed);
    ahead_[f].store(false, std::memory_order_relaxed); // read ahead again before its next open
}

bool KernelShards::will_read(index::NodeId node) const {
    if (reads(node)) return true;
    // Under resident a file is the kernel's only while the checked pages
    // stay, which no look ahead can tell.
    if (!on() || !ssd_->checks_once() || !map_.covers(node) || index_.node(node).size == 0)
        return false;
    ChunkId c = map_.chunk_at(node, 0);
    if (!streamed_[map_.file_index(c)].load(std::memory_order_relaxed)) return false;
    for (; c != no_chunk; c = map_.next_in_file(c))
        if (!ssd_->verified(c)) return false;
    return true;
}

void KernelShards::read_ahead(index::NodeId node, uint32_t chunks) {
    if (!ssd_->checks_once() || !will_read(node)) return;
    ChunkId c = map_.chunk_at(node, 0);
    if (ahead_[map_.file_index(c)].exchange(true, std::memory_order_relaxed)) return;
    uint32_t done = 0;
    for (uint32_t k = 0; k < chunks && c != no_chunk; ++k, c = map_.next_in_file(c))
        done += ssd_->read_ahead(c) == 0 ? 1 : 0;
    if (done) read_ahead_.fetch_add(1, std::memory_order_relaxed);
}

bool KernelShards::reads(index::NodeId node) const {
    return on() && map_.covers(node) &&
           handed_[map_.file_index(map_.chunk_at(node, 0))].load(std::memory_order_relaxed);
}

void KernelShards::status(nlohmann::json& out) const {
    out["kernel"] = {{"on", on()},
                     {"opens", opens_.load(std::memory_order_relaxed)},
                     {"refused", refused_.load(std::memory_order_relaxed)},
                     {"not_whole_opens", not_whole_.load(std::memory_order_relaxed)},
                     {"not_streamed_opens", not_streamed_.load(std::memory_order_relaxed)},
                     {"read_ahead", read_ahead_.load(std::memory_order_relaxed)}};
}

} // namespace clairfs::prefetch
