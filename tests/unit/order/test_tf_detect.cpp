// SPDX-License-Identifier: MIT
// Recognising an unregistered tf.data job from its first opens. The opens
// come from TfEpochs (what clairfs predicts for a registered job, checked
// against TensorFlow in tests/order/), never from the code under test,
// shuffled within a window and spread over threads as tf.data's thread
// pool opens them.
#include "clairfs/order/tf_detect.hpp"
#include "clairfs/order/tf_epochs.hpp"

#include <algorithm>
#include "tf_test_spec.hpp"

#include <doctest/doctest.h>
#include <numeric>
#include <random>
#include <set>

using namespace clairfs::order;

namespace {

// Iterator k's whole order.
std::vector<Sample> iterator_order(const JobSpec& spec, uint32_t n, uint64_t k) {
    REQUIRE(validate(spec, n) == "");
    TfEpochs tf(spec, n);
    TfEpochs::Cursor c;
    c.k = k;
    tf.set_cursor(c);
    std::vector<Sample> out;
    tf.next(out);
    return out;
}

// The first `count` files of `order` in the order tf.data's threads open
// them: each open lands up to `jitter` positions from its place (files
// finish in any order within tf.data's parallelism).
std::vector<Sample> opened_in_order(std::span<const Sample> order, size_t count, uint32_t jitter,
                                    uint32_t seed) {
    std::mt19937 rng(seed);
    count = std::min(count, order.size());
    std::vector<std::pair<double, Sample>> keyed;
    std::uniform_real_distribution<double> shift(0, jitter);
    for (size_t i = 0; i < count; ++i) keyed.emplace_back(double(i) + shift(rng), order[i]);
    std::sort(keyed.begin(), keyed.end());
    std::vector<Sample> out;
    for (auto [key, s] : keyed) out.push_back(s);
    return out;
}

TfDetectOptions two_cores() {
    TfDetectOptions o;
    o.cores = 2; // the same bound on every machine
    return o;
}

std::optional<TfDetectedJob> detect(uint32_t n, TfListing l, const std::vector<Sample>& p,
                                    TfDetectStats& stats) {
    return detect_tf_job(n, l, p, two_cores(), stats);
}

} // namespace

TEST_CASE("image_dataset_from_directory: seed, batch size, validation subset and iterator") {
    const uint32_t n = 6000;
    struct Case {
        JobSpec spec;
        uint64_t k;
    };
    std::vector<Case> cases = {
        {tf_spec({{"seed", "42"}, {"batch_size", "32"}}), 0},
        {tf_spec({{"seed", "123"}, {"batch_size", "64"}}), 2},
        {tf_spec({{"seed", "3407"}, {"batch_size", "128"}}), 5},
        {tf_spec({{"seed", "1234"}, {"batch_size", "16"}, {"validation_split", "0.25"},
                  {"subset", "validation"}}),
         1},
        {tf_spec({{"seed", "0"}, {"batch_size", "256"}, {"validation_split", "0.2"},
                  {"subset", "validation"}}),
         0},
        // seed=None after keras.utils.set_random_seed(G), and both given.
        {tf_spec({{"seed", "none"}, {"global_seed", "2021"}, {"batch_size", "32"}}), 1},
        {tf_spec({{"seed", "12345"}, {"global_seed", "1"}, {"batch_size", "64"}}), 0},
    };
    for (const Case& c : cases) {
        CAPTURE(c.spec.seed);
        CAPTURE(c.k);
        auto order = iterator_order(c.spec, n, c.k);
        auto opens = opened_in_order(order, 300, 24, static_cast<uint32_t>(c.spec.seed + c.k));
        TfDetectStats stats;
        auto j = detect(n, TfListing::keras_directory, opens, stats);
        REQUIRE(j);
        CHECK(j->spec.pipeline == TfPipeline::image_dataset_from_directory);
        CHECK(j->spec.seed_none == c.spec.seed_none);
        if (!c.spec.seed_none) CHECK(j->spec.seed == c.spec.seed);
        CHECK(j->spec.global_seed == c.spec.global_seed);
        CHECK(j->spec.batch_size == c.spec.batch_size);
        CHECK(j->spec.validation_split == c.spec.validation_split);
        CHECK(j->spec.subset == c.spec.subset);
        CHECK(j->spec.keras_version == KerasVersion::v3);
        CHECK(j->iterator == c.k);
        CHECK(j->opens == 300);
        CHECK(validate(j->spec, n) == "");
    }
}

TEST_CASE("a training subset reads as the whole list until its end: found as that list") {
    // Its prefix is the whole list's: the split shows only where the
    // input ends. The job found predicts the same first files.
    const uint32_t n = 20000;
    JobSpec spec = tf_spec({{"seed", "1"}, {"batch_size", "32"}, {"validation_split", "0.2"},
                            {"subset", "training"}});
    auto order = iterator_order(spec, n, 0);
    auto opens = opened_in_order(order, 400, 16, 9);
    TfDetectStats stats;
    auto j = detect(n, TfListing::keras_directory, opens, stats);
    REQUIRE(j);
    CHECK(j->spec.seed == 1);
    CHECK(j->spec.batch_size == 32);
    CHECK_FALSE(j->spec.validation_split);
    auto found = iterator_order(j->spec, n, j->iterator);
    CHECK(std::equal(order.begin(), order.begin() + 1000, found.begin()));
}

TEST_CASE("list_files: seed, seed=None after set_random_seed, and the iterator") {
    const uint32_t n = 4000;
    for (auto [spec, k] : {std::pair{tf_spec({{"pipeline", "list_files"}, {"pattern", "*"}, {"seed", "0"}}), 0},
                           std::pair{tf_spec({{"pipeline", "list_files"}, {"pattern", "*"}, {"seed", "none"},
                                              {"global_seed", "42"}}),
                                     3}}) {
        CAPTURE(k);
        auto order = iterator_order(spec, n, k);
        auto opens = opened_in_order(order, 200, 20, 5);
        TfDetectStats stats;
        auto j = detect(n, TfListing::glob, opens, stats);
        REQUIRE(j);
        CHECK(j->spec.pipeline == TfPipeline::list_files);
        CHECK(j->spec.seed_none == spec.seed_none);
        CHECK(j->spec.seed == spec.seed);
        CHECK(j->spec.global_seed == spec.global_seed);
        CHECK(j->iterator == static_cast<uint64_t>(k));
        // Each candidate (a pipeline: 8 iterators) cost prefixes, nothing
        // near n per iterator.
        CHECK(stats.steps < stats.candidates * 8 * 1000);
    }
}

TEST_CASE("list_files' sparse prefix is the shuffle's own order") {
    for (uint32_t n : {1U, 2U, 7U, 100U, 3000U}) {
        std::vector<Sample> input(n);
        std::iota(input.begin(), input.end(), Sample{0});
        TfShuffle sh;
        std::vector<Sample> want, got;
        for (TfSeeds seeds : {TfSeeds{1, 2}, TfSeeds{87654321, 42}}) {
            sh.run(input, n, seeds, n, want);
            tf_full_shuffle_prefix(n, seeds, n, got);
            CHECK(got == want);
            tf_full_shuffle_prefix(n, seeds, n / 2, got);
            CHECK(std::equal(got.begin(), got.end(), want.begin()));
        }
    }
}

TEST_CASE("an unlisted seed, random opens, a sequential reader: nothing") {
    const uint32_t n = 5000;
    TfDetectStats stats;
    // Seed 1337 (keras-io's example) is not listed unless --detect-seeds.
    auto order = iterator_order(tf_spec({{"seed", "1337"}, {"batch_size", "32"}}), n, 0);
    CHECK_FALSE(detect(n, TfListing::keras_directory, opened_in_order(order, 300, 16, 1), stats));
    TfDetectOptions listed = two_cores();
    listed.seeds.push_back(1337);
    CHECK(detect_tf_job(n, TfListing::keras_directory, opened_in_order(order, 300, 16, 1), listed,
                        stats));

    std::vector<Sample> random(n);
    std::iota(random.begin(), random.end(), Sample{0});
    std::shuffle(random.begin(), random.end(), std::mt19937(7));
    CHECK_FALSE(detect(n, TfListing::keras_directory, opened_in_order(random, 300, 16, 2), stats));
    CHECK_FALSE(detect(n, TfListing::glob, opened_in_order(random, 300, 16, 2), stats));

    // Files read in their listed order (shuffle=False, a validation pass).
    std::vector<Sample> sequential(n);
    std::iota(sequential.begin(), sequential.end(), Sample{0});
    for (uint32_t jitter : {1U, 8U}) {
        CHECK_FALSE(detect(n, TfListing::keras_directory, opened_in_order(sequential, 500, jitter, 3),
                           stats));
        CHECK_FALSE(detect(n, TfListing::glob, opened_in_order(sequential, 500, jitter, 3), stats));
    }
}

TEST_CASE("older Keras reads numpy's order: not taken for a small buffer's shuffle") {
    const uint32_t n = 5000;
    JobSpec spec = tf_spec({{"seed", "42"}, {"batch_size", "8"}, {"keras_version", "2.15"}});
    auto order = iterator_order(spec, n, 0);
    TfDetectStats stats;
    auto j = detect(n, TfListing::keras_directory, opened_in_order(order, 400, 8, 4), stats);
    REQUIRE(j);
    CHECK(j->spec.keras_version == KerasVersion::legacy);
    CHECK(j->spec.seed == 42);
}

TEST_CASE("too few opens to rule out chance: nothing yet, and how many would do") {
    const uint32_t n = 3000;
    JobSpec spec = tf_spec({{"seed", "42"}, {"batch_size", "32"}});
    auto order = iterator_order(spec, n, 0);
    TfDetectStats stats;
    CHECK_FALSE(detect(n, TfListing::keras_directory, opened_in_order(order, 12, 4, 6), stats));
    CHECK(stats.opens_needed > 12);
    CHECK(stats.opens_needed < 300);
    TfDetectStats more;
    CHECK(detect(n, TfListing::keras_directory,
                 opened_in_order(order, stats.opens_needed + 8, 4, 6), more));
}

TEST_CASE("Keras previews before fit: found from the runs of three iterators") {
    // `for x in ds.take(1)` twice, then fit: iterators 0 and 1 end after
    // a batch and what was in flight, iterator 2 reads on. The opens of
    // the three follow one another, some files in two of them (the
    // shuffle buffer of 256 draws each iterator's first from one pool).
    const uint32_t n = 6000;
    JobSpec spec = tf_spec({{"seed", "123"}, {"batch_size", "32"}, {"validation_split", "0.2"},
                            {"subset", "training"}});
    std::vector<Sample> opens;
    std::set<Sample> seen;
    for (auto [k, count] : {std::pair{0, 70}, std::pair{1, 60}, std::pair{2, 300}}) {
        auto order = iterator_order(spec, n, static_cast<uint64_t>(k));
        for (Sample s : opened_in_order(order, static_cast<size_t>(count), 12, 7))
            if (seen.insert(s).second) opens.push_back(s);
    }
    TfDetectStats stats;
    auto j = detect(n, TfListing::keras_directory, opens, stats);
    REQUIRE(j);
    CHECK(j->spec.seed == 123);
    CHECK(j->spec.batch_size == 32);
    // Three runs, one per iterator: nearly every open explained (a
    // preview's in-flight file that comes after the next one began is
    // passed over).
    CHECK(j->iterator == 0);
    CHECK(j->last_iterator == 2);
    CHECK(j->opens >= 300);
    auto found = iterator_order(j->spec, n, 2);
    auto want = iterator_order(spec, n, 2);
    CHECK(std::equal(want.begin(), want.begin() + 500, found.begin()));
}

TEST_CASE("opens from the middle of an iterator and a validation pass: no other pipeline taken") {
    // What detection sees after a job taken for the whole directory fell
    // back at its validation pass: the training subset's last files
    // (mid-iterator, no run begins there), then the unshuffled validation
    // pass. Wide windows (batch 512 may lag 1,024 files of 1,600) once let
    // another seed's pipeline fit 89 of them in two runs.
    const uint32_t n = 1600;
    auto keys = [](const char* subset) {
        return tf_spec({{"seed", "123"}, {"batch_size", "32"}, {"validation_split", "0.2"},
                        {"subset", subset}});
    };
    auto training = iterator_order(keys("training"), n, 0);
    auto val = iterator_order(keys("validation_of_both"), n, 0);
    for (uint32_t from : {1030U, 1100U, 1200U}) {
        CAPTURE(from);
        std::vector<Sample> tail(training.begin() + from, training.end());
        std::vector<Sample> opens = opened_in_order(tail, tail.size(), 12, from);
        for (Sample s : opened_in_order(val, 120, 12, from + 1)) opens.push_back(s);
        for (size_t m : {89UL, 160UL, opens.size()}) {
            CAPTURE(m);
            std::vector<Sample> first(opens.begin(), opens.begin() + static_cast<ptrdiff_t>(m));
            TfDetectStats stats;
            auto j = detect(n, TfListing::keras_directory, first, stats);
            if (j) {
                CHECK(j->spec.seed == 123);
                CHECK_FALSE(j->spec.seed_none);
                CHECK_FALSE(j->spec.global_seed);
            }
        }
    }
}

TEST_CASE("a handful of opens of a small dataset: judged again, whatever fits them by chance") {
    // 16 to 50 opens of 1,600 files: other seeds' pipelines fit them too,
    // in several runs; the search must not stop at the first of those
    // seeds, and must say when to judge again.
    const uint32_t n = 1600;
    auto order = iterator_order(tf_spec({{"seed", "123"}, {"batch_size", "32"}}), n, 0);
    for (size_t m : {16UL, 30UL, 50UL}) {
        CAPTURE(m);
        TfDetectStats stats;
        CHECK_FALSE(detect(n, TfListing::keras_directory, opened_in_order(order, m, 12, 3), stats));
        CHECK(stats.opens_needed > m);
        CHECK(stats.opens_needed < 200);
    }
    TfDetectStats stats;
    auto j = detect(n, TfListing::keras_directory, opened_in_order(order, 120, 12, 3), stats);
    REQUIRE(j);
    CHECK(j->spec.seed == 123);
    CHECK(j->spec.batch_size == 32);
}
