// SPDX-License-Identifier: MIT
#include "stager.hpp"

#include "clairfs/log.hpp"
#include "clairfs/prefetch/chunk_store.hpp"
#include "clairfs/prefetch/fetch_pool.hpp"
#include "clairfs/sys/contained.hpp"
#include "clairfs/sys/normal_thread.hpp"
#include "ssd_writer.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <pthread.h>
#include <string_view>

namespace clairfs::prefetch {

using namespace std::chrono_literals;

void Stager::start(StageTiers tiers) {
    tiers_ = tiers;
    thread_ = sys::normal_thread([this] { loop(); });
}

void Stager::request() {
    {
        std::lock_guard lk(mu_);
        requested_ = true;
    }
    cv_.notify_all();
}

void Stager::stop() {
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

// The tiers' counters are read before the lock: mu_ is a leaf.
StageStatus Stager::status() const {
    uint64_t held = target_bytes();
    const char* target = this->target().name();
    StageStatus s;
    std::chrono::steady_clock::time_point started;
    uint64_t at_start;
    {
        std::lock_guard lk(mu_);
        s = stage_;
        started = started_;
        at_start = bytes_at_start_;
    }
    s.target = !tiers_.ssd && tiers_.chunks && tiers_.chunks->has_ssd() ? "ssd" : target;
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

void Stager::status(nlohmann::json& out) const {
    StageStatus st = status();
    out["stage"] = {{"state", st.state},
                    {"target", st.target},
                    {"done_bytes", st.done_bytes},
                    {"total_bytes", st.total_bytes},
                    {"rate_bytes_per_second", st.rate},
                    {"eta_seconds", st.eta_seconds < 0 ? nlohmann::json(nullptr)
                                                       : nlohmann::json(st.eta_seconds)}};
}

// The tier a stage-in fills: the SSD when there is one (RAM then only holds
// what the prefetcher puts there), else RAM.
const cache::Tier& Stager::target() const {
    return tiers_.ssd ? *tiers_.ssd : static_cast<const cache::Tier&>(*tiers_.ram);
}

// With chunks on an SSD tier of their own, theirs count too.
uint64_t Stager::target_bytes() const {
    return target().stats().bytes + (tiers_.chunks ? tiers_.chunks->ssd_bytes() : 0);
}

bool Stager::staged(index::NodeId id) const {
    return target().contains(id) || (tiers_.writer && tiers_.writer->pending(id));
}

void Stager::loop() {
    pthread_setname_np(pthread_self(), "clairfs-stage");
    std::unique_lock lk(mu_);
    while (true) {
        cv_.wait(lk, [&] { return requested_ || stopping_; });
        if (stopping_) return;
        requested_ = false;
        lk.unlock();
        if (!sys::contained("a stage-in pass", [this] { pass(); }).empty()) {
            std::lock_guard failed(mu_);
            stage_.state = "incomplete";
        }
        lk.lock();
    }
}

// Stops early, leaving the state as it is, when asked to stop or to begin
// again (a new registration changes the order).
bool Stager::interrupted() const {
    std::lock_guard lk(mu_);
    return stopping_ || requested_;
}

void Stager::pause(std::chrono::milliseconds d) {
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, d, [&] { return stopping_ || requested_; });
}

void Stager::pass() {
    std::vector<index::NodeId> order = predicted_();
    // Files held by chunk, when their chunks have an SSD tier: RAM alone
    // could not keep them, and a pass there would evict what readers use.
    ChunkStore* chunks = tiers_.chunks && tiers_.chunks->has_ssd() ? tiers_.chunks : nullptr;
    const uint64_t total = begin(order, chunks);
    bool out_of_room = false;
    if (!stage_files(order, out_of_room)) return;
    if (chunks) {
        ChunksStaged end = stage_chunks(*chunks);
        if (end == ChunksStaged::interrupted) return;
        out_of_room = out_of_room || end == ChunksStaged::full;
    }
    if (!settle(total, chunks)) return;
    finish(total, out_of_room, chunks != nullptr);
}

uint64_t Stager::begin(const std::vector<index::NodeId>& order, const ChunkStore* chunks) {
    uint64_t total = 0;
    for (index::NodeId id : order) total += index_.node(id).size;
    if (chunks) total += chunks->map().bytes();
    uint64_t at_start = std::min(target_bytes(), total);
    {
        std::lock_guard lk(mu_);
        stage_.state = "running";
        stage_.total_bytes = total;
        started_ = std::chrono::steady_clock::now();
        bytes_at_start_ = at_start;
    }
    LOG_INFO("stage-in: %zu files, %.2f GB into %s", order.size() + (chunks ? chunks->map().files() : 0),
             static_cast<double>(total) / 1e9, tiers_.ssd || chunks ? "the SSD tier" : "RAM");
    return total;
}

// Whole files, in order, as far as the target tier's room goes: false if
// interrupted.
bool Stager::stage_files(const std::vector<index::NodeId>& order, bool& out_of_room) {
    SsdWriter* writer = tiers_.writer;
    FetchPool& pool = *tiers_.pool;
    uint64_t writer_bound = writer ? std::max<uint64_t>(tiers_.mem / 16, 32 << 20) : 0;
    uint64_t planned = target_bytes();
    for (index::NodeId id : order) {
        if (interrupted()) return false;
        if (staged(id)) continue;
        uint64_t size = index_.node(id).size;
        if (stage_room(target(), writer, planned) < size) {
            out_of_room = true;
            continue; // a smaller file may still fit
        }
        planned += size;
        // Never outrun the SSD writes: a fetch whose write is then skipped
        // would be a backing read for nothing.
        while (writer && writer->stats().pending_bytes > writer_bound) {
            if (interrupted()) return false;
            pause(5ms);
        }
        while (!pool.background(id, [&] { return staged(id); })) {
            if (pool.busy(id) || staged(id)) break; // on its way anyway
            if (interrupted()) return false;
            pause(2ms);
        }
    }
    return true;
}

// The last fetches and writes land: waits until the tier holds it all, or
// nothing is queued and the tier stopped growing. False if interrupted.
bool Stager::settle(uint64_t total, ChunkStore* chunks) {
    for (uint64_t last = UINT64_MAX, still = 0;;) {
        if (interrupted()) return false;
        uint64_t now = target_bytes();
        if (now >= total) return true;
        bool idle = tiers_.pool->background_idle() &&
                    (!tiers_.writer || tiers_.writer->stats().pending_bytes == 0) &&
                    (!chunks || chunks->stage_idle());
        still = idle && now == last ? still + 1 : 0;
        if (still >= 5) return true;
        last = now;
        pause(20ms);
    }
}

void Stager::finish(uint64_t total, bool out_of_room, bool chunks) {
    uint64_t held = target_bytes();
    const char* state = held >= total ? "done" : out_of_room ? "full" : "incomplete";
    {
        std::lock_guard lk(mu_);
        stage_.state = state;
    }
    LOG_INFO("stage-in %s: %.2f of %.2f GB in %s", state,
             static_cast<double>(std::min(held, total)) / 1e9, static_cast<double>(total) / 1e9,
             tiers_.ssd || chunks ? "the SSD tier" : "RAM");
}

// Every chunk into the chunks' SSD tier, file by file in index order, as
// many as its room takes.
Stager::ChunksStaged Stager::stage_chunks(ChunkStore& chunks) {
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
