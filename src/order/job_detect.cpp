// SPDX-License-Identifier: MIT
#include "clairfs/order/job_detect.hpp"

#include "clairfs/order/chain_scan.hpp"
#include "clairfs/order/generator.hpp"
#include "clairfs/order/lazy_mt19937.hpp"
#include "clairfs/order/prefix_search.hpp"
#include "evidence_check.hpp"
#include "fast_mod.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <numeric>
#include <set>

namespace clairfs::order {

const char* detected_sampler_name(DetectedSampler s) {
    switch (s) {
    case DetectedSampler::distributed:
        return "distributed";
    case DetectedSampler::random_explicit:
        return "random";
    case DetectedSampler::random_global:
        return "random (global generator)";
    case DetectedSampler::sequential:
        return "sequential";
    }
    return "?";
}

namespace {

constexpr uint64_t unknown = UINT64_MAX;

// One permutation a job may be following.
struct Candidate {
    DetectedSampler kind;
    uint32_t seed; // torch's generator keeps only the low 32 bits
};

// Sample -> where the candidate puts it: an open-addressing table of the
// samples that matter, so the scan over a candidate's positions costs one
// probe per position and nothing per sample of the dataset.
class Positions {
public:
    void watch(std::span<const Sample> values) {
        size_t want = std::bit_ceil(std::max<size_t>(16, 4 * values.size()));
        keys_.assign(want, not_a_sample);
        pos_.assign(want, unknown);
        mask_ = want - 1;
        for (Sample v : values) keys_[slot(v)] = v;
    }
    void forget() { std::fill(pos_.begin(), pos_.end(), unknown); }
    void seen(Sample v, uint64_t p) {
        size_t i = slot(v);
        if (keys_[i] == v && pos_[i] == unknown) pos_[i] = p;
    }
    uint64_t of(Sample v) const {
        size_t i = slot(v);
        return keys_[i] == v ? pos_[i] : unknown;
    }

private:
    size_t slot(Sample v) const {
        size_t i = (uint64_t{v} * 0x9e3779b97f4a7c15ULL) >> 32 & mask_;
        while (keys_[i] != not_a_sample && keys_[i] != v) i = (i + 1) & mask_;
        return i;
    }
    std::vector<Sample> keys_;
    std::vector<uint64_t> pos_;
    size_t mask_ = 0;
};

class Search {
public:
    Search(uint32_t n, std::span<const ProcessOpens> procs, uint32_t min_evidence,
           DetectStats& stats, const std::atomic<bool>* cancel = nullptr)
        : n_(n), procs_(procs), stats_(stats), min_evidence_(min_evidence), cancel_(cancel) {
        std::vector<Sample> anchors, all;
        for (const ProcessOpens& p : procs) {
            if (p.samples.size() >= 2) {
                anchors.push_back(p.samples[0]);
                anchors.push_back(p.samples[1]);
            }
            all.insert(all.end(), p.samples.begin(), p.samples.end());
            total_ += p.samples.size();
        }
        std::erase(anchors, not_a_sample);
        std::erase(all, not_a_sample);
        for (auto* v : {&anchors, &all}) {
            std::sort(v->begin(), v->end());
            v->erase(std::unique(v->begin(), v->end()), v->end());
        }
        anchors_.watch(anchors);
        all_.watch(all);
        has_anchors_ = !anchors.empty();
    }

    bool has_anchors() const { return has_anchors_; }

    // No shuffling: position p holds sample p, so nothing is computed;
    // then every world size that some process's first two opens suggest.
    std::optional<DetectedJob> try_unshuffled() {
        ++stats_.candidates;
        return try_worlds({DetectedSampler::sequential, 0}, [](Sample v) { return uint64_t{v}; });
    }

    // Each of `seeds` in turn: its first `depth` positions, then the world
    // sizes the first two opens suggest; eight generators seeded
    // together: seeding is a chain of dependent multiplications, and eight
    // chains overlap in the CPU where one would wait on each step.
    std::optional<DetectedJob> try_seeds(DetectedSampler kind, std::span<const uint32_t> seeds,
                                         uint64_t depth) {
        constexpr size_t lanes = 8;
        depth = std::min<uint64_t>(depth, n_);
        const bool base_seed = kind == DetectedSampler::random_explicit;
        const uint32_t words = LazyMt19937::words_for(depth + (base_seed ? 2 : 0));
        std::array<LazyMt19937, lanes> gens;
        std::array<uint32_t, lanes> s{};
        for (size_t first = 0; first < seeds.size(); first += lanes) {
            if (cancel_ && cancel_->load(std::memory_order_relaxed)) return std::nullopt;
            const size_t m = std::min(lanes, seeds.size() - first);
            for (size_t l = 0; l < lanes; ++l) s[l] = seeds[first + std::min(l, m - 1)];
            LazyMt19937::seed_each(gens, s, words);
            for (size_t l = 0; l < m; ++l) {
                ++stats_.candidates;
                if (base_seed) {
                    gens[l]();
                    gens[l]();
                }
                perm_.compute(n_, static_cast<uint32_t>(depth), gens[l], prefix_);
                stats_.positions += depth;
                anchors_.forget();
                for (uint64_t p = 0; p < prefix_.size(); ++p) anchors_.seen(prefix_[p], p);
                if (auto j = try_worlds({kind, s[l]}, [this](Sample v) { return anchors_.of(v); }))
                    return j;
            }
        }
        return std::nullopt;
    }

    // One seed word of a RandomSampler's own generator (random_global): its
    // first `depth` positions, then the world sizes the first two opens
    // suggest, as try_seeds does for a seed.
    std::optional<DetectedJob> try_word(uint32_t word, uint64_t depth) {
        ++stats_.candidates;
        depth = std::min<uint64_t>(depth, n_);
        gen_.seed(word);
        perm_.compute(n_, static_cast<uint32_t>(depth), gen_, prefix_);
        stats_.positions += depth;
        anchors_.forget();
        for (uint64_t p = 0; p < prefix_.size(); ++p) anchors_.seen(prefix_[p], p);
        return try_worlds({DetectedSampler::random_global, word},
                          [this](Sample v) { return anchors_.of(v); });
    }

    // One (candidate, world) pair against every open: nullopt if no process
    // fits or one that fits at first later does not.
    std::optional<DetectedJob> evaluate(const Candidate& c, uint64_t world) {
        ++stats_.hypotheses;
        if (c.kind == DetectedSampler::sequential)
            return judge(c, world, [](Sample v) { return uint64_t{v}; });
        // A rank's opens so far reach at most about twice their count
        // into its stream (workers run a batch or two apart).
        uint64_t reach = std::min<uint64_t>(n_, world * (2 * total_ + 4096));
        prefix(c, reach);
        all_.forget();
        for (uint64_t p = 0; p < prefix_.size(); ++p) all_.seen(prefix_[p], p);
        return judge(c, world, [this](Sample v) { return all_.of(v); });
    }

private:
    void prefix(const Candidate& c, uint64_t k) {
        gen_.seed(c.seed);
        // _BaseDataLoaderIter draws base_seed (two words) from the loader's
        // generator before RandomSampler uses it.
        if (c.kind == DetectedSampler::random_explicit) {
            gen_();
            gen_();
        }
        perm_.compute(n_, static_cast<uint32_t>(k), gen_, prefix_);
        stats_.positions += k;
    }

    template <class PosOf>
    std::optional<DetectedJob> try_worlds(const Candidate& c, PosOf pos_of) {
        std::set<uint64_t> worlds;
        for (const ProcessOpens& p : procs_) {
            if (p.samples.size() < 2) continue;
            uint64_t q0 = pos_of(p.samples[0]), q1 = pos_of(p.samples[1]);
            if (q0 == unknown || q1 == unknown || q1 <= q0 || q1 - q0 > UINT32_MAX) continue;
            // A RandomSampler is one rank: its worker 0 opens positions 0, 1.
            if (c.kind != DetectedSampler::distributed && c.kind != DetectedSampler::sequential &&
                q1 - q0 != 1)
                continue;
            worlds.insert(q1 - q0);
        }
        for (uint64_t w : worlds)
            if (auto j = evaluate(c, w)) return j;
        return std::nullopt;
    }

    // A process the hypothesis claims: its first two opens are consecutive
    // in one rank's stream.
    struct Claim {
        const ProcessOpens* proc;
        uint64_t rank;
        std::vector<uint64_t> stream; // stream index of each open, `unknown` if off the rank
    };

    // The loader's shape the claims show.
    struct Shape {
        uint64_t batch = 0, workers = 0;
        bool shown = false; // the worker count is known, not a lower bound
    };

    template <class PosOf>
    std::optional<DetectedJob> judge(const Candidate& c, uint64_t world, PosOf pos_of) {
        std::vector<Claim> claims = claims_of(world, pos_of);
        if (claims.empty()) return std::nullopt;
        std::optional<Shape> shape = shape_of(claims);
        if (!shape) return std::nullopt;
        DetectedJob job;
        job.sampler = c.kind;
        job.seed = c.seed;
        job.world = static_cast<uint32_t>(world);
        job.batch = static_cast<uint32_t>(shape->batch);
        job.workers = shape->workers == 1 && shape->batch == 1
                          ? 0
                          : static_cast<uint32_t>(shape->workers);
        job.layout_shown = shape->shown;
        std::vector<std::pair<uint64_t, uint64_t>> per_rank_opens; // rank -> opens
        uint64_t longest = 0; // the most opens of one process judged
        if (!place(claims, world, *shape, job, per_rank_opens, longest)) return std::nullopt;
        // Two opens fit any world (their distance): a hypothesis needs more
        // where it says, each of which a wrong one finds with odds 1/n.
        if (longest < min_evidence_) return std::nullopt;
        tally(job, per_rank_opens, world);
        return job;
    }

    // Every process whose first two opens `pos_of` puts one world apart,
    // each of its opens as an index into its rank's stream.
    template <class PosOf> std::vector<Claim> claims_of(uint64_t world, PosOf pos_of) const {
        std::vector<Claim> claims;
        for (const ProcessOpens& p : procs_) {
            if (p.samples.size() < 2) continue;
            uint64_t q0 = pos_of(p.samples[0]), q1 = pos_of(p.samples[1]);
            if (q0 == unknown || q1 != q0 + world) continue;
            Claim cl{&p, q0 % world, {}};
            for (Sample v : p.samples) {
                uint64_t q = pos_of(v);
                cl.stream.push_back(q != unknown && q % world == cl.rank ? q / world : unknown);
            }
            claims.push_back(std::move(cl));
        }
        return claims;
    }

    // Batch size and workers, exact where a worker's opens jump to its next
    // batch; false if two claims disagree. Both stay 0 where none jumps.
    static bool from_jumps(const std::vector<Claim>& claims, uint64_t& batch, uint64_t& workers) {
        for (const Claim& cl : claims) {
            size_t run = 1;
            while (run < cl.stream.size() && cl.stream[run] == cl.stream[0] + run) ++run;
            if (run == cl.stream.size() || cl.stream[run] == unknown) continue;
            if (batch != 0 && batch != run) return false;
            batch = run;
            if (cl.stream[run] <= cl.stream[0] || cl.stream[0] % run != 0 ||
                (cl.stream[run] - cl.stream[0]) % run != 0)
                return false;
            uint64_t w = (cl.stream[run] - cl.stream[0]) / run;
            if (workers != 0 && workers != w) return false;
            workers = w;
        }
        return true;
    }

    // Batch size: exact where a worker's opens jump to its next batch;
    // else the spacing of the workers' first samples; else it does not
    // show (one process per rank: any batch size gives this order).
    static std::optional<Shape> shape_of(const std::vector<Claim>& claims) {
        uint64_t batch = 0, workers = 0;
        if (!from_jumps(claims, batch, workers)) return std::nullopt;
        if (batch == 0) {
            uint64_t g = 0;
            for (const Claim& cl : claims) g = std::gcd(g, cl.stream[0]);
            batch = g == 0 ? 1 : g;
        }
        uint64_t seen_workers = 1;
        for (const Claim& cl : claims) seen_workers = std::max(seen_workers, cl.stream[0] / batch + 1);
        // Without a jump, several workers of a rank say only that there are
        // at least as many as have opened (and a batch size the spacing of
        // their first samples allows): a worker slow to start is missed.
        // One process of a rank is taken as its loader without workers, as
        // before (seen from the middle of its epoch, its first open is not
        // position 0, and no later open tells it from a lone worker).
        const bool jumped = workers != 0;
        std::vector<uint64_t> claim_ranks;
        for (const Claim& cl : claims) claim_ranks.push_back(cl.rank);
        std::sort(claim_ranks.begin(), claim_ranks.end());
        const bool one_per_rank =
            std::adjacent_find(claim_ranks.begin(), claim_ranks.end()) == claim_ranks.end();
        if (workers == 0) workers = seen_workers;
        if (seen_workers > workers || batch > UINT32_MAX || workers > UINT32_MAX) return std::nullopt;
        return Shape{batch, workers, jumped || one_per_rank};
    }

    // Every claimed open where worker `first / batch` opens it, up to the
    // rank's share of the epoch; false at the first that is not.
    bool place(const std::vector<Claim>& claims, uint64_t world, const Shape& shape,
               DetectedJob& job, std::vector<std::pair<uint64_t, uint64_t>>& per_rank_opens,
               uint64_t& longest) const {
        // Every rank's share of the padded epoch; positions past n wrap
        // around (padding) and are not judged.
        const uint64_t per_rank = (n_ + world - 1) / world;
        const uint64_t batch = shape.batch, workers = shape.workers;
        for (const Claim& cl : claims) {
            if (cl.stream[0] % batch != 0) return false;
            const uint64_t wk = cl.stream[0] / batch;
            uint64_t good = 0;
            for (uint64_t i = 0; i < cl.stream.size(); ++i) {
                uint64_t want = (wk + workers * (i / batch)) * batch + i % batch;
                if (want >= per_rank || cl.rank + world * want >= n_) break; // next epoch, or padding
                if (cl.stream[i] != want) return false;
                ++good;
            }
            job.pids.push_back(cl.proc->pid);
            job.opens += good;
            longest = std::max(longest, good);
            auto it = std::find_if(per_rank_opens.begin(), per_rank_opens.end(),
                                   [&](const auto& r) { return r.first == cl.rank; });
            if (it == per_rank_opens.end())
                per_rank_opens.emplace_back(cl.rank, good);
            else
                it->second += good;
        }
        return true;
    }

    // The ranks, the fewest opens one placed, and whether all of the epoch
    // is opened.
    void tally(DetectedJob& job, std::vector<std::pair<uint64_t, uint64_t>>& per_rank_opens,
               uint64_t world) const {
        const uint64_t per_rank = (n_ + world - 1) / world;
        std::sort(job.pids.begin(), job.pids.end());
        std::sort(per_rank_opens.begin(), per_rank_opens.end());
        job.fewest = UINT64_MAX;
        bool whole_epoch = true; // every rank opened all of its share
        for (auto [r, k] : per_rank_opens) {
            job.ranks.push_back(static_cast<uint32_t>(r));
            job.fewest = std::min(job.fewest, k);
            whole_epoch &= r < n_ && k >= std::min(per_rank, (n_ - r + world - 1) / world);
        }
        // An epoch of no more batches than workers never shows a jump, but
        // once all of it is opened no worker is left to come: one with no
        // batch opens nothing, and the batches went to the workers seen.
        job.layout_shown |= whole_epoch;
    }

    uint32_t n_;
    std::span<const ProcessOpens> procs_;
    DetectStats& stats_;
    uint64_t min_evidence_;
    const std::atomic<bool>* cancel_ = nullptr;
    uint64_t total_ = 0;
    bool has_anchors_ = false;
    Positions anchors_, all_;
    PermPrefix perm_;
    LazyMt19937 gen_;
    std::vector<Sample> prefix_;
};

} // namespace

std::optional<DetectedJob> detect_job(uint32_t n, std::span<const ProcessOpens> procs,
                                      const DetectOptions& opt, DetectStats& stats) {
    if (n < 2) return std::nullopt;
    Search s(n, procs, opt.min_evidence, stats, opt.cancel);
    if (!s.has_anchors()) return std::nullopt;
    if (auto j = s.try_unshuffled()) return j;
    // Beyond randperm64_threshold torch 2.6 and later fill the permutation
    // inside out: no position is final before the last draw.
    if (!prefix_computable(n, TorchVersion::v2_6)) return std::nullopt;

    // Listed seeds first, deep: seed + epoch for the early epochs of every
    // listed seed, then the range, shallow. Seeds are kept as torch keeps
    // them, so only their low 32 bits matter.
    std::vector<uint32_t> listed;
    std::set<uint32_t> seen;
    for (uint64_t e = 0; e < opt.listed_epochs; ++e)
        for (uint64_t s0 : opt.seeds)
            if (seen.insert(static_cast<uint32_t>(s0 + e)).second)
                listed.push_back(static_cast<uint32_t>(s0 + e));
    uint64_t deep = listed.empty() ? 0 : opt.listed_positions / listed.size();
    // Not std::clamp: a dataset smaller than range_depth makes its bounds
    // cross, which is undefined (libstdc++'s assertions abort on it, and
    // meson turns them on in debug builds from 1.4, Debian 13's).
    deep = std::min<uint64_t>(std::max<uint64_t>(deep, opt.range_depth), n);
    std::vector<uint32_t> seeds;
    for (uint64_t s0 : opt.seeds) seeds.push_back(static_cast<uint32_t>(s0));
    if (auto j = s.try_seeds(DetectedSampler::random_explicit, seeds, 64)) return j;
    if (auto j = s.try_seeds(DetectedSampler::distributed, listed, deep)) return j;
    seeds.clear();
    for (uint64_t seed = 0; seed <= opt.seed_max && seed <= UINT32_MAX; ++seed)
        seeds.push_back(static_cast<uint32_t>(seed));
    // A RandomSampler's worker 0 opens positions 0 and 1 first.
    if (auto j = s.try_seeds(DetectedSampler::random_explicit, seeds, 8)) return j;
    std::erase_if(seeds, [&](uint32_t seed) { return seen.count(seed) != 0; });
    if (auto j = s.try_seeds(DetectedSampler::distributed, seeds, opt.range_depth)) return j;
    return std::nullopt;
}

std::optional<DetectedJob> recheck_job(uint32_t n, const DetectedJob& guess,
                                       std::span<const ProcessOpens> procs) {
    DetectStats stats;
    Search s(n, procs, 0, stats);
    const bool global = guess.sampler == DetectedSampler::random_global;
    auto j = s.evaluate({guess.sampler, global ? guess.seed_word : static_cast<uint32_t>(guess.seed)},
                        guess.world);
    // Every process the guess claimed must still be claimed.
    if (!j) return std::nullopt;
    if (global) {
        j->seed = guess.seed;
        j->draw_offset = guess.draw_offset;
        j->seed_word = guess.seed_word;
    }
    for (uint32_t pid : guess.pids)
        if (std::find(j->pids.begin(), j->pids.end(), pid) == j->pids.end()) return std::nullopt;
    return j;
}

struct ChainDetect::Chain {
    explicit Chain(uint64_t seed) : gen(seed) {}
    CpuGenerator gen; // positioned at word `next`
    uint64_t next = 0;
};

ChainDetect::ChainDetect(std::span<const uint64_t> seeds, uint64_t first, uint64_t words)
    : seeds_(seeds.begin(), seeds.end()), words_(words) {
    for (uint64_t s : seeds_) {
        chains_.push_back(std::make_unique<Chain>(s));
        chains_.back()->gen.discard(std::min(first, words));
        chains_.back()->next = std::min(first, words);
    }
}

ChainDetect::~ChainDetect() = default;

bool ChainDetect::done() const { return scanned() >= words_; }

uint64_t ChainDetect::scanned() const {
    uint64_t least = words_;
    for (const auto& c : chains_) least = std::min(least, c->next);
    return least;
}

namespace {

// A target a chain word may fit: the first open of every process that
// could be a loader's worker 0 (two sample opens at least), and the check.
struct ChainCheck {
    size_t target; // index into the targets given to step()
    FastMod mod;
    EvidenceCheck firsts;
    Search search;
};

using ChainChecks = std::vector<std::unique_ptr<ChainCheck>>;

ChainChecks chain_checks(std::span<const ChainTarget> targets, uint32_t min_evidence,
                         DetectStats& stats, const std::atomic<bool>* cancel) {
    ChainChecks live;
    for (size_t t = 0; t < targets.size(); ++t) {
        const ChainTarget& c = targets[t];
        // Beyond randperm64_threshold torch 2.6 and later fill the
        // permutation inside out: position 0 is not the first draw.
        if (c.n < 2 || !prefix_computable(c.n, TorchVersion::v2_6)) continue;
        EpochEvidence ev;
        for (const ProcessOpens& p : c.procs)
            if (p.samples.size() >= 2 && p.samples[0] != not_a_sample) ev.samples.push_back(p.samples[0]);
        if (ev.samples.empty()) continue;
        live.push_back(std::make_unique<ChainCheck>(ChainCheck{
            t, FastMod(c.n), EvidenceCheck(ev), Search(c.n, c.procs, min_evidence, stats, cancel)}));
    }
    return live;
}

// The first of `here` words (`w`, with their first draws `d0`) whose
// permutation some target's opens confirm: its place in the block, and
// the job.
std::optional<std::pair<size_t, ChainFound>> first_fit(const uint32_t* w, const uint32_t* d0,
                                                       size_t here, ChainChecks& live) {
    for (size_t k = 0; k < here; ++k)
        for (auto& check : live) {
            if (!check->firsts.contains(check->mod(d0[k]))) continue;
            if (auto j = check->search.try_word(w[k], 8))
                return std::pair{k, ChainFound{check->target, std::move(*j)}};
        }
    return std::nullopt;
}

} // namespace

std::optional<ChainFound> ChainDetect::step(std::span<const ChainTarget> targets, uint64_t words,
                                            uint32_t min_evidence, DetectStats& stats,
                                            const std::atomic<bool>* cancel) {
    ChainChecks live = chain_checks(targets, min_evidence, stats, cancel);
    if (live.empty()) {
        // Nothing any word could fit: the scan is over.
        for (auto& c : chains_) c->next = words_;
        return std::nullopt;
    }
    constexpr size_t block = 4096;
    std::vector<uint32_t> w(block), d0(block);
    for (size_t i = 0; i < chains_.size(); ++i) {
        Chain& c = *chains_[i];
        const uint64_t end = std::min(words_, c.next + words);
        while (c.next < end) {
            if (cancel && cancel->load(std::memory_order_relaxed)) return std::nullopt;
            const size_t here = static_cast<size_t>(std::min<uint64_t>(block, end - c.next));
            // Kept to resume right after a word that fits but is not
            // confirmed: the words after it in this block are scanned next.
            const CpuGenerator before = c.gen;
            for (size_t k = 0; k < here; ++k) w[k] = c.gen.random();
            mt19937_first_draws(w.data(), here, d0.data(), nullptr);
            stats.chain_words += here;
            if (auto fit = first_fit(w.data(), d0.data(), here, live)) {
                auto& [k, found] = *fit;
                found.job.seed = seeds_[i];
                found.job.draw_offset = c.next + k;
                found.job.seed_word = w[k];
                c.gen = before;
                c.gen.discard(k + 1);
                c.next += k + 1;
                return std::move(found);
            }
            c.next += here;
        }
    }
    return std::nullopt;
}

} // namespace clairfs::order
