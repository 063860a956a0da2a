// SPDX-License-Identifier: MIT
// The engine's part of .clairfs/status (keys documented in clairfs-control(5)).
#include "clairfs/prefetch/engine.hpp"
#include "job_table.hpp"
#include "clairfs/cache/blob_arena.hpp"
#include "chunks/range_jobs.hpp"
#include "page_cache.hpp"
#include "peer_homes.hpp"
#include "scheduler.hpp"
#include "stager.hpp"
#include "kernel_files.hpp"
#include "ssd_status.hpp"
#include "ssd_writer.hpp"

#include <nlohmann/json.hpp>

namespace clairfs::prefetch {

void Engine::status(nlohmann::json& out) const {
    table_->status(out);
    backing_status(out["backing"]);
    ram_status(out["ram"]);
    if (ssd_) ssd_status(out["ssd"]);
    if (chunks_) {
        chunks_->status(out["chunks"]);
        ranges_->status(out["chunks"]);
    } else {
        out["chunks"] = nullptr;
    }
    stager_->status(out);
    FetchStats f = pool_ ? pool_->stats() : FetchStats{};
    out["stall_seconds"] = static_cast<double>(f.stall_ns) / 1e9;
    // Reads answered EIO after --io-timeout: fetches waited on, and reads of
    // files the tiers do not take.
    out["backing"]["io_timeouts"] = f.timeouts + backing_calls_.timeouts();
    out["prefetch"] = {{"queued", f.queued},
                       {"running", f.running},
                       {"prefetched", f.prefetched},
                       {"demand_fetches", f.demand},
                       {"joined", f.joined}};
    sched_->status(out["prefetch"]);
    page_->status(out);
    group_->status(out);
}

void Engine::backing_status(nlohmann::json& out) const {
    cache::BackingStats b = backing_.stats();
    out = {{"reads", b.reads}, {"bytes", b.bytes}, {"files", b.files}, {"errors", b.errors},
           {"stale", b.stale}};
    // Opens a direct read would each have paid with a backing read, less
    // the backing reads clairfs made (prefetches and stage-in included).
    uint64_t tiered_opens = page_->tiered_opens();
    out["saved_reads"] = tiered_opens > b.files ? tiered_opens - b.files : 0;
    // The same in bytes, taking each open as a read of the whole file.
    uint64_t open_bytes = page_->tiered_open_bytes();
    out["saved_bytes"] = open_bytes > b.bytes ? open_bytes - b.bytes : 0;
}

void Engine::ram_status(nlohmann::json& out) const {
    cache::TierStats r = ram_.stats();
    out = {{"bytes", r.bytes},       {"capacity", r.capacity},
           {"files", r.entries},     {"hits", r.hits},
           {"misses", r.misses},     {"evictions", r.evictions},
           {"rejected", r.rejected}, {"max_file", opt_.mem ? opt_.max_file : 0}};
    if (const cache::BlobArena* arena = cache::BlobArena::installed()) {
        cache::BlobArenaStats a = arena->stats();
        out["arena"] = {{"capacity", a.capacity}, {"used", a.used}, {"overflows", a.overflows}};
    }
}

void Engine::ssd_status(nlohmann::json& out) const {
    out = ssd_tier_status(*ssd_, "files", writer_.get());
    out["misses"] = ssd_->stats().misses;
    kernel_->status(out);
}

} // namespace clairfs::prefetch
