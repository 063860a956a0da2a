// SPDX-License-Identifier: MIT
// The engine's part of .clairfs/status (keys documented in clairfs-control(5)).
#include "active_job.hpp"
#include "clairfs/cache/blob_arena.hpp"
#include "ssd_writer.hpp"

#include <nlohmann/json.hpp>

namespace clairfs::prefetch {

void Engine::status(nlohmann::json& out) const {
    auto a = active();
    track::Snapshot snap;
    if (a) snap = a->tracker->snapshot(track::Clock::now());
    out["mode"] = track::mode_name(a ? snap.mode : track::Mode::unregistered);
    out["reason"] = snap.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(snap.reason);
    out["epoch"] = a ? nlohmann::json(snap.epoch) : nlohmann::json(nullptr);
    out["match_rate"] = a ? nlohmann::json(snap.match_rate) : nlohmann::json(nullptr);
    out["opens"] = snap.opens;
    out["matched"] = snap.matched;

    cache::BackingStats b = backing_.stats();
    out["backing"] = {{"reads", b.reads},
                      {"bytes", b.bytes},
                      {"files", b.files},
                      {"errors", b.errors},
                      {"stale", b.stale}};
    cache::TierStats r = ram_.stats();
    out["ram"] = {{"bytes", r.bytes},       {"capacity", r.capacity},
                  {"files", r.entries},     {"hits", r.hits},
                  {"misses", r.misses},     {"evictions", r.evictions},
                  {"rejected", r.rejected}, {"max_file", opt_.mem ? opt_.max_file : 0}};
    if (const cache::BlobArena* arena = cache::BlobArena::installed()) {
        cache::BlobArenaStats a = arena->stats();
        out["ram"]["arena"] = {
            {"capacity", a.capacity}, {"used", a.used}, {"overflows", a.overflows}};
    }
    // Opens a direct read would each have paid with a backing read, less
    // the backing reads clairfs made (prefetches and stage-in included).
    uint64_t opens = opens_.load(std::memory_order_relaxed);
    out["backing"]["saved_reads"] = opens > b.files ? opens - b.files : 0;
    if (ssd_) ssd_status(out["ssd"]);
    StageStatus st = stage_status();
    out["stage"] = {{"state", st.state},
                    {"target", st.target},
                    {"done_bytes", st.done_bytes},
                    {"total_bytes", st.total_bytes},
                    {"rate_bytes_per_second", st.rate},
                    {"eta_seconds", st.eta_seconds < 0 ? nlohmann::json(nullptr)
                                                       : nlohmann::json(st.eta_seconds)}};
    FetchStats f = pool_ ? pool_->stats() : FetchStats{};
    out["stall_seconds"] = static_cast<double>(f.stall_ns) / 1e9;
    // Reads answered EIO after --io-timeout: fetches waited on, and reads of
    // files the tiers do not take.
    out["backing"]["io_timeouts"] = f.timeouts + backing_calls_.timeouts();
    out["prefetch"] = {{"lead", lead_.load(std::memory_order_relaxed)},
                       {"queued", f.queued},
                       {"running", f.running},
                       {"prefetched", f.prefetched},
                       {"demand_fetches", f.demand},
                       {"joined", f.joined},
                       {"pushed", pushes_.load(std::memory_order_relaxed)},
                       {"push_skipped", push_skipped_.load(std::memory_order_relaxed)},
                       {"page_drops", drops_.load(std::memory_order_relaxed)},
                       {"page_drop_errors", drop_errors_.load(std::memory_order_relaxed)},
                       {"push_errors", push_errors_.load(std::memory_order_relaxed)}};

    auto ranks = nlohmann::json::array();
    for (const auto& rp : snap.ranks) {
        uint64_t samples = rp.current ? rp.current->size() : 0;
        ranks.push_back(
            {{"rank", rp.rank},
             {"epoch", rp.current ? nlohmann::json(rp.current->epoch) : nlohmann::json(nullptr)},
             {"position", rp.frontier},
             {"opened", rp.opened},
             {"finished", rp.finished},
             {"samples", samples},
             {"samples_per_second",
              rp.epoch_seconds > 0 ? static_cast<double>(rp.opened) / rp.epoch_seconds : 0.0}});
    }
    out["ranks"] = std::move(ranks);
}

void Engine::ssd_status(nlohmann::json& out) const {
    cache::TierStats t = ssd_->stats();
    cache::TierHealth h = ssd_->health();
    SsdWriterStats w = writer_ ? writer_->stats() : SsdWriterStats{};
    out = {{"enabled", h.enabled},
           {"error", h.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(h.error)},
           {"bytes", t.bytes},
           {"capacity", t.capacity},
           {"files", t.entries},
           {"hits", t.hits},
           {"misses", t.misses},
           {"errors", h.errors},
           {"reused", h.reused},
           {"invalidated", h.invalidated},
           {"written", w.written},
           {"refused", w.refused},
           {"skipped", w.skipped},
           {"pending_bytes", w.pending_bytes}};
}

} // namespace clairfs::prefetch
