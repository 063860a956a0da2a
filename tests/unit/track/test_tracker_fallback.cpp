// SPDX-License-Identifier: MIT
// The ways a prediction fails, each recognised and named: a wrong seed (or
// sampler, or batch size), a forgotten set_epoch, a job running past the
// registered epochs. And the orders that only look like failures.
#include "tracker_plans.hpp"

using namespace clairfs;
using namespace clairfs::test;
using namespace std::chrono_literals;

namespace {

order::JobSpec distributed_spec(uint32_t epochs, bool shuffle) {
    order::JobSpec s;
    s.sampler = order::SamplerKind::distributed;
    s.world_size = 2;
    s.rank = 0;
    s.seed = 3;
    s.epochs = epochs;
    s.shuffle = shuffle;
    return s;
}

// Opens one epoch of `plan` as a loader with `l` would, expecting each open
// to match.
void open_epoch(track::Tracker& t, const PlanPtr& plan, const plan::WorkerLayout& l,
                std::mt19937& rng) {
    for (uint64_t p : worker_opens(l, plan->size(), rng))
        CHECK(t.observe(plan->nodes[p], t0).matched);
}

std::string low_rate_reason(const track::Snapshot& s) {
    return "only " + std::to_string(s.matched * 100 / s.opens) + "% of " + std::to_string(s.opens) +
           " opens in epoch " + std::to_string(s.epoch) +
           " followed the registered order: is the seed, sampler, batch size or num_workers "
           "different from the job's?";
}

} // namespace

TEST_CASE("a wrong seed falls back once min_opens opens mostly missed") {
    const uint32_t n = 2000;
    order::JobSpec s;
    s.epochs = 3;
    s.seed = 1;
    auto registered = plans_of(s, n);
    s.seed = 2;
    auto actual = plans_of(s, n);
    auto opt = tracker_options(4, 2);
    track::Tracker t({0}, {source_of(registered)}, opt);
    std::mt19937 rng(5);
    auto order = worker_opens(opt.layout, n, rng);
    size_t i = 0;
    for (; i < order.size() && t.mode() == track::Mode::clairvoyant; ++i) {
        track::Observation o = t.observe(actual[0]->nodes[order[i]], t0);
        CHECK(o.dataset_file);
        if (t.mode() == track::Mode::clairvoyant) CHECK(settled(t, t0).reason.empty());
    }
    CHECK(t.mode() == track::Mode::fallback);
    track::Snapshot snap = settled(t, t0);
    CHECK(snap.mode == track::Mode::fallback);
    CHECK(snap.opens == opt.min_opens); // judged as soon as it may be, not before
    CHECK(i == opt.min_opens);
    CHECK(snap.matched * 2 < snap.opens);
    CHECK(snap.reason == low_rate_reason(snap));
    MESSAGE(snap.reason);

    // From now on opens are only counted, and the reason stays.
    std::string reason = snap.reason;
    track::Observation o = t.observe(registered[0]->nodes[snap.ranks[0].frontier], t0);
    CHECK(o.dataset_file);
    CHECK_FALSE(o.matched);
    CHECK_FALSE(t.observe(0, t0).dataset_file);
    snap = settled(t, t0);
    CHECK(snap.opens == opt.min_opens + 1);
    CHECK(snap.reason == reason);
    CHECK(t.mode() == track::Mode::fallback);
}

TEST_CASE("a match rate at the threshold is still clairvoyant") {
    // Every other open is a re-open of the sample just read: exactly half match.
    const uint32_t n = 200;
    order::JobSpec s;
    s.seed = 8;
    auto plans = plans_of(s, n);
    auto opt = tracker_options(1, 0);
    opt.min_opens = 10;
    track::Tracker t({0}, {source_of(plans)}, opt);
    for (uint64_t p = 0; p < 50; ++p) {
        CHECK(t.observe(plans[0]->nodes[p], t0).matched);
        CHECK_FALSE(t.observe(plans[0]->nodes[p], t0).matched);
    }
    track::Snapshot snap = settled(t, t0);
    CHECK(snap.match_rate == 0.5);
    CHECK(snap.mode == track::Mode::clairvoyant);
    // One more miss tips it.
    CHECK_FALSE(t.observe(plans[0]->nodes[0], t0).matched);
    CHECK(t.mode() == track::Mode::fallback);
    CHECK(settled(t, t0).reason == "only 49% of 101 opens in epoch 0 followed the registered "
                                   "order: is the seed, sampler, batch size or num_workers "
                                   "different from the job's?");
}

TEST_CASE("a forgotten set_epoch: the second epoch replays the first's order") {
    const uint32_t n = 400;
    auto plans = plans_of(distributed_spec(3, true), n);
    REQUIRE(plans[0]->nodes != plans[1]->nodes);
    auto opt = tracker_options(4, 2);
    track::Tracker t({0}, {source_of(plans)}, opt);
    std::mt19937 rng(3);
    open_epoch(t, plans[0], opt.layout, rng);
    CHECK(t.mode() == track::Mode::clairvoyant);
    // The job's second epoch is epoch 0's order again, its workers timed anew.
    auto replay = worker_opens(opt.layout, plans[0]->size(), rng);
    track::Observation o = t.observe(plans[0]->nodes[replay[0]], t0);
    CHECK(o.dataset_file);
    CHECK_FALSE(o.matched);
    CHECK(t.mode() == track::Mode::fallback);
    CHECK(settled(t, t0).reason == "epoch 1 of rank 0 began with epoch 0's order again: the job "
                                   "does not call sampler.set_epoch(epoch)");
}

TEST_CASE("orders that repeat every epoch are no forgotten set_epoch") {
    const uint32_t n = 100;
    std::vector<PlanPtr> plans;
    SUBCASE("DistributedSampler(shuffle=False)") {
        plans = plans_of(distributed_spec(3, false), n);
    }
    SUBCASE("sequential") {
        order::JobSpec s;
        s.sampler = order::SamplerKind::sequential;
        s.epochs = 3;
        plans = plans_of(s, n);
    }
    REQUIRE(plans[0]->nodes == plans[1]->nodes);
    auto opt = tracker_options(4, 2);
    track::Tracker t({0}, {source_of(plans)}, opt);
    std::mt19937 rng(4);
    for (uint64_t e = 0; e < 3; ++e) {
        open_epoch(t, plans[e], opt.layout, rng);
        track::Snapshot snap = settled(t, t0);
        CHECK(snap.mode == track::Mode::clairvoyant);
        CHECK(snap.epoch == e + (e == 2 ? 1 : 0));
    }
}

TEST_CASE("half an epoch must be behind a rank before a repeat reads as set_epoch") {
    const uint32_t n = 400;
    auto plans = plans_of(distributed_spec(3, true), n);
    auto opt = tracker_options(1, 0);
    opt.min_opens = 1000; // keep the match rate out of this
    track::Tracker t({0}, {source_of(plans)}, opt);
    for (uint64_t p = 0; p < 99; ++p) CHECK(t.observe(plans[0]->nodes[p], t0).matched);
    // A re-open of the first sample, well before half the epoch.
    CHECK_FALSE(t.observe(plans[0]->nodes[0], t0).matched);
    CHECK(t.mode() == track::Mode::clairvoyant);
    for (uint64_t p = 99; p < 100; ++p) CHECK(t.observe(plans[0]->nodes[p], t0).matched);
    // At half an epoch it does.
    CHECK_FALSE(t.observe(plans[0]->nodes[0], t0).matched);
    CHECK(t.mode() == track::Mode::fallback);
}

TEST_CASE("a job that goes past the registered epochs falls back") {
    const uint32_t n = 20;
    order::JobSpec s;
    s.sampler = order::SamplerKind::sequential;
    s.epochs = 2;
    s.start_epoch = 4;
    auto plans = plans_of(s, n);
    auto opt = tracker_options(5, 0);
    track::Tracker t({0}, {source_of(plans)}, opt);
    std::mt19937 rng(2);
    open_epoch(t, plans[0], opt.layout, rng);
    open_epoch(t, plans[1], opt.layout, rng);
    track::Snapshot snap = settled(t, t0);
    CHECK(snap.mode == track::Mode::clairvoyant);
    CHECK(snap.epoch == 6);
    CHECK(snap.ranks[0].finished);
    CHECK(snap.ranks[0].frontier == snap.ranks[0].current->size());
    // One stray open (a script loading one sample after training) is not
    // an epoch; a batch's worth is (tracker_options(5, 0): batch 5).
    CHECK(t.observe(plans[1]->nodes[0], t0).dataset_file);
    CHECK(t.mode() == track::Mode::clairvoyant);
    for (uint64_t p = 1; p < 5; ++p) t.observe(plans[1]->nodes[p], t0);
    CHECK(t.mode() == track::Mode::fallback);
    CHECK(settled(t, t0).reason == "the job went past the 2 registered epochs");
}

TEST_CASE("an unfinished rank does not go past its epochs") {
    const uint32_t n = 20;
    order::JobSpec s;
    s.seed = 6;
    auto plans = plans_of(s, n);
    auto opt = tracker_options(1, 0);
    track::Tracker t({0}, {source_of(plans)}, opt);
    for (uint64_t p = 0; p + 1 < n; ++p) CHECK(t.observe(plans[0]->nodes[p], t0).matched);
    CHECK_FALSE(t.observe(plans[0]->nodes[0], t0).matched); // re-open, one sample still to come
    CHECK(t.mode() == track::Mode::clairvoyant);
    CHECK(t.observe(plans[0]->nodes[n - 1], t0).matched);
    CHECK(settled(t, t0).epoch == 1);
}
