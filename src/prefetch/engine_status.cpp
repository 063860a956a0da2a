// SPDX-License-Identifier: MIT
// The engine's part of .clairfs/status (keys documented in clairfs-control(5)).
#include "active_job.hpp"
#include "clairfs/cache/blob_arena.hpp"
#include "clairfs/peer/peers.hpp"
#include "ssd_status.hpp"
#include "ssd_writer.hpp"

#include <nlohmann/json.hpp>

namespace clairfs::prefetch {

namespace {

nlohmann::json ranks_json(const track::Snapshot& snap) {
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
    return ranks;
}

// How each epoch begun was predicted: the draws found beyond the predicted
// ones (a random sampler on the global generator), or the seed + epoch a
// DistributedSampler used.
nlohmann::json epochs_json(const track::Snapshot& snap, bool chained) {
    auto out = nlohmann::json::array();
    if (snap.ranks.empty()) return out;
    for (const track::EpochNote& n : snap.ranks.front().history) {
        nlohmann::json e = {{"epoch", n.epoch}};
        if (n.tf_iterator) {
            // Keras >= 3.7's fit runs iterator 2e in epoch e; a loop, e.
            e["tf_iterator"] = *n.tf_iterator;
        } else if (n.seed_epoch) {
            e["seed_epoch"] = *n.seed_epoch;
        } else if (chained) {
            // In torch's 64-bit seed draws (a validation pass's base_seed is
            // one), and exactly, in the 32-bit words pre_draws counts.
            if (n.skipped_words % 2 == 0)
                e["draw_offset"] = n.skipped_words / 2;
            else
                e["draw_offset"] = static_cast<double>(n.skipped_words) / 2;
            e["draw_offset_words"] = n.skipped_words;
        }
        out.push_back(std::move(e));
    }
    return out;
}

nlohmann::json text_or_null(const std::string& s) {
    return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

// Which of a Keras validation_split's datasets a loader reads: "training"
// or "validation" (subset="both" registers one loader of each, over one
// root); null without a split.
nlohmann::json subset_json(const order::JobSpec& s) {
    if (s.framework != order::Framework::tensorflow) return nullptr;
    switch (s.subset) {
    case order::TfSubset::training:
    case order::TfSubset::both:
        return "training";
    case order::TfSubset::validation:
    case order::TfSubset::validation_of_both:
        return "validation";
    case order::TfSubset::none:
        break;
    }
    return nullptr;
}

// The deep search along the global chain: null if none ran.
nlohmann::json chain_search_json(const track::Snapshot& s) {
    if (!s.deep_searching && s.deep_range == 0) return nullptr;
    return {{"state", s.deep_searching ? "searching" : s.draw_offset ? "found" : "not found"},
            {"scanned", s.deep_scanned},
            {"words", s.deep_range},
            {"cpu_seconds", s.deep_cpu_s}};
}

} // namespace

void Engine::job_status(const Active& job, nlohmann::json& out) const {
    auto now = track::Clock::now();
    out = {{"id", job.id}, {"state", job.retired ? "retired" : "active"}, {"pids", job.pids()}};
    auto loaders = nlohmann::json::array();
    track::Mode mode = track::Mode::clairvoyant;
    std::string reason;
    for (const LoaderRun& l : job.loaders) {
        track::Snapshot s = l.tracker->snapshot(now);
        if (s.mode != track::Mode::clairvoyant && mode == track::Mode::clairvoyant) {
            mode = s.mode;
            reason = "loader '" + l.job->root + "': " + s.reason;
        }
        bool tf = l.job->spec.framework == order::Framework::tensorflow;
        loaders.push_back({{"root", l.job->root},
                           {"layout", l.ranges ? "ranges" : "files"},
                           {"framework", order::framework_name(l.job->spec.framework)},
                           {"sampler",
                            tf ? nlohmann::json(nullptr)
                               : nlohmann::json(order::sampler_name(l.job->spec.sampler))},
                           {"subset", subset_json(l.job->spec)},
                           {"mode", track::mode_name(s.mode)},
                           {"reason", text_or_null(s.reason)},
                           {"warning", text_or_null(s.warning)},
                           {"epoch", s.epoch},
                           {"match_rate", s.match_rate},
                           {"opens", s.opens},
                           {"matched", s.matched},
                           {"run_opens", s.run_opens},
                           {"run_matched", s.run_matched},
                           {"resyncs", s.resyncs},
                           {"held_for_search", s.searching},
                           {"draw_offset", s.draw_offset ? nlohmann::json(*s.draw_offset)
                                                         : nlohmann::json(nullptr)},
                           {"chain_search", chain_search_json(s)},
                           {"epochs", epochs_json(s, l.job->spec.sampler == order::SamplerKind::random &&
                                                         l.job->spec.generator ==
                                                             order::GeneratorKind::global)},
                           {"ranks", ranks_json(s)}});
    }
    out["mode"] = track::mode_name(mode);
    out["reason"] = text_or_null(reason);
    out["loaders"] = std::move(loaders);
}

// The top-level keys sum up every job: the mode is clairvoyant only while
// every loader is; epoch and ranks are the first job's first loader's.
void Engine::status(nlohmann::json& out) const {
    Jobs all;
    {
        std::lock_guard lk(job_mu_);
        all = *jobs_;
        all.insert(all.end(), retired_.begin(), retired_.end());
    }
    auto jobs = nlohmann::json::array();
    track::Mode mode = all.empty() ? track::Mode::unregistered : track::Mode::clairvoyant;
    std::string reason, warning;
    uint64_t opens = 0, matched = 0;
    for (const auto& j : all) {
        nlohmann::json js;
        job_status(*j, js);
        if (js["mode"] != "clairvoyant" && mode == track::Mode::clairvoyant) {
            mode = track::Mode::fallback;
            reason = "job " + j->id + ", " + js["reason"].get<std::string>();
        }
        for (const auto& l : js["loaders"]) {
            opens += l["opens"].get<uint64_t>();
            matched += l["matched"].get<uint64_t>();
            if (warning.empty() && l["warning"].is_string()) warning = l["warning"];
        }
        jobs.push_back(std::move(js));
    }
    out["mode"] = track::mode_name(mode);
    out["reason"] = text_or_null(reason);
    out["warning"] = text_or_null(warning);
    bool any = !all.empty();
    out["epoch"] = any ? jobs[0]["loaders"][0]["epoch"] : nlohmann::json(nullptr);
    out["match_rate"] = any ? nlohmann::json(opens ? static_cast<double>(matched) /
                                                         static_cast<double>(opens)
                                                   : 1.0)
                            : nlohmann::json(nullptr);
    out["opens"] = opens;
    out["matched"] = matched;
    out["other_opens"] = other_opens_.load(std::memory_order_relaxed);
    out["unattributed_opens"] = unattributed_.load(std::memory_order_relaxed);
    out["retired"] = retired_count_.load(std::memory_order_relaxed);

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
    {
        cache::RamTier::KernelStats k = ram_.kernel_stats();
        std::string stopped;
        {
            std::lock_guard lk(handover_mu_);
            stopped = handover_stopped_;
        }
        const char* state = handover_.load(std::memory_order_relaxed) ? "on"
                            : stopped.empty()                           ? "off"
                                                                        : "stopped";
        out["ram"]["kernel"] = {{"handover", state},
                                {"reason", stopped.empty() ? nlohmann::json(nullptr)
                                                           : nlohmann::json(stopped)},
                                {"files", k.files},
                                {"bytes", k.bytes},
                                {"handed_over", k.handed_over},
                                {"hits", k.hits},
                                {"misses", kernel_misses_.load(std::memory_order_relaxed)},
                                {"forgotten", kernel_forgets_.load(std::memory_order_relaxed)},
                                {"evicted", evictions_from_kernel_.load(std::memory_order_relaxed)}};
    }
    if (const cache::BlobArena* arena = cache::BlobArena::installed()) {
        cache::BlobArenaStats a = arena->stats();
        out["ram"]["arena"] = {
            {"capacity", a.capacity}, {"used", a.used}, {"overflows", a.overflows}};
    }
    // Opens a direct read would each have paid with a backing read, less
    // the backing reads clairfs made (prefetches and stage-in included).
    uint64_t tiered_opens = opens_.load(std::memory_order_relaxed);
    out["backing"]["saved_reads"] = tiered_opens > b.files ? tiered_opens - b.files : 0;
    // The same in bytes, taking each open as a read of the whole file.
    uint64_t open_bytes = open_bytes_.load(std::memory_order_relaxed);
    out["backing"]["saved_bytes"] = open_bytes > b.bytes ? open_bytes - b.bytes : 0;
    if (ssd_) ssd_status(out["ssd"]);
    if (chunks_) {
        chunks_->status(out["chunks"]);
        // A ranges job's samples pushed into the kernel's page cache.
        out["chunks"]["pushed"] = {{"samples", range_pushes_.load(std::memory_order_relaxed)},
                                   {"bytes", range_push_bytes_.load(std::memory_order_relaxed)},
                                   {"errors", range_push_errors_.load(std::memory_order_relaxed)},
                                   {"busy", range_push_busy_.load(std::memory_order_relaxed)}};
        // ... and dropped from it once read (Engine::drop_read_ranges).
        out["chunks"]["dropped"] = range_drops_.load(std::memory_order_relaxed);
    } else {
        out["chunks"] = nullptr;
    }
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
                       {"push_errors", push_errors_.load(std::memory_order_relaxed)},
                       {"scheduler_wakeups", wakeups_.load(std::memory_order_relaxed)},
                       {"open_pushes", open_pushes_.load(std::memory_order_relaxed)},
                       {"open_watched", open_watched_.load(std::memory_order_relaxed)},
                       {"open_kept", open_kept_.load(std::memory_order_relaxed)},
                       {"open_watch_every", watch_every_now()},
                       {"open_busy", open_busy_.load(std::memory_order_relaxed)},
                       {"close_drops", close_drops_.load(std::memory_order_relaxed)},
                       {"close_drop_errors", close_drop_errors_.load(std::memory_order_relaxed)}};
    {
        using OneCopy = EngineOptions::OneCopy;
        const OneCopy m = open_count_ ? opt_.one_copy : OneCopy::never;
        const uint64_t room = room_.load(std::memory_order_relaxed);
        out["prefetch"]["one_copy"] = {
            {"mode", config::when_name(m)},
            {"dropping", dropping_.load(std::memory_order_relaxed)},
            {"room_bytes", room == UINT64_MAX ? nlohmann::json(nullptr) : nlohmann::json(room)},
            {"switches", one_copy_switches_.load(std::memory_order_relaxed)}};
    }

    out["ranks"] = any ? jobs[0]["loaders"][0]["ranks"] : nlohmann::json::array();
    out["jobs"] = std::move(jobs);
    if (peers_) {
        peers_->status(out);
        auto h = homes();
        out["peers"]["homes"] = home_placement_name(h->by);
        char digest[17];
        snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(h->digest));
        out["peers"]["homes_digest"] = digest;
        out["peers"]["homed_files"] = h->here_files;
        out["peers"]["homed_bytes"] = h->here_bytes;
        out["peers"]["homed_held_bytes"] = homed_held_.load();
        out["peers"]["pinned"] = h->pin;
        double b = backing_rate_.seconds_per_file();
        out["peers"]["backing_seconds_per_file"] = b < 0 ? nlohmann::json(nullptr) : nlohmann::json(b);
        out["peers"]["chose_backing"] = chose_backing_.load();
        std::lock_guard lk(agree_mu_);
        out["peers"]["agreement"] = agreement_.empty() ? nlohmann::json(nullptr)
                                                       : nlohmann::json(agreement_);
    } else {
        out["peers"] = nullptr;
    }
}

void Engine::ssd_status(nlohmann::json& out) const {
    out = ssd_tier_status(*ssd_, "files", writer_.get());
    out["misses"] = ssd_->stats().misses;
}

} // namespace clairfs::prefetch
