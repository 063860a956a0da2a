// SPDX-License-Identifier: MIT
// Recognising a job from its loaders' first opens. Every process's opens
// here come from EpochOrders and worker_stream (what clairfs predicts for a
// registered job, checked against torch in tests/order/), never from the
// code under test.
#include "clairfs/order/epoch_orders.hpp"
#include "clairfs/order/job_detect.hpp"
#include "clairfs/order/worker_split.hpp"

#include <chrono>
#include <doctest/doctest.h>
#include <random>

using namespace clairfs::order;

namespace {

// What rank `spec.rank`'s loader processes open of `spec`'s first epoch
// (start_epoch), `batches` batches per worker (fewer if the epoch ends).
std::vector<ProcessOpens> loader_opens(JobSpec spec, uint32_t n, uint32_t batches,
                                       uint32_t first_pid) {
    EpochOrders o(spec, n);
    std::vector<Sample> epoch;
    o.next(epoch);
    std::vector<ProcessOpens> out;
    uint32_t procs = std::max<uint32_t>(spec.num_workers, 1);
    for (uint32_t w = 0; w < procs; ++w) {
        std::vector<Sample> stream;
        worker_stream(epoch, spec.batch_size, spec.num_workers, w, stream);
        stream.resize(std::min<size_t>(stream.size(), size_t{batches} * spec.batch_size));
        out.push_back({first_pid + w, stream});
    }
    return out;
}

JobSpec distributed(uint64_t seed, uint32_t world, uint32_t rank, uint32_t batch, uint32_t workers) {
    JobSpec s;
    s.sampler = SamplerKind::distributed;
    s.seed = seed;
    s.world_size = world;
    s.rank = rank;
    s.batch_size = batch;
    s.num_workers = workers;
    s.epochs = 1;
    return s;
}

// The options the daemon uses, with a short range where a test needs no
// more (the full range is timed once, below).
DetectOptions quick() {
    DetectOptions o;
    o.seed_max = 2000;
    return o;
}

} // namespace

TEST_CASE("a DistributedSampler job: seed, world size, rank, batch size and workers") {
    const uint32_t n = 20000;
    auto procs = loader_opens(distributed(0, 8, 5, 32, 3), n, 2, 100);
    DetectStats stats;
    auto j = detect_job(n, procs, quick(), stats);
    REQUIRE(j);
    CHECK(j->sampler == DetectedSampler::distributed);
    CHECK(j->seed == 0);
    CHECK(j->world == 8);
    CHECK(j->ranks == std::vector<uint32_t>{5});
    CHECK(j->batch == 32);
    CHECK(j->workers == 3);
    CHECK(j->opens == 3 * 2 * 32);
    CHECK(j->fewest == 3 * 2 * 32);
    CHECK(j->pids == std::vector<uint32_t>{100, 101, 102});
}

TEST_CASE("first batches only: the batch size from where the workers begin") {
    const uint32_t n = 5000;
    auto procs = loader_opens(distributed(1234, 4, 2, 16, 4), n, 1, 7);
    procs[3].samples.resize(3); // the last worker has barely begun
    DetectStats stats;
    auto j = detect_job(n, procs, quick(), stats);
    REQUIRE(j);
    CHECK(j->seed == 1234);
    CHECK(j->world == 4);
    CHECK(j->ranks == std::vector<uint32_t>{2});
    CHECK(j->batch == 16);
    CHECK(j->workers == 4);
    CHECK(j->opens == 3 * 16 + 3);
    // Every worker seen, but none past its first batch: four could be more.
    CHECK_FALSE(j->layout_shown);
}

// The failure this guards against (tests/prefetch/test_detect.py,
// distributed_default_seed, on a loaded host): three workers of batch 32,
// the third not yet started, read as two, registered so, and the job fell
// back at its next epoch.
TEST_CASE("a worker yet to start: the worker count is not shown until one reaches its second batch") {
    const uint32_t n = 4096;
    auto procs = loader_opens(distributed(0, 8, 5, 32, 3), n, 2, 100);
    auto first_batches = procs;
    first_batches[0].samples.resize(32);
    first_batches[1].samples.resize(32);
    first_batches.pop_back(); // worker 2 has opened nothing
    DetectStats stats;
    auto j = detect_job(n, first_batches, quick(), stats);
    REQUIRE(j);
    CHECK(j->workers == 2); // what the opens allow so far ...
    CHECK_FALSE(j->layout_shown); // ... and that it is only that
    // Worker 0 opens its next batch (batch 3): the count shows, three.
    first_batches[0].samples.assign(procs[0].samples.begin(), procs[0].samples.begin() + 33);
    // The detector's recheck of the job pending confirmation sees it.
    auto now = recheck_job(n, *j, first_batches);
    REQUIRE(now);
    CHECK(now->workers == 3);
    CHECK(now->batch == 32);
    CHECK(now->layout_shown);
    // An epoch of no more batches than workers (64 samples of rank 5 of 8,
    // batch 32, four workers: two batches): no worker reaches a second
    // batch, but once the whole epoch is opened none is left out.
    auto small = loader_opens(distributed(0, 8, 5, 32, 4), 512, 2, 300);
    small.resize(2); // workers 2 and 3 get no batch
    j = detect_job(512, small, quick(), stats);
    REQUIRE(j);
    CHECK(j->workers == 2);
    CHECK(j->layout_shown);
    small[1].samples.resize(31); // the epoch's last sample not yet opened
    j = detect_job(512, small, quick(), stats);
    REQUIRE(j);
    CHECK_FALSE(j->layout_shown);
    // One process per rank shows its layout at once: nothing is left out.
    auto alone = loader_opens(distributed(0, 8, 5, 32, 0), n, 2, 200);
    alone[0].samples.resize(40);
    j = detect_job(n, alone, quick(), stats);
    REQUIRE(j);
    CHECK(j->workers == 0);
    CHECK(j->layout_shown);
}

TEST_CASE("several local ranks, a resumed epoch, and processes that are not loaders") {
    const uint32_t n = 30000;
    std::vector<ProcessOpens> procs;
    for (uint32_t r = 8; r < 12; ++r) {
        JobSpec s = distributed(0, 16, r, 8, 2);
        s.start_epoch = 37;
        auto p = loader_opens(s, n, 3, 1000 + 10 * r);
        procs.insert(procs.end(), p.begin(), p.end());
    }
    // A process reading a few samples its own way, and one that opened one.
    procs.push_back({5, {17, 4, 29999, 12}});
    procs.push_back({6, {3}});
    DetectStats stats;
    auto j = detect_job(n, procs, quick(), stats);
    REQUIRE(j);
    CHECK(j->seed == 37); // seed + epoch
    CHECK(j->world == 16);
    CHECK(j->ranks == std::vector<uint32_t>{8, 9, 10, 11});
    CHECK(j->batch == 8);
    CHECK(j->workers == 2);
    CHECK(j->fewest == 2 * 3 * 8);
    CHECK(j->pids.size() == 8);
}

TEST_CASE("a RandomSampler with an explicit generator, and no shuffle") {
    const uint32_t n = 3000;
    JobSpec s;
    s.sampler = SamplerKind::random;
    s.generator = GeneratorKind::explicit_;
    s.seed = 42;
    s.batch_size = 16;
    s.num_workers = 2;
    auto procs = loader_opens(s, n, 2, 50);
    DetectStats stats;
    auto j = detect_job(n, procs, quick(), stats);
    REQUIRE(j);
    CHECK(j->sampler == DetectedSampler::random_explicit);
    CHECK(j->seed == 42);
    CHECK(j->world == 1);
    CHECK(j->batch == 16);
    CHECK(j->workers == 2);

    s.sampler = SamplerKind::sequential;
    j = detect_job(n, loader_opens(s, n, 3, 60), quick(), stats);
    REQUIRE(j);
    CHECK(j->sampler == DetectedSampler::sequential);
    CHECK(j->world == 1);
    CHECK(j->batch == 16);

    // One process reading sorted files: sequential, batch size unknown (1).
    std::vector<ProcessOpens> sorted{{9, {}}};
    for (Sample i = 0; i < 100; ++i) sorted[0].samples.push_back(i);
    j = detect_job(n, sorted, quick(), stats);
    REQUIRE(j);
    CHECK(j->sampler == DetectedSampler::sequential);
    CHECK(j->batch == 1);
    CHECK(j->workers == 0);
}

TEST_CASE("an unguessable seed is not detected, over the whole range") {
    const uint32_t n = 1281167; // ImageNet-1k
    JobSpec s = distributed(0x9e3779b97f4a7c15ULL, 8, 3, 32, 4);
    auto procs = loader_opens(s, n, 1, 10);
    DetectStats stats;
    auto t0 = std::chrono::steady_clock::now();
    auto j = detect_job(n, procs, DetectOptions{}, stats);
    double s_taken = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK_FALSE(j);
    CHECK(stats.candidates > 200000); // the range twice (random and distributed), and the list
    MESSAGE("full search over n = 1281167: " << stats.candidates << " candidates, "
                                             << stats.positions << " positions, " << s_taken
                                             << " s");
    // The same job with the default seed is found, and costs little.
    s.seed = 0;
    DetectStats found;
    j = detect_job(n, loader_opens(s, n, 1, 10), DetectOptions{}, found);
    REQUIRE(j);
    CHECK(j->ranks == std::vector<uint32_t>{3});
    CHECK(found.candidates < 100);
}

TEST_CASE("recheck: the guess holds while its processes follow it, and not once one strays") {
    const uint32_t n = 10000;
    auto procs = loader_opens(distributed(3407, 2, 1, 8, 2), n, 4, 20);
    std::vector<ProcessOpens> early = procs;
    for (auto& p : early) p.samples.resize(10);
    DetectStats stats;
    auto j = detect_job(n, early, quick(), stats);
    REQUIRE(j);
    CHECK(j->seed == 3407);
    auto later = recheck_job(n, *j, procs);
    REQUIRE(later);
    CHECK(later->opens == 2 * 4 * 8);
    procs[1].samples[20] = (procs[1].samples[20] + 1) % n;
    CHECK_FALSE(recheck_job(n, *j, procs));
}

namespace {

// A shuffle=True loader without a generator, after `pre` words drawn
// before the loop (a model's initialisation).
JobSpec global_chain(uint64_t seed, uint64_t pre, uint32_t batch, uint32_t workers) {
    JobSpec s;
    s.sampler = SamplerKind::random;
    s.generator = GeneratorKind::global;
    s.seed = seed;
    s.pre_draws = pre;
    s.batch_size = batch;
    s.num_workers = workers;
    s.epochs = 1;
    return s;
}

const std::vector<uint64_t> listed{0, 1, 42, 123, 1234, 2021, 3407, 12345};

// Steps until a job is found or the chains end.
std::optional<ChainFound> scan(ChainDetect& c, std::span<const ChainTarget> targets) {
    DetectStats stats;
    while (!c.done())
        if (auto f = c.step(targets, uint64_t{1} << 16, 8, stats)) return f;
    return std::nullopt;
}

} // namespace

TEST_CASE("the global chain: a listed seed found at its offset, with batch size and workers") {
    const uint32_t n = 1600;
    // Among the processes: a sequential validation loader over other files.
    auto procs = loader_opens(global_chain(42, 200000, 32, 2), n, 1, 70);
    ChainDetect chain(listed, 3, 1 << 20);
    std::vector<ChainTarget> targets{{n, procs}};
    auto f = scan(chain, targets);
    REQUIRE(f);
    CHECK(f->target == 0);
    CHECK(f->job.sampler == DetectedSampler::random_global);
    CHECK(f->job.seed == 42);
    // The seed word follows base_seed (two words) and the seed's high word.
    CHECK(f->job.draw_offset == 200000 + 3);
    CHECK(f->job.batch == 32);
    CHECK(f->job.workers == 2);
    CHECK(f->job.pids == std::vector<uint32_t>{70, 71});
    // Every seed's chain was scanned as deep as the one found, not deeper:
    // the seeds go in step.
    CHECK(chain.scanned() <= 200003);
    CHECK(chain.scanned() + (1 << 16) > 200003);

    // The recheck keeps where it was found.
    auto again = recheck_job(n, f->job, procs);
    REQUIRE(again);
    CHECK(again->draw_offset == 200003);
    CHECK(again->seed == 42);
    CHECK(again->seed_word == f->job.seed_word);

    // Workers 0 (no worker processes): the loader's own process, batch
    // size shown by nothing but the order; and a second target (another
    // root's numbering) beside it.
    auto single = loader_opens(global_chain(3407, 5, 8, 0), n, 4, 90);
    std::vector<ProcessOpens> noise{{5, {1, 2, 3, 4, 5, 6, 7, 8, 9}}};
    ChainDetect two(listed, 3, 1 << 16);
    std::vector<ChainTarget> both{{n + 10, noise}, {n, single}};
    f = scan(two, both);
    REQUIRE(f);
    CHECK(f->target == 1);
    CHECK(f->job.seed == 3407);
    CHECK(f->job.draw_offset == 8);
    CHECK(f->job.workers == 0);
}

TEST_CASE("the global chain: an unlisted seed, or too little evidence, finds nothing") {
    const uint32_t n = 1600;
    auto procs = loader_opens(global_chain(7, 1000, 16, 2), n, 1, 70);
    ChainDetect chain(listed, 3, 1 << 17);
    std::vector<ChainTarget> targets{{n, procs}};
    CHECK_FALSE(scan(chain, targets));
    CHECK(chain.done());
    CHECK(chain.scanned() == 1 << 17);

    // Seed 42, but each worker has opened 4 files: fewer than a
    // hypothesis must place (8), so none is accepted.
    auto few = loader_opens(global_chain(42, 1000, 4, 2), n, 1, 70);
    ChainDetect again(listed, 3, 1 << 12);
    std::vector<ChainTarget> t2{{n, few}};
    CHECK_FALSE(scan(again, t2));
}
