// SPDX-License-Identifier: MIT
// The source model sends a fetch where it will finish first: measured
// costs per file, stretched by the queue ahead, with the shared file
// system spared whenever the numbers do not say otherwise.
#include "clairfs/peer/source_model.hpp"

#include <doctest/doctest.h>

using namespace clairfs::peer;

TEST_CASE("a slow shared file system loses to any live peer") {
    // 20 MB/s and 250 IOPS behind the mount: ~5 ms a file at best; a peer's
    // RAM over the network: ~0.3 ms.
    CHECK(choose_source({0.0003, 0, 4}, {0.005, 0, 16}) == Choice::peer);
    // Even with the peer's link busy with 20 fetches and the backing idle.
    CHECK(choose_source({0.0003, 20, 4}, {0.005, 0, 16}) == Choice::peer);
}

TEST_CASE("a fast local file system beats a slow or busy peer") {
    // Local NVMe behind the mount (0.1 ms a file) against a remote peer at 2 ms.
    CHECK(choose_source({0.002, 0, 4}, {0.0001, 0, 16}) == Choice::backing);
    // A peer as fast as the backing store, but with a queue of 40 ahead.
    CHECK(choose_source({0.0005, 40, 4}, {0.0005, 0, 16}) == Choice::backing);
    // ... and the backing store's own queue counts too.
    CHECK(choose_source({0.0005, 4, 4}, {0.0005, 160, 16}) == Choice::peer);
}

TEST_CASE("an unmeasured source is tried, and a tie goes to the peer") {
    CHECK(choose_source({-1, 0, 4}, {0.0001, 0, 16}) == Choice::peer);
    CHECK(choose_source({0.001, 0, 4}, {-1, 0, 16}) == Choice::peer);
    CHECK(choose_source({0.001, 0, 4}, {0.001, 0, 16}) == Choice::peer);
}

TEST_CASE("the measured mean follows new samples and keeps the queue count") {
    SourceRate r;
    CHECK(r.seconds_per_file() < 0);
    r.begin();
    r.begin();
    CHECK(r.inflight() == 2);
    r.end(0.008);
    CHECK(r.seconds_per_file() == doctest::Approx(0.008));
    r.end(0.016, false); // not a measurement: only the queue changes
    CHECK(r.inflight() == 0);
    CHECK(r.seconds_per_file() == doctest::Approx(0.008));
    for (int i = 0; i < 100; ++i) {
        r.begin();
        r.end(0.001);
    }
    CHECK(r.seconds_per_file() == doctest::Approx(0.001).epsilon(0.01));
    CHECK(r.samples() == 101);
}
