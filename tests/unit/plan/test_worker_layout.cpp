// SPDX-License-Identifier: MIT
// WorkerLayout against order::worker_stream, the reference for which
// worker opens what.
#include "clairfs/order/worker_split.hpp"
#include "clairfs/plan/epoch_plan.hpp"

#include <doctest/doctest.h>
#include <numeric>

using namespace clairfs;

TEST_CASE("positions round-trip through (worker, stream index), short last batch included") {
    for (uint32_t batch : {1u, 3u, 4u})
        for (uint32_t workers : {0u, 1u, 2u, 3u})
            for (uint32_t n : {0u, 1u, 5u, 11u, 12u, 13u, 40u}) {
                CAPTURE(batch);
                CAPTURE(workers);
                CAPTURE(n);
                plan::WorkerLayout l{batch, workers};
                for (uint64_t p = 0; p < n; ++p) {
                    CHECK(l.worker_of(p) < l.streams());
                    CHECK(l.position(l.worker_of(p), l.stream_index(p)) == p);
                }
                std::vector<order::Sample> epoch(n), stream;
                std::iota(epoch.begin(), epoch.end(), order::Sample{0});
                for (uint32_t w = 0; w < l.streams(); ++w) {
                    order::worker_stream(epoch, batch, workers, w, stream);
                    // Identity samples: stream entries are the positions themselves.
                    for (uint64_t s = 0; s < stream.size(); ++s) {
                        CHECK(l.position(w, s) == stream[s]);
                        CHECK(l.worker_of(stream[s]) == w);
                        CHECK(l.stream_index(stream[s]) == s);
                    }
                    // One past a stream's end lies past the epoch: how the
                    // tracker knows a worker is done.
                    CHECK(l.position(w, stream.size()) >= n);
                }
            }
}

TEST_CASE("position_at_or_after walks a hand-made plan") {
    plan::EpochPlan e;
    e.nodes = {5, 2, 5, 7, 5};
    e.first_position.assign(8, plan::no_position);
    e.first_position[5] = 0;
    e.first_position[2] = 1;
    e.first_position[7] = 3;
    e.next_same = {2, plan::no_position, 4, plan::no_position, plan::no_position};
    CHECK(e.position_at_or_after(5, 0) == 0);
    CHECK(e.position_at_or_after(5, 1) == 2);
    CHECK(e.position_at_or_after(5, 3) == 4);
    CHECK(e.position_at_or_after(5, 5) == plan::no_position);
    CHECK(e.position_at_or_after(2, 1) == 1);
    CHECK(e.position_at_or_after(2, 2) == plan::no_position);
    CHECK(e.position_at_or_after(0, 0) == plan::no_position);
    CHECK(e.position_at_or_after(8, 0) == plan::no_position);
    e.next_same.clear(); // without repeats only the first position counts
    e.nodes = {5, 2};
    CHECK(e.position_at_or_after(2, 0) == 1);
    CHECK(e.position_at_or_after(2, 1) == 1);
    CHECK(e.position_at_or_after(5, 1) == plan::no_position);
}
