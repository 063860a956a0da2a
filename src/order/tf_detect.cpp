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
    TfSearch(uint32_t n, TfListing listing, std::span<const Sample> opened,
             const TfDetectOptions& opt, TfDetectStats& stats)
        : n_(n), listing_(listing), opt_(opt), stats_(stats), opened_((n + 63) / 64, 0) {
        for (Sample s : opened) {
            if (s >= n) continue;
            if (!(opened_[s / 64] >> (s % 64) & 1)) {
                opened_[s / 64] |= uint64_t{1} << (s % 64);
                place_.emplace(s, static_cast<uint32_t>(distinct_++));
            }
            seq_.push_back(place_.at(s));
        }
        cores_ = opt.cores ? opt.cores : std::max(1U, std::thread::hardware_concurrency());
        // Each batch size's in-flight window (one for list_files).
        behinds_ = {behind(1)};
        if (listing == TfListing::keras_directory)
            for (uint32_t b : opt.batch_sizes) {
                behinds_.push_back(behind(b));
                buffer_max_ = std::max<uint64_t>(buffer_max_, 8 * uint64_t{b});
            }
    }

    std::optional<TfDetectedJob> run() {
        if (seq_.size() < 2 || n_ < 2) return std::nullopt;
        const std::vector<SeedChoice> choices = seed_choices(opt_.seeds);
        // Every pipeline the search may try, for the bound on chance (its
        // iterators are counted per segment: chance()).
        const uint64_t per_choice =
            listing_ == TfListing::glob
                ? 1
                : (1 + 2 * opt_.validation_splits.size()) * (1 + opt_.batch_sizes.size());
        tried_bound_ = std::max<uint64_t>(1, per_choice * choices.size());
        limit_ = std::log(opt_.false_accept);
        for (const SeedChoice& c : choices) {
            if (cancelled() || stats_.steps > opt_.max_steps) return std::nullopt;
            best_.reset();
            if (listing_ == TfListing::glob)
                try_list_files(c);
            else
                try_keras(c);
            if (best_) return best_->job;
        }
        if (fits_so_far_) stats_.opens_needed = opens_needed();
        return std::nullopt;
    }

private:
    // How a pipeline explains the opens: consecutive runs, each the first
    // opens of one of its iterators, in increasing order.
    struct Fit {
        uint64_t explained = 0; // opens inside the runs
        uint64_t segments = 0;  // runs (iterators)
        uint64_t score = 0;     // the sum of their positions: least for the true order
        uint64_t first_k = 0, last_k = 0;
        uint64_t passed = 0;    // stragglers passed over
    };
    struct Best {
        Fit fit;
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

    // Positions of the opened files in order `k` (absent: beyond it).
    static constexpr uint64_t absent = ~uint64_t{0};
    void locate(size_t k, std::span<const Sample> order) {
        if (at_.size() <= k) at_.resize(k + 1);
        at_[k].assign(distinct_, absent);
        for (uint64_t p = 0; p < order.size(); ++p)
            if (opened(order[p])) at_[k][place_.at(order[p])] = p;
    }

    // The opens from `from` on that iterator k's order explains: the j-th
    // of them within its first j + 1 + lag positions, no file twice. An
    // open the previous iterator (prev_k, whose run had prev_len opens)
    // still explains is a straggler of it, passed over (but counted with
    // the explained ones in the odds of chance: a wrong pipeline's window
    // takes it as likely as any).
    struct Run {
        uint64_t used = 0;      // opens consumed
        uint64_t explained = 0; // of them, in the run
        uint64_t passed = 0;    // of them, stragglers
        uint64_t score = 0;     // the explained ones' positions, summed
    };
    Run run(size_t k, uint64_t from, uint64_t lag, std::optional<size_t> prev_k, uint64_t prev_len) {
        used_.assign(distinct_, false);
        Run r;
        uint64_t i = from;
        for (; i < seq_.size(); ++i) {
            const uint32_t f = seq_[i];
            const uint64_t p = at_[k][f];
            if (p != absent && p <= r.explained + lag && !used_[f]) {
                used_[f] = true;
                r.score += p;
                ++r.explained;
            } else if (prev_k && at_[*prev_k][f] <= prev_len + lag) {
                ++r.passed;
            } else {
                break;
            }
        }
        r.used = i - from;
        return r;
    }

    // Judges a pipeline whose iterators' orders are located (at_[0..I-1];
    // `repeats`: every iterator reads order 0, older Keras).
    void judge(const JobSpec& spec, size_t iterators, bool repeats, uint64_t lag) {
        ++stats_.candidates;
        Fit fit;
        uint64_t i = 0;
        std::optional<size_t> prev;
        uint64_t prev_len = 0;
        while (i < seq_.size()) {
            // The first iterator may be any (a job begun before the mount,
            // or detection); the next any after it (fit makes two an epoch).
            Run best;
            size_t best_k = 0;
            for (size_t k = prev && !repeats ? *prev + 1 : 0; k < iterators; ++k) {
                const Run r = run(repeats ? 0 : k, i, lag, prev, prev_len);
                if (r.explained > best.explained) {
                    best = r;
                    best_k = k;
                }
            }
            // A run of a few opens comes by chance; the first must be the
            // whole evidence or long enough to count.
            if (best.explained < (prev ? 4 : 2)) break;
            if (!prev) fit.first_k = best_k;
            fit.last_k = best_k;
            fit.explained += best.explained;
            fit.passed += best.passed;
            fit.score += best.score;
            ++fit.segments;
            i += best.used;
            prev = repeats ? 0 : best_k;
            prev_len = best.explained;
        }
        if (fit.explained < 2) return;
        if (chance(fit.explained + fit.passed, fit.segments, fit.passed) > limit_) {
            // Every open fits, too few to tell it from chance: the search
            // goes on (a wrong seed's pipeline fits a handful of opens in
            // several runs), and says how many opens would do.
            if (i >= seq_.size()) fits_so_far_ = true;
            return;
        }
        if (best_ && (best_->fit.explained > fit.explained ||
                      (best_->fit.explained == fit.explained && best_->fit.score <= fit.score)))
            return;
        TfDetectedJob job;
        job.spec = spec;
        job.iterator = fit.first_k;
        job.last_iterator = fit.last_k;
        job.opens = fit.explained;
        best_ = Best{fit, std::move(job)};
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
        const uint64_t positions = std::min<uint64_t>(n_, seq_.size() + behind(1));
        for (uint64_t k = 0; k < opt_.iterators; ++k) {
            tf_full_shuffle_prefix(n_, tf_iterator_seeds(*pair, k), positions, order_);
            stats_.steps += positions;
            locate(k, order_);
        }
        judge(spec, opt_.iterators, false, behind(1));
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
        const uint64_t w = buffer_max_ + seq_.size() + *std::ranges::max_element(behinds_);
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
                const uint64_t positions = std::min<uint64_t>(in.window.size(), seq_.size() + behind(1));
                locate(0, std::span(in.window).first(positions));
                judge(legacy, 1, true, behind(1));
            }
            for (uint32_t b : opt_.batch_sizes) {
                spec.batch_size = b;
                const uint64_t positions = seq_.size() + behind(b);
                for (uint64_t k = 0; k < opt_.iterators; ++k) {
                    shuffle_.run(in.window, 8 * uint64_t{b}, tf_iterator_seeds(*pair, k), positions,
                                 order_);
                    stats_.steps += std::min<uint64_t>(in.window.size(), 8 * uint64_t{b}) + positions;
                    locate(k, order_);
                }
                judge(spec, opt_.iterators, false, behind(b));
            }
        }
    }

    // A wrong candidate's order is independent of the job's (another seed
    // pair draws unrelated Philox words and, for Keras, another numpy
    // order), so each of the m opens it explains lies in its first L
    // positions with odds at most L / n: all m, at most (L / n)^m; each
    // run's iterator was one of I it could pick, which multiplies that by
    // I per run, and where the s runs begin and which opens were passed
    // over as stragglers by the number of ways to choose them (m - 1
    // choose s - 1, m choose passed: a wrong pipeline with a wide window
    // was once accepted on 89 opens in 2 runs without these). Over every
    // pipeline the search may try (C of them), a
    // false accept has odds below the sum of these; the job is accepted
    // only once that is below opt_.false_accept, else told how many opens
    // would do. (The j-th open of a run within j + 1 + L positions is a
    // tighter window than L.) (Within the winning seed, candidates that
    // share its input are not independent; among them the most opens
    // explained, then the earliest placement wins, which the true one has:
    // it leaves only tf.data's in-flight gaps.) This is the log of those
    // odds, the sum taken per batch size, each with its own L = m + behind.
    double chance(uint64_t m, uint64_t segments, uint64_t passed = 0) const {
        auto log_choose = [](uint64_t a, uint64_t b) {
            if (b > a) return 0.0;
            return std::lgamma(static_cast<double>(a) + 1) - std::lgamma(static_cast<double>(b) + 1) -
                   std::lgamma(static_cast<double>(a - b) + 1);
        };
        double sum = 0;
        for (uint64_t extra : behinds_) {
            const double l = static_cast<double>(std::min<uint64_t>(n_, m + extra));
            sum += std::exp(static_cast<double>(m) * std::log(l / static_cast<double>(n_)));
        }
        return std::log(static_cast<double>(tried_bound_) / static_cast<double>(behinds_.size()) * sum) +
               static_cast<double>(segments) * std::log(static_cast<double>(opt_.iterators)) +
               log_choose(m > 0 ? m - 1 : 0, segments > 0 ? segments - 1 : 0) + log_choose(m, passed);
    }

    // How many opens a pipeline explaining them all in one run needs to be
    // told from chance (0: none would do).
    uint64_t opens_needed() const {
        for (uint64_t m = seq_.size() + 1; m <= n_ / 2; m += std::max<uint64_t>(1, m / 16))
            if (chance(m, 1) <= limit_) return m;
        return 0;
    }

    uint32_t n_;
    TfListing listing_;
    const TfDetectOptions& opt_;
    TfDetectStats& stats_;
    std::vector<uint64_t> opened_;               // one bit per sample
    std::unordered_map<Sample, uint32_t> place_; // sample -> its place among the distinct opens
    uint64_t distinct_ = 0;
    std::vector<uint32_t> seq_;                  // the opens in order, as places
    std::vector<std::vector<uint64_t>> at_;      // per iterator: each place's position
    std::vector<bool> used_;
    std::vector<uint64_t> behinds_;
    double limit_ = 0;
    uint32_t cores_ = 1;
    uint64_t buffer_max_ = 0;
    uint64_t tried_bound_ = 1;
    std::optional<Best> best_; // explains the opens beyond chance
    bool fits_so_far_ = false; // some pipeline explains every open, too few of them
    std::map<uint32_t, std::vector<KerasInput>> inputs_;
    TfShuffle shuffle_;
    std::vector<Sample> order_;
};

} // namespace

std::optional<TfDetectedJob> detect_tf_job(uint32_t n, TfListing listing,
                                           std::span<const Sample> opened,
                                           const TfDetectOptions& opt, TfDetectStats& stats) {
    TfSearch s(n, listing, opened, opt, stats);
    return s.run();
}

} // namespace clairfs::order
