// SPDX-License-Identifier: MIT
// framework tensorflow: the keys and how they combine, EpochOrders for a
// tf.data pipeline (iterators, rewind), and the search for the iterator an
// epoch ran. Exactness against TensorFlow itself: tests/order/test_tf_order.py.
#include "clairfs/order/epoch_orders.hpp"
#include "clairfs/order/numpy_random.hpp"
#include "clairfs/order/tf_iterator_search.hpp"

#include "tf_test_spec.hpp"

#include <doctest/doctest.h>
#include <numeric>

using namespace clairfs::order;

namespace {

std::vector<std::vector<Sample>> epochs_of(const JobSpec& s, uint32_t n, int count) {
    EpochOrders o(s, n);
    std::vector<std::vector<Sample>> out(count);
    for (auto& e : out) o.next(e);
    return out;
}

// What image_dataset_from_directory's iterator k yields, built from the
// primitives by hand.
std::vector<Sample> by_hand(uint32_t n, uint32_t seed, uint64_t buffer, std::optional<Seed> g,
                            uint64_t k, size_t keep = SIZE_MAX) {
    std::vector<Sample> list(n);
    std::iota(list.begin(), list.end(), Sample{0});
    numpy_shuffle(seed, list);
    if (keep < list.size()) list.resize(keep);
    TfShuffle sh;
    std::vector<Sample> out;
    sh.run(list, buffer, tf_iterator_seeds(*tf_get_seed(g, Seed{seed, false}), k), n, out);
    return out;
}

} // namespace

TEST_CASE("tensorflow keys: values, None, and what each framework refuses") {
    JobSpec s = tf_spec({{"seed", "none"}, {"global_seed", "7"}, {"shuffle_buffer", "64"}});
    CHECK(s.seed_none);
    CHECK(s.global_seed->value == 7);
    CHECK(s.shuffle_buffer == 64u);
    CHECK(validate(s, 10) == "");
    CHECK(set_job_key(s, "seed", "3") == "");
    CHECK_FALSE(s.seed_none);
    CHECK(set_job_key(s, "framework", "jax").starts_with("invalid value for framework"));
    CHECK(set_job_key(s, "validation_split", "1").find("between 0 and 1") != std::string::npos);
    CHECK(set_job_key(s, "validation_split", "0.25") == "");
    CHECK(set_job_key(s, "keras_version", "3.3.2").find("3.3.0 to 3.3.2") != std::string::npos);
    CHECK(set_job_key(s, "keras_version", "3.15.1") == "");
    CHECK(s.keras_version == KerasVersion::v3);
    CHECK(set_job_key(s, "keras_version", "3.2") == "");
    CHECK(s.keras_version == KerasVersion::legacy);
    CHECK(set_job_key(s, "keras_version", "2.15") == "");
    CHECK(s.keras_version == KerasVersion::legacy);
    CHECK(set_job_key(s, "pattern", "/abs/*").find("relative") != std::string::npos);
    CHECK(set_job_key(s, "pattern", "a/../b").find("'..'") != std::string::npos);

    auto why = [](JobSpec spec, uint64_t n = 100) { return validate(spec, n); };
    CHECK(why(tf_spec({{"seed", "none"}})).starts_with("seed none needs global_seed"));
    CHECK(why(tf_spec({{"seed", "none"}, {"shuffle", "false"}})) == "");
    CHECK(why(tf_spec({{"num_workers", "2"}})).starts_with("num_workers is a PyTorch key"));
    CHECK(why(tf_spec({{"sampler", "sequential"}})).starts_with("sampler is a PyTorch key"));
    CHECK(why(tf_spec({{"torch_version", "2.7"}})).starts_with("torch_version is a PyTorch key"));
    CHECK(why(tf_spec({{"world_size", "2"}})).starts_with("world_size is a PyTorch key"));
    CHECK(why(tf_spec({{"validation_split", "0.2"}})).starts_with("validation_split and subset"));
    CHECK(why(tf_spec({{"subset", "training"}})).starts_with("validation_split and subset"));
    CHECK(why(tf_spec({{"validation_split", "0.2"}, {"subset", "training"}, {"seed", "none"},
                       {"global_seed", "1"}}))
              .starts_with("validation_split with shuffle needs a seed"));
    CHECK(why(tf_spec({{"validation_split", "0.2"}, {"subset", "training"}}), 4)
              .find("training subset empty") != std::string::npos);
    CHECK(why(tf_spec({{"validation_split", "0.2"}, {"subset", "validation"}}), 4) == "");
    CHECK(why(tf_spec({{"seed", "4294967296"}})).starts_with("seed must be from 0 to 2^32-1"));
    CHECK(why(tf_spec({{"seed", "-1"}, {"pipeline", "list_files"}, {"pattern", "*"}})) == "");
    CHECK(why(tf_spec({{"seed", "none"}, {"global_seed", "-1"}}))
              .starts_with("global_seed must be from 0 to 2^32-1"));
    CHECK(why(tf_spec({{"pipeline", "list_files"}})).starts_with("pipeline list_files needs pattern"));
    CHECK(why(tf_spec({{"pattern", "*"}})).starts_with("pattern belongs to pipeline list_files"));
    CHECK(why(tf_spec({{"pipeline", "list_files"}, {"pattern", "*"}, {"keras_version", "2.15"}}))
              .starts_with("keras_version belongs"));
    CHECK(why(tf_spec({}), 0).find("no files") != std::string::npos);

    JobSpec torch;
    CHECK(set_job_key(torch, "shuffle_buffer", "8") == "");
    CHECK(validate(torch, 10) == "shuffle_buffer needs framework tensorflow");
    JobSpec torch_none;
    CHECK(set_job_key(torch_none, "seed", "null") == "");
    CHECK(validate(torch_none, 10).starts_with("seed none needs framework tensorflow"));
}

TEST_CASE("image_dataset_from_directory: numpy order, then iterator e's tf.data shuffle") {
    JobSpec s = tf_spec({{"seed", "42"}, {"batch_size", "4"}});
    auto got = epochs_of(s, 50, 3);
    for (uint64_t e = 0; e < 3; ++e) CHECK(got[e] == by_hand(50, 42, 32, std::nullopt, e));
    CHECK(got[0] != got[1]);
    // A global seed changes the shuffle's seed pair, not the numpy order.
    JobSpec g = tf_spec({{"seed", "42"}, {"batch_size", "4"}, {"global_seed", "9"}});
    CHECK(epochs_of(g, 50, 1)[0] == by_hand(50, 42, 32, Seed{9, false}, 0));
    // seed=None after keras.utils.set_random_seed(9): S = RandomState(9).randint(1e6).
    JobSpec none = tf_spec({{"seed", "none"}, {"batch_size", "4"}, {"global_seed", "9"}});
    uint32_t drawn = numpy_randint(9, 1000000);
    CHECK(epochs_of(none, 50, 1)[0] == by_hand(50, drawn, 32, Seed{9, false}, 0));
}

TEST_CASE("validation_split: training is the first n - int(v n) of the numpy order, validation "
          "the rest") {
    JobSpec tr = tf_spec({{"seed", "3"}, {"validation_split", "0.3"}, {"subset", "training"},
                          {"shuffle", "false"}});
    JobSpec va = tr;
    REQUIRE(set_job_key(va, "subset", "validation") == "");
    std::vector<Sample> all(10);
    std::iota(all.begin(), all.end(), Sample{0});
    CHECK(epochs_of(tr, 10, 1)[0] == std::vector<Sample>(all.begin(), all.begin() + 7));
    CHECK(epochs_of(va, 10, 1)[0] == std::vector<Sample>(all.begin() + 7, all.end()));
    // int(0.05 * 10) = 0: Keras's paths[-0:] is the whole list.
    REQUIRE(set_job_key(va, "validation_split", "0.05") == "");
    CHECK(epochs_of(va, 10, 1)[0] == all);
    JobSpec shuffled = tf_spec({{"seed", "3"}, {"validation_split", "0.3"}, {"subset", "training"}});
    CHECK(epochs_of(shuffled, 10, 2)[1] == by_hand(10, 3, 8, std::nullopt, 1, 7));
}

TEST_CASE("older Keras and shuffle=False read the same order every epoch") {
    JobSpec legacy = tf_spec({{"seed", "42"}, {"keras_version", "2.15"}});
    auto got = epochs_of(legacy, 10, 2);
    CHECK(got[0] == std::vector<Sample>{8, 1, 5, 0, 7, 2, 9, 4, 3, 6});
    CHECK(got[1] == got[0]);
    auto plain = epochs_of(tf_spec({{"shuffle", "false"}}), 4, 2);
    CHECK(plain[1] == std::vector<Sample>{0, 1, 2, 3});
}

TEST_CASE("list_files: the sorted list through shuffle(n, seed); or another buffer") {
    JobSpec s = tf_spec({{"pipeline", "list_files"}, {"pattern", "*"}, {"seed", "5"}});
    std::vector<Sample> list(20);
    std::iota(list.begin(), list.end(), Sample{0});
    TfShuffle sh;
    std::vector<Sample> want;
    auto got = epochs_of(s, 20, 2);
    for (uint64_t e = 0; e < 2; ++e) {
        sh.run(list, 20, tf_iterator_seeds({87654321, 5}, e), 20, want);
        CHECK(got[e] == want);
    }
    REQUIRE(set_job_key(s, "shuffle_buffer", "3") == "");
    sh.run(list, 3, tf_iterator_seeds({87654321, 5}, 0), 20, want);
    CHECK(epochs_of(s, 20, 1)[0] == want);
}

TEST_CASE("follow_tf_iterator: k, then k + step; rewind restores the iterator") {
    JobSpec s = tf_spec({{"seed", "1"}, {"batch_size", "2"}});
    EpochOrders o(s, 40);
    auto all = epochs_of(s, 40, 7); // iterator e for epoch e
    std::vector<Sample> e;
    CHECK(o.tf_iterator() == 0);
    CHECK_FALSE(o.last_tf_iterator());
    o.next(e);
    CHECK(e == all[0]);
    o.follow_tf_iterator(2, 2);
    o.next(e);
    CHECK(e == all[2]);
    CHECK(o.last_tf_iterator() == 2u);
    o.next(e);
    CHECK(e == all[4]);
    REQUIRE(o.rewind(2));
    CHECK(o.tf_iterator() == 4);
    CHECK(o.last_tf_iterator() == 2u);
    o.next(e);
    CHECK(e == all[4]);
    o.next(e);
    CHECK(e == all[6]);
}

TEST_CASE("find_tf_iterator: the first candidate whose prefix holds the evidence") {
    JobSpec s = tf_spec({{"seed", "7"}, {"batch_size", "8"}});
    const uint32_t n = 500;
    auto all = epochs_of(s, n, 12);
    EpochOrders o(s, n);
    REQUIRE(o.tf());
    std::vector<uint64_t> candidates(12);
    std::iota(candidates.begin(), candidates.end(), uint64_t{0});
    for (uint64_t k : {0u, 1u, 5u, 11u}) {
        EpochEvidence ev{{all[k].begin(), all[k].begin() + 12}, 12 + 24, {}};
        CHECK(find_tf_iterator(*o.tf(), candidates, ev) == k);
    }
    EpochEvidence late{{all[11].begin(), all[11].begin() + 12}, 36, {}};
    std::vector<uint64_t> early = {0, 1, 2, 3};
    CHECK_FALSE(find_tf_iterator(*o.tf(), early, late));
    // Opens from far into the epoch are no prefix of any iterator.
    EpochEvidence tail{{all[3].end() - 12, all[3].end()}, 36, {}};
    CHECK_FALSE(find_tf_iterator(*o.tf(), candidates, tail));
    // An order that does not depend on the iterator is nothing to search.
    EpochOrders legacy(tf_spec({{"seed", "7"}, {"keras_version", "2.15"}}), n);
    CHECK_FALSE(find_tf_iterator(*legacy.tf(), candidates, late));
}
