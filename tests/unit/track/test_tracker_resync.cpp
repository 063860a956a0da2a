// SPDX-License-Identifier: MIT
// The tracker with real planners: an epoch whose first opens fit no
// prediction is held back, searched for on the planner thread, and then
// followed; one that fits no seed searched falls back and says what was
// tried. The job's opens come from EpochOrders with the draws it made.
#include "clairfs/order/epoch_orders.hpp"
#include "plan_checks.hpp"
#include "tracker_plans.hpp"

#include <thread>

using namespace clairfs;
using namespace clairfs::test;
using namespace std::chrono_literals;

namespace {

struct Job {
    index::Index idx = flat_index(8, 60); // 480 samples
    layout::Dataset ds = sorted_dataset(idx);
    order::JobSpec spec;
    std::unique_ptr<plan::RankPlanner> planner;
    std::unique_ptr<track::Tracker> tracker;

    explicit Job(order::JobSpec s, uint64_t resync_max = 4096, uint64_t deep_last = 0,
                 double deep_burst_s = 20)
        : spec(s) {
        planner = std::make_unique<plan::RankPlanner>(spec, ds, idx);
        plan::RankPlanner* p = planner.get();
        track::TrackerOptions o;
        o.layout = {spec.batch_size, spec.num_workers};
        o.resync_max = resync_max;
        o.deep_last = deep_last;
        o.deep_burst_s = deep_burst_s;
        o.deep_slice = 1 << 20;
        o.sample_nodes.assign(idx.size(), 0);
        for (const auto& smp : ds.samples) o.sample_nodes[layout::opened_node(idx, smp)] = 1;
        std::vector<track::ResyncFn> resyncs;
        resyncs.emplace_back(
            [p, resync_max](const plan::ResyncRequest& r) { return p->resync(r, resync_max); });
        tracker = std::make_unique<track::Tracker>(
            std::vector<uint32_t>{0}, std::vector<track::EpochSource>{[p] { return p->next(); }},
            std::move(resyncs), o);
    }

    // One epoch as the job's workers open it (interleaved at random), by
    // the loader process `ppid`'s workers.
    uint64_t run_epoch(const std::vector<order::Sample>& samples, std::mt19937& rng,
                       uint32_t ppid) {
        plan::WorkerLayout l{spec.batch_size, spec.num_workers};
        uint64_t matched = 0;
        for (uint64_t p : worker_opens(l, samples.size(), rng)) {
            index::NodeId node = layout::opened_node(idx, ds.samples[samples[p]]);
            uint32_t pid = ppid + 1 + l.worker_of(p);
            track::Observation o = tracker->observe(node, t0, pid, ppid);
            matched += o.matched;
        }
        return matched;
    }
};

// Opens of a job seeded 43 (the first `count` positions of its epoch 0)
// by the loader process `ppid`'s workers, to a tracker registered with 42:
// no search can explain them.
void open_seed_43(Job& job, uint32_t rng_seed, uint32_t ppid, size_t count = SIZE_MAX) {
    order::JobSpec other = job.spec;
    other.seed = 43;
    order::EpochOrders real(other, 480);
    std::mt19937 rng(rng_seed);
    std::vector<order::Sample> samples;
    real.next(samples);
    samples.resize(std::min(count, samples.size()));
    job.run_epoch(samples, rng, ppid);
}

// A shuffle=True loader of batch 8 with 2 workers.
order::JobSpec two_workers(uint64_t seed, uint32_t epochs) {
    order::JobSpec s;
    s.seed = seed;
    s.epochs = epochs;
    s.batch_size = 8;
    s.num_workers = 2;
    return s;
}

} // namespace

TEST_CASE("a validation pass between epochs: the shifted epochs are found and followed") {
    order::JobSpec s = two_workers(5, 3);
    Job job(s);
    order::EpochOrders real(s, 480);
    std::mt19937 rng(1);
    std::vector<order::Sample> samples;
    for (uint32_t e = 0; e < 3; ++e) {
        if (e > 0) real.skip_words(2); // the validation loader's base_seed
        real.next(samples);
        job.run_epoch(samples, rng, 1000 + 10 * e);
    }
    track::Snapshot snap = settled(*job.tracker, t0);
    CHECK(snap.mode == track::Mode::clairvoyant);
    CHECK(snap.resyncs == 2);
    CHECK(snap.searching == 0);
    // Held opens are matched once the seed is known: none is lost.
    CHECK(snap.matched == snap.opens);
    REQUIRE(snap.ranks[0].history.size() == 3);
    CHECK(snap.ranks[0].history[1].skipped_words == 2);
    CHECK(snap.ranks[0].history[2].skipped_words == 2);
    CHECK(snap.ranks[0].finished);
}

TEST_CASE("random draws in every training step are found while within reach") {
    order::JobSpec s = two_workers(9, 2);
    Job job(s);
    order::EpochOrders real(s, 480);
    std::mt19937 rng(2);
    std::vector<order::Sample> samples;
    real.next(samples);
    job.run_epoch(samples, rng, 2000);
    real.skip_words(60 * 7); // torch.randperm(8) per step: 7 draws, 60 steps
    real.next(samples);
    job.run_epoch(samples, rng, 2100);
    track::Snapshot snap = settled(*job.tracker, t0);
    CHECK(snap.mode == track::Mode::clairvoyant);
    CHECK(snap.ranks[0].history.back().skipped_words == 420);
    CHECK(snap.matched == snap.opens);
}

TEST_CASE("opens beyond the search's reach fall back, saying what was searched") {
    order::JobSpec s = two_workers(9, 2);
    Job job(s, 100);
    order::EpochOrders real(s, 480);
    std::mt19937 rng(3);
    std::vector<order::Sample> samples;
    real.next(samples);
    job.run_epoch(samples, rng, 3000);
    real.skip_words(500); // more than resync_draws
    real.next(samples);
    job.run_epoch(samples, rng, 3100);
    track::Snapshot snap = settled(*job.tracker, t0);
    CHECK(snap.mode == track::Mode::fallback);
    CHECK(snap.reason.find("101 seeds along the global generator's chain") != std::string::npos);
    CHECK(snap.reason.find("resync_draws") != std::string::npos);
}

TEST_CASE("a DistributedSampler that forgets set_epoch is followed, with a warning") {
    order::JobSpec s;
    s.seed = 3;
    s.epochs = 3;
    s.sampler = order::SamplerKind::distributed;
    s.batch_size = 4;
    s.num_workers = 2;
    Job job(s);
    order::JobSpec stuck = s;
    stuck.epochs = 1;
    order::EpochOrders real(stuck, 480);
    std::vector<order::Sample> samples;
    real.next(samples);
    std::mt19937 rng(4);
    for (uint32_t e = 0; e < 3; ++e) job.run_epoch(samples, rng, 4000 + 10 * e);
    track::Snapshot snap = settled(*job.tracker, t0);
    CHECK(snap.mode == track::Mode::clairvoyant);
    CHECK(snap.warning.find("set_epoch") != std::string::npos);
    CHECK(snap.matched == snap.opens);
    for (const auto& n : snap.ranks[0].history) CHECK(n.seed_epoch == 0u);
}

TEST_CASE("a model initialised before the loader: the deep chain search finds the seed") {
    order::JobSpec s = two_workers(42, 2);
    Job job(s, 4096, plan::deep_chain_words - 1);
    order::JobSpec real_spec = s;
    real_spec.pre_draws = 300000; // a model's parameters, one draw each
    order::EpochOrders real(real_spec, 480);
    std::mt19937 rng(5);
    std::vector<order::Sample> samples;
    for (uint32_t e = 0; e < 2; ++e) {
        real.next(samples);
        job.run_epoch(samples, rng, 5000 + 10 * e);
    }
    track::Snapshot snap = settled(*job.tracker, t0);
    CHECK(snap.mode == track::Mode::clairvoyant);
    REQUIRE(snap.draw_offset.has_value());
    CHECK(*snap.draw_offset == 300000);
    CHECK(!snap.deep_searching);
    CHECK(snap.deep_scanned == 300000 - 4096);
    // The opens held while it searched are matched once the seed is known.
    CHECK(snap.matched == snap.opens);
    CHECK(snap.searching == 0);
    CHECK(snap.ranks[0].finished);
}

TEST_CASE("a job whose opens fit nothing down the chain falls back, saying how far it searched") {
    order::JobSpec s = two_workers(42, 2);
    Job job(s, 4096, (uint64_t{1} << 20) - 1);
    open_seed_43(job, 6, 6000);
    track::Snapshot snap = settled(*job.tracker, t0);
    CHECK(snap.mode == track::Mode::fallback);
    CHECK(snap.reason.find("1048576 words along the global generator's chain") !=
          std::string::npos);
    CHECK(snap.reason.find("pre_draws") != std::string::npos);
    CHECK(!snap.draw_offset.has_value());
    CHECK(snap.deep_scanned == snap.deep_range);
}

TEST_CASE("Keras previews use up no fit epoch, and a stray open after the last is no epoch") {
    order::JobSpec s;
    REQUIRE(order::set_job_key(s, "framework", "tensorflow") == "");
    s.seed = 1337;
    s.batch_size = 16;
    s.epochs = 3; // fit's epochs
    Job job(s);
    auto iterator = [&](uint64_t k) {
        order::EpochOrders o(s, 480);
        o.follow_tf_iterator(k, 1);
        std::vector<order::Sample> v;
        o.next(v);
        return v;
    };
    std::mt19937 rng(7);
    // Two `for x in train_ds.take(1)` previews: a batch and a little more
    // of iterators 0 and 1. Then Keras 3.15's fit reads iterators 2, 4, 6.
    for (uint64_t k : {0, 1}) {
        std::vector<order::Sample> preview = iterator(k);
        preview.resize(18);
        job.run_epoch(preview, rng, 7000);
    }
    for (uint64_t k : {2, 4, 6}) job.run_epoch(iterator(k), rng, 7000);
    // keras.utils.load_img of one training file after fit.
    index::NodeId one = layout::opened_node(job.idx, job.ds.samples[iterator(2)[5]]);
    job.tracker->observe(one, t0, 7999, 1);
    track::Snapshot snap = settled(*job.tracker, t0);
    INFO(snap.reason);
    CHECK(snap.mode == track::Mode::clairvoyant);
    CHECK(snap.ranks[0].finished);
    CHECK(snap.ranks[0].current->epoch == 2);
    std::vector<uint64_t> last;
    for (const auto& n : snap.ranks[0].history) last.push_back(n.tf_iterator.value_or(99));
    // Each preview's epoch 0 was replaced by the next iterator's.
    CHECK(last == std::vector<uint64_t>{2, 4, 6});
}

TEST_CASE("past its burst the deep search waits to pay each slice back; opens stay held") {
    order::JobSpec s = two_workers(42, 2);
    Job job(s, 4096, (uint64_t{1} << 26) - 1, 0); // no burst: paced from the first slice
    open_seed_43(job, 8, 8000, 40); // fits nowhere: the search would run to its end
    track::Snapshot snap = job.tracker->snapshot(t0);
    for (int i = 0; i < 1000 && snap.deep_scanned == 0; ++i) {
        std::this_thread::sleep_for(10ms);
        snap = job.tracker->snapshot(t0);
    }
    REQUIRE(snap.deep_searching);
    // One slice of 2^20 costs ~0.05 s of CPU, paid back at 2% in ~2.5 s:
    // half a second later the search has not gone on.
    std::this_thread::sleep_for(500ms);
    snap = job.tracker->snapshot(t0);
    CHECK(snap.deep_searching);
    CHECK(snap.deep_scanned == uint64_t{1} << 20);
    CHECK(snap.mode == track::Mode::clairvoyant);
    CHECK(snap.searching > 0); // the family's opens, held meanwhile
}

TEST_CASE("once the epoch it searches for is over, the deep search is paced before its end") {
    order::JobSpec s = two_workers(42, 2);
    // Past a tenth of the 20 s burst, with the epoch over, each slice is
    // paid back at 2%; the whole 2^28 would take the burst and more.
    Job job(s, 4096, (uint64_t{1} << 28) - 1);
    open_seed_43(job, 9, 9000); // the whole epoch, held
    // Wait until it stops moving (or ends, which is the failure).
    track::Snapshot snap = job.tracker->snapshot(t0);
    for (int i = 0; i < 120; ++i) {
        std::this_thread::sleep_for(500ms);
        track::Snapshot now = job.tracker->snapshot(t0);
        bool still = now.deep_scanned == snap.deep_scanned && now.deep_scanned > 0;
        snap = now;
        if (still || !snap.deep_searching) break;
    }
    CHECK(snap.deep_searching);
    CHECK(snap.deep_scanned < snap.deep_range);
    CHECK(snap.searching == 480);
}
