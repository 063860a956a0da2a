// SPDX-License-Identifier: MIT
// Stage-in: copies the whole dataset into the node's tiers in the
// background (clairfs mount --stage, clairfs stage), in the order the
// registered job will first open the files when there is one, so the copy
// and the job's first epoch help each other instead of competing; in index
// order otherwise. Its fetches wait behind every demand read and prefetch.
#include "active_job.hpp"
#include "timeline.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/contained.hpp"
#include "ssd_writer.hpp"

#include <algorithm>
#include <pthread.h>
#include <sys/stat.h>

namespace clairfs::prefetch {

using namespace std::chrono_literals;

void Engine::stage() {
    {
        std::lock_guard lk(stage_mu_);
        stage_requested_ = true;
    }
    stage_cv_.notify_all();
}

// The tiers' counters are read before the lock: stage_mu_ is a leaf.
StageStatus Engine::stage_status() const {
    uint64_t held = target_bytes();
    const char* target = stage_target().name();
    StageStatus s;
    std::chrono::steady_clock::time_point started;
    uint64_t at_start;
    {
        std::lock_guard lk(stage_mu_);
        s = stage_;
        started = stage_started_;
        at_start = stage_bytes_at_start_;
    }
    s.target = !ssd_ && chunks_ && chunks_->has_ssd() ? "ssd" : target;
    if (s.total_bytes == 0) return s;
    s.done_bytes = std::min(held, s.total_bytes);
    if (std::string_view(s.state) == "running") {
        double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        uint64_t gained = s.done_bytes > at_start ? s.done_bytes - at_start : 0;
        s.rate = secs > 0 ? static_cast<double>(gained) / secs : 0;
        s.eta_seconds =
            s.rate > 0 ? static_cast<double>(s.total_bytes - s.done_bytes) / s.rate : -1;
    }
    return s;
}

// The tier a stage-in fills: the SSD when there is one (RAM then only holds
// what the prefetcher puts there), else RAM.
const cache::Tier& Engine::stage_target() const {
    return ssd_ ? static_cast<const cache::Tier&>(*ssd_) : ram_;
}

// With chunks on an SSD tier of their own, theirs count too.
uint64_t Engine::target_bytes() const {
    return stage_target().stats().bytes + (chunks_ ? chunks_->ssd_bytes() : 0);
}

bool Engine::staged(index::NodeId id) const {
    return stage_target().contains(id) || (writer_ && writer_->pending(id));
}

uint64_t Engine::stage_room(uint64_t planned) const {
    return prefetch::stage_room(stage_target(), writer_.get(), planned);
}

// Registered: each local rank's future, ranks taking turns, then every file
// the prediction does not reach; unregistered: every file in index order.
std::vector<index::NodeId> Engine::stage_order() {
    std::vector<index::NodeId> out;
    std::vector<uint8_t> seen(index_.size(), 0);
    auto jobs = this->jobs();
    std::vector<std::vector<track::Snapshot>> snaps;
    std::vector<JobView> views;
    snapshot_jobs(*jobs, snaps, views);
    Timeline future(views);
    for (index::NodeId id; future.next(id);) {
        if (seen[id]) continue;
        seen[id] = 1;
        // The future also names files the tiers do not take (too large).
        if (tiered(index_.node(id))) out.push_back(id);
    }
    for (index::NodeId id = 0; id < index_.size(); ++id) {
        const index::Node& n = index_.node(id);
        if (!seen[id] && S_ISREG(n.mode) && tiered(n)) out.push_back(id);
    }
    return out;
}

void Engine::stage_loop() {
    pthread_setname_np(pthread_self(), "clairfs-stage");
    std::unique_lock lk(stage_mu_);
    while (true) {
        stage_cv_.wait(lk, [&] { return stage_requested_ || stage_stopping_; });
        if (stage_stopping_) return;
        stage_requested_ = false;
        lk.unlock();
        if (!sys::contained("a stage-in pass", [this] { stage_pass(); }).empty()) {
            std::lock_guard failed(stage_mu_);
            stage_.state = "incomplete";
        }
        lk.lock();
    }
}

void Engine::stage_pass() {
    std::vector<index::NodeId> order = stage_order();
    uint64_t total = 0;
    for (index::NodeId id : order) total += index_.node(id).size;
    // Files held by chunk, when their chunks have an SSD tier: RAM alone
    // could not keep them, and a pass there would evict what readers use.
    ChunkStore* chunks = chunks_ && chunks_->has_ssd() ? chunks_.get() : nullptr;
    if (chunks) total += chunks->map().bytes();
    uint64_t at_start = std::min(target_bytes(), total);
    {
        std::lock_guard lk(stage_mu_);
        stage_.state = "running";
        stage_.total_bytes = total;
        stage_started_ = std::chrono::steady_clock::now();
        stage_bytes_at_start_ = at_start;
    }
    LOG_INFO("stage-in: %zu files, %.2f GB into %s", order.size() + (chunks ? chunks->map().files() : 0),
             static_cast<double>(total) / 1e9, ssd_ || chunks ? "the SSD tier" : "RAM");
    // Stops early, leaving the state as it is, when asked to stop or to
    // begin again (a new registration changes the order).
    auto interrupted = [&] {
        std::lock_guard lk(stage_mu_);
        return stage_stopping_ || stage_requested_;
    };
    auto pause = [&](std::chrono::milliseconds d) {
        std::unique_lock lk(stage_mu_);
        stage_cv_.wait_for(lk, d, [&] { return stage_stopping_ || stage_requested_; });
    };
    uint64_t writer_bound = writer_ ? std::max<uint64_t>(opt_.mem / 16, 32 << 20) : 0;
    bool out_of_room = false;
    uint64_t planned = target_bytes();
    for (index::NodeId id : order) {
        if (interrupted()) return;
        if (staged(id)) continue;
        uint64_t size = index_.node(id).size;
        if (stage_room(planned) < size) {
            out_of_room = true;
            continue; // a smaller file may still fit
        }
        planned += size;
        // Never outrun the SSD writes: a fetch whose write is then skipped
        // would be a backing read for nothing.
        while (writer_ && writer_->stats().pending_bytes > writer_bound) {
            if (interrupted()) return;
            pause(5ms);
        }
        while (!pool_->background(id, [&] { return staged(id); })) {
            if (pool_->busy(id) || staged(id)) break; // on its way anyway
            if (interrupted()) return;
            pause(2ms);
        }
    }
    if (chunks) {
        ChunksStaged end = stage_chunks(*chunks, interrupted, pause);
        if (end == ChunksStaged::interrupted) return;
        out_of_room = out_of_room || end == ChunksStaged::full;
    }
    // The last fetches and writes land: wait until the tier holds it all,
    // or nothing is queued and the tier stopped growing.
    for (uint64_t last = UINT64_MAX, still = 0;;) {
        if (interrupted()) return;
        uint64_t now = target_bytes();
        if (now >= total) break;
        bool idle = pool_->background_idle() &&
                    (!writer_ || writer_->stats().pending_bytes == 0) &&
                    (!chunks || chunks->stage_idle());
        still = idle && now == last ? still + 1 : 0;
        if (still >= 5) break;
        last = now;
        pause(20ms);
    }
    uint64_t held = target_bytes();
    const char* state = held >= total ? "done" : out_of_room ? "full" : "incomplete";
    {
        std::lock_guard lk(stage_mu_);
        stage_.state = state;
    }
    LOG_INFO("stage-in %s: %.2f of %.2f GB in %s", state,
             static_cast<double>(std::min(held, total)) / 1e9, static_cast<double>(total) / 1e9,
             ssd_ || chunks ? "the SSD tier" : "RAM");
}

// Every chunk into the chunks' SSD tier, file by file in index order, as
// many as its room takes.
Engine::ChunksStaged Engine::stage_chunks(ChunkStore& chunks,
                                          const std::function<bool()>& interrupted,
                                          const std::function<void(std::chrono::milliseconds)>& pause) {
    const ChunkMap& map = chunks.map();
    const uint64_t writer_bound = 32 << 20;
    uint64_t planned = chunks.ssd_bytes();
    for (ChunkId id = 0; id < map.chunks(); ++id) {
        if (interrupted()) return ChunksStaged::interrupted;
        if (chunks.staged(id)) continue;
        uint32_t len = map.range(id).length;
        // Chunks are of one size: none after it would fit either.
        if (chunks.ssd_room(planned) < len) return ChunksStaged::full;
        planned += len;
        while (!chunks.stage(id)) {
            if (interrupted()) return ChunksStaged::interrupted;
            pause(2ms);
        }
        // Never outrun the SSD writes, as for whole files.
        while (chunks.ssd_bytes() + writer_bound < planned && !chunks.stage_idle()) {
            if (interrupted()) return ChunksStaged::interrupted;
            pause(5ms);
        }
    }
    return ChunksStaged::all;
}

} // namespace clairfs::prefetch
