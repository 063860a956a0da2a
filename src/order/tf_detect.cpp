// SPDX-License-Identifier: MIT
#include "clairfs/order/tf_detect.hpp"

#include "clairfs/order/numpy_random.hpp"
#include "clairfs/order/philox.hpp"
#include "clairfs/order/tf_seed.hpp"
#include "clairfs/order/tf_shuffle.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <thread>
#include <unordered_map>

namespace clairfs::order {

void tf_full_shuffle_prefix(uint32_t n, const TfSeeds& seeds, size_t count,
                            std::vector<Sample>& out) {
    // TfShuffle::run with buffer_size >= n: the ring holds 0..n-1 from the
    // start and is never refilled, so output `start` takes slot
    // start + word % (n - start) and moves slot `start` there. Only the
    // slots moved so far differ from their index.
    out.clear();
    out.reserve(std::min<size_t>(count, n));
    PhiloxWords random(seeds.seed, seeds.seed2);
    std::unordered_map<uint32_t, Sample> moved;
    auto at = [&moved](uint32_t i) {
        auto it = moved.find(i);
        return it == moved.end() ? Sample{i} : it->second;
    };
    for (uint32_t start = 0; start < n && out.size() < count; ++start) {
        auto index = static_cast<uint32_t>(start + random() % (uint64_t{n} - start));
        out.push_back(at(index));
        moved[index] = at(start);
    }
}

namespace {

// The seed keys a job may have written: seed=S alone, seed=None after
// set_random_seed(G), or both; each listed value in each role.
struct SeedChoice {
    bool seed_none = false;
    uint64_t seed = 0;
    std::optional<uint64_t> global;
};

std::vector<SeedChoice> seed_choices(const std::vector<uint64_t>& seeds) {
    std::vector<SeedChoice> out;
    for (uint64_t s : seeds) out.push_back({false, s, std::nullopt});
    for (uint64_t g : seeds) out.push_back({true, 0, g});
    for (uint64_t g : seeds)
        for (uint64_t s : seeds) out.push_back({false, s, g});
    return out;
}

std::optional<Seed> global_of(const SeedChoice& c) {
    if (!c.global) return std::nullopt;
    return Seed{*c.global, false};
}

// One input a keras pipeline may shuffle: the numpy order's head (the
// whole list, or a training subset short enough to show) or a validation
// subset's tail. `window` holds at least its first buffer + positions.
struct KerasInput {
    std::vector<Sample> window;
    std::optional<double> split;
    TfSubset subset = TfSubset::none;
};

class TfSearch {
public:
    TfSearch(uint32_t n, TfListing listing, std::span<const ProcessOpens> procs,
             const TfDetectOptions& opt, TfDetectStats& stats)
        : n_(n), listing_(listing), opt_(opt), stats_(stats), opened_((n + 63) / 64, 0) {
        for (const ProcessOpens& p : procs) {
            bool any = false;
            for (Sample s : p.samples) {
                if (s >= n) continue;
                any = true;
                uint64_t& word = opened_[s / 64];
                if (!(word >> (s % 64) & 1)) ++opens_;
                word |= uint64_t{1} << (s % 64);
            }
            if (any) pids_.push_back(p.pid);
        }
        std::sort(pids_.begin(), pids_.end());
        cores_ = opt.cores ? opt.cores : std::max(1U, std::thread::hardware_concurrency());
        behind_max_ = behind(1);
        if (listing == TfListing::keras_directory)
            for (uint32_t b : opt.batch_sizes) {
                behind_max_ = std::max(behind_max_, behind(b));
                buffer_max_ = std::max<uint64_t>(buffer_max_, 8 * uint64_t{b});
            }
    }

    std::optional<TfDetectedJob> run() {
        if (opens_ < 2 || n_ < 2) return std::nullopt;
        const std::vector<SeedChoice> choices = seed_choices(opt_.seeds);
        // Every candidate the search may try, for the bound on chance.
        const uint64_t per_choice =
            listing_ == TfListing::glob
                ? opt_.iterators
                : (1 + 2 * opt_.validation_splits.size()) * (1 + opt_.batch_sizes.size() * uint64_t{opt_.iterators});
        tried_bound_ = std::max<uint64_t>(1, per_choice * choices.size());
        for (const SeedChoice& c : choices) {
            if (cancelled() || stats_.steps > opt_.max_steps) return std::nullopt;
            best_.reset();
            if (listing_ == TfListing::glob)
                try_list_files(c);
            else
                try_keras(c);
            if (best_) return accept();
        }
        return std::nullopt;
    }

private:
    struct Best {
        uint64_t score; // sum of the opens' positions: least for the true order
        TfDetectedJob job;
    };

    // As far behind its furthest open as tf.data may still have files in
    // flight. Tighter than the tracker's 4 batches (prefetch/active_job.cpp),
    // so that a large batch size's candidates do not swamp the evidence of
    // a small dataset: a job that lags further is missed, never mistaken.
    uint64_t behind(uint64_t batch) const {
        return std::max<uint64_t>({2 * batch, uint64_t{32} * cores_, 128});
    }

    bool cancelled() const { return opt_.cancel && opt_.cancel->load(std::memory_order_relaxed); }
    bool opened(Sample s) const { return s < n_ && (opened_[s / 64] >> (s % 64) & 1); }

    // Whether every open is among `order`'s first positions; if so, it is
    // kept when it places the opens earlier than the best so far.
    void judge(std::span<const Sample> order, const JobSpec& spec, uint64_t k) {
        ++stats_.candidates;
        uint64_t found = 0, score = 0;
        for (uint64_t p = 0; p < order.size() && found < opens_; ++p)
            if (opened(order[p])) {
                ++found;
                score += p;
            }
        if (found != opens_ || (best_ && best_->score <= score)) return;
        best_ = Best{score, TfDetectedJob{spec, k, pids_, opens_}};
    }

    JobSpec base(const SeedChoice& c, TfPipeline p) const {
        JobSpec s;
        s.framework = Framework::tensorflow;
        s.pipeline = p;
        s.seed_none = c.seed_none;
        s.seed = c.seed;
        s.global_seed = global_of(c);
        return s;
    }

    void try_list_files(const SeedChoice& c) {
        std::optional<Seed> op;
        if (!c.seed_none) op = Seed{c.seed, false};
        auto pair = tf_get_seed(global_of(c), op);
        if (!pair) return;
        const JobSpec spec = base(c, TfPipeline::list_files);
        const uint64_t positions = std::min<uint64_t>(n_, opens_ + behind(1));
        for (uint64_t k = 0; k < opt_.iterators; ++k) {
            tf_full_shuffle_prefix(n_, tf_iterator_seeds(*pair, k), positions, order_);
            stats_.steps += positions;
            judge(order_, spec, k);
        }
    }

    // numpy's order for Keras seed `ns`, cut into the inputs the splits
    // make; computed once per seed (a seed recurs as op seed with several
    // global seeds).
    const std::vector<KerasInput>& inputs(uint32_t ns) {
        auto it = inputs_.find(ns);
        if (it != inputs_.end()) return it->second;
        std::vector<Sample> list(n_);
        std::iota(list.begin(), list.end(), Sample{0});
        numpy_shuffle(ns, list);
        stats_.steps += n_;
        const uint64_t w = buffer_max_ + opens_ + behind_max_;
        auto cut = [&](uint64_t from, uint64_t to) {
            return std::vector<Sample>(list.begin() + static_cast<ptrdiff_t>(from),
                                       list.begin() + static_cast<ptrdiff_t>(std::min(to, from + w)));
        };
        std::vector<KerasInput> out;
        out.push_back({cut(0, n_), std::nullopt, TfSubset::none});
        for (double v : opt_.validation_splits) {
            // tf_epochs.cpp's split: the last int(v * n) are validation.
            auto val = static_cast<uint64_t>(v * static_cast<double>(n_));
            if (val == 0 || val >= n_) continue;
            // A training subset longer than the window reads as the whole
            // list would: its prefix is that of `none`.
            if (n_ - val < w) out.push_back({cut(0, n_ - val), v, TfSubset::training});
            out.push_back({cut(n_ - val, n_), v, TfSubset::validation});
        }
        return inputs_.emplace(ns, std::move(out)).first->second;
    }

    void try_keras(const SeedChoice& c) {
        // image_dataset_from_directory's seed: given, or drawn by numpy
        // after set_random_seed(G) (tf_epochs.cpp keras_seed).
        const uint32_t ns = c.seed_none ? numpy_randint(static_cast<uint32_t>(*c.global), 1000000)
                                        : static_cast<uint32_t>(c.seed);
        auto pair = tf_get_seed(global_of(c), Seed{ns, false});
        if (!pair) return;
        JobSpec spec = base(c, TfPipeline::image_dataset_from_directory);
        for (const KerasInput& in : inputs(ns)) {
            if (cancelled()) return;
            spec.validation_split = in.split;
            spec.subset = in.subset;
            // Older Keras reads the numpy order itself, every epoch; tried
            // so that such a reader is not taken for a small buffer's order.
            if (!c.global || c.seed_none) {
                JobSpec legacy = spec;
                legacy.keras_version = KerasVersion::legacy;
                const uint64_t positions = std::min<uint64_t>(in.window.size(), opens_ + behind(1));
                judge(std::span(in.window).first(positions), legacy, 0);
            }
            for (uint32_t b : opt_.batch_sizes) {
                spec.batch_size = b;
                const uint64_t positions = opens_ + behind(b);
                for (uint64_t k = 0; k < opt_.iterators; ++k) {
                    shuffle_.run(in.window, 8 * uint64_t{b}, tf_iterator_seeds(*pair, k), positions,
                                 order_);
                    stats_.steps += std::min<uint64_t>(in.window.size(), 8 * uint64_t{b}) + positions;
                    judge(order_, spec, k);
                }
            }
        }
    }

    // A wrong candidate's order is independent of the job's (another seed
    // pair draws unrelated Philox words and, for Keras, another numpy
    // order), so each of the M distinct files opened lies in its first L
    // positions with odds at most L / n. All M: at most (L / n)^M. Over
    // every candidate the search may try (C of them), a false accept has
    // odds below the sum of (L / n)^M over them, each
    // with its own L; the job is accepted only once that is
    // below opt_.false_accept, else told how many opens would do. (Within
    // the winning seed, candidates that share its input are not
    // independent; among them the earliest placement wins, which the true
    // one has: it leaves only tf.data's in-flight gaps.)
    std::optional<TfDetectedJob> accept() {
        // Summed per batch size: each has its own window L = m + behind.
        std::vector<uint64_t> behinds{behind(1)};
        if (listing_ == TfListing::keras_directory)
            for (uint32_t b : opt_.batch_sizes) behinds.push_back(behind(b));
        auto chance = [&](uint64_t m) {
            double sum = 0;
            for (uint64_t extra : behinds) {
                const double l = static_cast<double>(std::min<uint64_t>(n_, m + extra));
                sum += std::exp(static_cast<double>(m) * std::log(l / static_cast<double>(n_)));
            }
            return std::log(static_cast<double>(tried_bound_) / static_cast<double>(behinds.size()) * sum);
        };
        const double limit = std::log(opt_.false_accept);
        if (chance(opens_) <= limit) return best_->job;
        stats_.opens_needed = 0;
        for (uint64_t m = opens_ + 1; m <= n_ / 2; m += std::max<uint64_t>(1, m / 16))
            if (chance(m) <= limit) {
                stats_.opens_needed = m;
                break;
            }
        return std::nullopt;
    }

    uint32_t n_;
    TfListing listing_;
    const TfDetectOptions& opt_;
    TfDetectStats& stats_;
    std::vector<uint64_t> opened_; // one bit per sample
    uint64_t opens_ = 0;           // distinct samples opened
    std::vector<uint32_t> pids_;
    uint32_t cores_ = 1;
    uint64_t behind_max_ = 0, buffer_max_ = 0;
    uint64_t tried_bound_ = 1;
    std::optional<Best> best_;
    std::map<uint32_t, std::vector<KerasInput>> inputs_;
    TfShuffle shuffle_;
    std::vector<Sample> order_;
};

} // namespace

std::optional<TfDetectedJob> detect_tf_job(uint32_t n, TfListing listing,
                                           std::span<const ProcessOpens> procs,
                                           const TfDetectOptions& opt, TfDetectStats& stats) {
    TfSearch s(n, listing, procs, opt, stats);
    return s.run();
}

} // namespace clairfs::order
