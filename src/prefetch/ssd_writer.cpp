// SPDX-License-Identifier: MIT
#include "ssd_writer.hpp"

#include "clairfs/sys/contained.hpp"
#include "clairfs/sys/normal_thread.hpp"

#include <algorithm>
#include <pthread.h>

namespace clairfs::prefetch {

uint64_t stage_room(const cache::Tier& tier, const SsdWriter* writer, uint64_t planned) {
    cache::TierStats t = tier.stats();
    uint64_t pending = writer ? writer->stats().pending_bytes : 0;
    uint64_t used = std::max(t.bytes + pending, planned);
    return t.capacity > used ? t.capacity - used : 0;
}

SsdWriter::SsdWriter(cache::Tier& ssd, uint64_t max_pending_bytes)
    : ssd_(ssd), max_pending_(max_pending_bytes) {}

void SsdWriter::start() {
    thread_ = sys::normal_thread([this] { run(); });
}

SsdWriter::~SsdWriter() {
    stop({});
}

bool SsdWriter::stop(std::chrono::milliseconds bound) {
    if (!thread_.joinable()) return true;
    std::unique_lock lk(mu_);
    stopping_ = true;
    cv_.notify_all();
    auto out = [&] { return exited_; };
    if (bound.count() > 0) {
        if (!cv_.wait_for(lk, bound, out)) return false;
    } else {
        cv_.wait(lk, out);
    }
    lk.unlock();
    thread_.join();
    return true;
}

bool SsdWriter::enqueue(index::NodeId id, cache::BlobRef blob) {
    if (!blob) return false;
    std::lock_guard lk(mu_);
    if (stopping_ || pending_.contains(id)) return false;
    // One file is always let through, so a file larger than the bound can
    // still reach the SSD when nothing else waits.
    if (stats_.pending_bytes > 0 && stats_.pending_bytes + blob->size > max_pending_) {
        ++stats_.skipped;
        return false;
    }
    stats_.pending_bytes += blob->size;
    pending_.emplace(id, blob);
    queue_.emplace_back(id, std::move(blob));
    cv_.notify_one();
    return true;
}

bool SsdWriter::pending(index::NodeId id) const {
    std::lock_guard lk(mu_);
    return pending_.contains(id);
}

cache::BlobRef SsdWriter::peek(index::NodeId id) const {
    std::lock_guard lk(mu_);
    auto it = pending_.find(id);
    return it == pending_.end() ? nullptr : it->second;
}

SsdWriterStats SsdWriter::stats() const {
    std::lock_guard lk(mu_);
    return stats_;
}

void SsdWriter::run() {
    pthread_setname_np(pthread_self(), "clairfs-ssdw");
    for (;;) {
        std::pair<index::NodeId, cache::BlobRef> job;
        {
            std::unique_lock lk(mu_);
            cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) { // stopping, and everything is written
                exited_ = true;
                cv_.notify_all();
                return;
            }
            job = std::move(queue_.front());
            queue_.pop_front();
        }
        // A write that fails inside clairfs is a refused one: the file stays
        // in RAM or is read again from the backing store.
        bool ok = false;
        sys::contained("an SSD write", [&] {
            ok = ssd_.contains(job.first) || ssd_.put(job.first, job.second);
        });
        std::lock_guard lk(mu_);
        ++(ok ? stats_.written : stats_.refused);
        stats_.pending_bytes -= job.second->size;
        pending_.erase(job.first);
    }
}

} // namespace clairfs::prefetch
