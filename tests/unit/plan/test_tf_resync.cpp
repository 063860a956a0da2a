// SPDX-License-Identifier: MIT
// RankPlanner::resync for framework tensorflow: an epoch that runs another
// iterator of the dataset than predicted (Keras 3.15's fit runs 2e) is
// found from its first opens, and the step between epochs is learnt.
#include "clairfs/order/epoch_orders.hpp"
#include "plan_checks.hpp"

using namespace clairfs;
using namespace clairfs::test;

namespace {

order::JobSpec tf_fit_spec() {
    order::JobSpec s;
    REQUIRE(order::set_job_key(s, "framework", "tensorflow") == "");
    s.seed = 11;
    s.batch_size = 8;
    s.epochs = 5;
    return s;
}

// Iterator k's order as mount nodes.
std::vector<index::NodeId> iterator_nodes(const order::JobSpec& s, const layout::Dataset& ds,
                                          const index::Index& idx, uint64_t k) {
    order::EpochOrders o(s, static_cast<uint32_t>(ds.samples.size()));
    o.follow_tf_iterator(k, 1);
    std::vector<order::Sample> samples;
    o.next(samples);
    std::vector<index::NodeId> out;
    for (order::Sample x : samples) out.push_back(layout::opened_node(idx, ds.samples[x]));
    return out;
}

plan::ResyncRequest first_opens(const std::vector<index::NodeId>& epoch, uint64_t e) {
    plan::ResyncRequest req;
    req.epoch = e;
    req.opened.assign(epoch.begin(), epoch.begin() + 16);
    req.window = 16 + 3 * 8;
    return req;
}

} // namespace

TEST_CASE("fit's iterators 0, 2, 4...: found at epoch 1, then followed with step 2") {
    auto idx = flat_index(4, 100); // 400 files
    auto ds = sorted_dataset(idx);
    order::JobSpec s = tf_fit_spec();
    REQUIRE(plan::resyncable(s, 400));
    plan::RankPlanner planner(s, ds, idx);
    auto e0 = planner.next();
    CHECK(e0->nodes == iterator_nodes(s, ds, idx, 0));
    CHECK(e0->tf_iterator == 0u);
    auto e1 = planner.next(); // predicted iterator 1; fit runs iterator 2
    CHECK(e1->tf_iterator == 1u);
    plan::ResyncResult r = planner.resync(first_opens(iterator_nodes(s, ds, idx, 2), 1), 4096);
    REQUIRE(r.found);
    CHECK(r.tf_iterator == 2u);
    CHECK(r.tried == "iterators 1 to 65 of the tf.data shuffle at epoch 1");
    for (uint64_t e = 1; e < 5; ++e) {
        auto p = planner.next();
        REQUIRE(p);
        CHECK(p->epoch == e);
        CHECK(p->tf_iterator == 2 * e);
        CHECK(p->nodes == iterator_nodes(s, ds, idx, 2 * e));
        check_plan(*p, idx.size());
    }
    CHECK_FALSE(planner.next());
}

TEST_CASE("an iterator beyond the search, or opens of no iterator, change nothing") {
    auto idx = flat_index(4, 100);
    auto ds = sorted_dataset(idx);
    order::JobSpec s = tf_fit_spec();
    plan::RankPlanner planner(s, ds, idx);
    planner.next();
    auto predicted = planner.next();
    // Iterator 9 with max_offset 4: iterators 1 to 5 are tried.
    plan::ResyncResult r = planner.resync(first_opens(iterator_nodes(s, ds, idx, 9), 1), 4);
    CHECK_FALSE(r.found);
    CHECK(r.tried == "iterators 1 to 5 of the tf.data shuffle at epoch 1");
    auto again = planner.next();
    REQUIRE(again);
    CHECK(again->nodes == predicted->nodes);
    // resync_draws far above 64 still tries 65 iterators.
    planner.next();
    r = planner.resync(first_opens(iterator_nodes(s, ds, idx, 200), 2), 1u << 20);
    CHECK_FALSE(r.found);
    CHECK(r.tried == "iterators 2 to 66 of the tf.data shuffle at epoch 2");
}

TEST_CASE("a first epoch after a peek (iterator 1) is followed one iterator per epoch") {
    auto idx = flat_index(2, 150);
    auto ds = sorted_dataset(idx);
    order::JobSpec s = tf_fit_spec();
    plan::RankPlanner planner(s, ds, idx);
    planner.next();
    plan::ResyncResult r = planner.resync(first_opens(iterator_nodes(s, ds, idx, 1), 0), 64);
    REQUIRE(r.found);
    CHECK(r.tf_iterator == 1u);
    CHECK(planner.next()->nodes == iterator_nodes(s, ds, idx, 1));
    CHECK(planner.next()->nodes == iterator_nodes(s, ds, idx, 2));
}

TEST_CASE("orders that do not depend on the iterator are not searched") {
    order::JobSpec s = tf_fit_spec();
    CHECK(plan::resyncable(s, 10));
    s.shuffle = false;
    CHECK_FALSE(plan::resyncable(s, 10));
    s.shuffle = true;
    s.keras_version = order::KerasVersion::legacy;
    CHECK_FALSE(plan::resyncable(s, 10));
}
