// SPDX-License-Identifier: MIT
// The jobs' part of .clairfs/status (keys documented in clairfs-control(5)).
#include "job_table.hpp"

#include <nlohmann/json.hpp>

namespace clairfs::prefetch {

namespace {

// What the top-level keys take from a job: its mode (clairvoyant while
// every loader is), and its first loader's epoch and ranks.
struct JobSummary {
    track::Mode mode = track::Mode::clairvoyant;
    std::string reason, warning;
    uint64_t opens = 0, matched = 0;
    nlohmann::json epoch, ranks;
};

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

// One job's status, and its summary for the top-level keys.
JobSummary job_status(const ActiveJob& job, nlohmann::json& out) {
    auto now = track::Clock::now();
    out = {{"id", job.id}, {"state", job.retired ? "retired" : "active"}, {"pids", job.pids()}};
    auto loaders = nlohmann::json::array();
    JobSummary sum;
    for (const LoaderRun& l : job.loaders) {
        track::Snapshot s = l.tracker->snapshot(now);
        if (s.mode != track::Mode::clairvoyant && sum.mode == track::Mode::clairvoyant) {
            sum.mode = s.mode;
            sum.reason = "loader '" + l.job->root + "': " + s.reason;
        }
        sum.opens += s.opens;
        sum.matched += s.matched;
        if (sum.warning.empty()) sum.warning = s.warning;
        if (loaders.empty()) { // the first loader's stand for the job's
            sum.epoch = s.epoch;
            sum.ranks = ranks_json(s);
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
    out["mode"] = track::mode_name(sum.mode);
    out["reason"] = text_or_null(sum.reason);
    out["loaders"] = std::move(loaders);
    return sum;
}

} // namespace

// The top-level keys sum up every job: the mode is clairvoyant only while
// every loader is; epoch and ranks are the first job's first loader's.
void JobTable::status(nlohmann::json& out) const {
    Jobs all = this->all();
    auto jobs = nlohmann::json::array();
    track::Mode mode = all.empty() ? track::Mode::unregistered : track::Mode::clairvoyant;
    std::string reason, warning;
    uint64_t opens = 0, matched = 0;
    nlohmann::json epoch, ranks = nlohmann::json::array();
    for (const auto& j : all) {
        nlohmann::json js;
        JobSummary sum = job_status(*j, js);
        if (sum.mode != track::Mode::clairvoyant && mode == track::Mode::clairvoyant) {
            mode = track::Mode::fallback;
            reason = "job " + j->id + ", " + sum.reason;
        }
        opens += sum.opens;
        matched += sum.matched;
        if (warning.empty()) warning = sum.warning;
        if (jobs.empty()) {
            epoch = sum.epoch;
            ranks = sum.ranks;
        }
        jobs.push_back(std::move(js));
    }
    out["mode"] = track::mode_name(mode);
    out["reason"] = text_or_null(reason);
    out["warning"] = text_or_null(warning);
    bool any = !all.empty();
    out["epoch"] = epoch;
    out["match_rate"] = any ? nlohmann::json(opens ? static_cast<double>(matched) /
                                                         static_cast<double>(opens)
                                                   : 1.0)
                            : nlohmann::json(nullptr);
    out["opens"] = opens;
    out["matched"] = matched;
    out["other_opens"] = other_opens_.load(std::memory_order_relaxed);
    out["unattributed_opens"] = unattributed_.load(std::memory_order_relaxed);
    out["retired"] = retired_count_.load(std::memory_order_relaxed);
    out["ranks"] = std::move(ranks);
    out["jobs"] = std::move(jobs);
}

} // namespace clairfs::prefetch
