// SPDX-License-Identifier: MIT
// The simulator's orders are the daemon's: each rank's positions, read
// from one permutation per epoch, equal what DistributedSampler and the
// loader give that rank alone.
#include "clairfs/order/epoch_orders.hpp"
#include "clairfs/order/samplers.hpp"
#include "sim/sim_orders.hpp"

#include <doctest/doctest.h>

using namespace clairfs;

TEST_CASE("every rank's epoch from one permutation equals its own sampler's") {
    for (bool drop : {false, true})
        for (bool loader_drop : {false, true}) {
            order::JobSpec spec;
            spec.sampler = order::SamplerKind::distributed;
            spec.world_size = 6;
            spec.seed = 3;
            spec.epochs = 3;
            spec.start_epoch = 2;
            spec.batch_size = 7;
            spec.sampler_drop_last = drop;
            spec.drop_last = loader_drop;
            const uint32_t n = 1003; // not a multiple of the world: padding or truncation
            sim::SimOrders orders(spec, n);
            for (uint32_t e = 0; e < 3; ++e) {
                orders.build(e);
                for (uint32_t r = 0; r < spec.world_size; ++r) {
                    order::JobSpec s = spec;
                    s.rank = r;
                    order::EpochOrders own(s, n);
                    std::vector<order::Sample> want;
                    for (uint32_t k = 0; k <= e; ++k) own.next(want);
                    REQUIRE(want.size() == orders.positions());
                    for (uint32_t p = 0; p < want.size(); ++p)
                        REQUIRE(orders.file(e, r, p) == want[p]);
                }
                // first(): the first rank and position to open each file.
                for (uint32_t r = 0; r < spec.world_size; ++r)
                    for (uint32_t p = 0; p < orders.positions(); ++p) {
                        uint32_t f = orders.file(e, r, p);
                        uint32_t k = orders.first(e, f);
                        REQUIRE(k != sim::none);
                        CHECK(uint64_t{k / 6} * 6 + k % 6 <= uint64_t{p} * 6 + r);
                        CHECK(orders.file(e, k % 6, k / 6) == f);
                    }
            }
        }
}

TEST_CASE("one rank with a RandomSampler: the loader's own epochs") {
    order::JobSpec spec;
    spec.sampler = order::SamplerKind::random;
    spec.generator = order::GeneratorKind::explicit_;
    spec.seed = 11;
    spec.epochs = 2;
    spec.batch_size = 10;
    spec.drop_last = true;
    sim::SimOrders orders(spec, 95);
    order::EpochOrders own(spec, 95);
    std::vector<order::Sample> want;
    for (uint32_t e = 0; e < 2; ++e) {
        orders.build(e);
        own.next(want);
        REQUIRE(orders.positions() == want.size());
        CHECK(want.size() == 90);
        for (uint32_t p = 0; p < want.size(); ++p) CHECK(orders.file(e, 0, p) == want[p]);
    }
}
