// SPDX-License-Identifier: MIT
// With peers, a registration's prefetching waits until every peer has
// registered the job alike: then each file's home moves to the node that
// reads it first, and a file read before the move is read twice in the
// group. The controller activates a job and then shares it with the peers.
// A peer's note judged in that moment, against the registrations before it
// (none), lifted the hold, and a round prefetched by the hash homes: on a
// loaded machine a node of tests/prefetch/test_peers_mpi.py read 162 files
// where the schedule gave it 160. Here the job is activated and not yet
// shared while the note arrives, so the moment is certain, not a race.
#include "clairfs/control/registration.hpp"
#include "clairfs/peer/peers.hpp"
#include "clairfs/peer/transport.hpp"
#include "clairfs/prefetch/engine.hpp"
#include "dataset.hpp"

#include <atomic>
#include <nlohmann/json.hpp>

using namespace clairfs;
using namespace std::chrono_literals;

namespace {

// Two members on loopback: the engine's, and a bare one standing in for
// the other daemon. `self` picks which this Group is.
peer::Group pair_group(const std::vector<uint16_t>& ports, int self) {
    peer::Group g;
    g.token = "00112233445566778899aabbccddeeff";
    g.self = self;
    for (int r = 0; r < 2; ++r) g.members.push_back({r, "127.0.0.1", ports[size_t(r)], 1, 64 << 20, 0});
    return g;
}

uint64_t backing_files(const prefetch::Engine& e) {
    nlohmann::json st;
    e.status(st);
    return st["backing"]["files"].get<uint64_t>();
}

} // namespace

TEST_CASE("a peer's note while this node's job is not yet shared starts no prefetching") {
    test::Dataset d(300);
    std::vector<int> fds;
    std::vector<uint16_t> ports;
    for (int r = 0; r < 2; ++r) {
        int fd = -1;
        uint16_t port = 0;
        REQUIRE(peer::open_listener(fd, port) == "");
        fds.push_back(fd);
        ports.push_back(port);
    }
    prefetch::EngineOptions opt;
    opt.mem = 64 << 20;
    opt.fetch_threads = 2;
    prefetch::Engine engine(d.idx, d.root_fd, opt);
    auto mine = std::make_unique<peer::Peers>(pair_group(ports, 0), fds[0], peer::PeerOptions{});
    peer::Peers* a = mine.get();
    engine.attach_peers(std::move(mine));
    peer::Peers b(pair_group(ports, 1), fds[1], peer::PeerOptions{});
    std::atomic<int> served{0};
    b.set_server([&](index::NodeId id) {
        ++served;
        const std::string& bytes = d.contents[size_t(std::ranges::find(d.ids, id) - d.ids.begin())];
        auto blob = cache::Blob::make(bytes.size());
        std::memcpy(blob->bytes.get(), bytes.data(), bytes.size());
        return peer::ServeResult{0, std::move(blob)};
    });
    engine.start();
    b.start();
    REQUIRE(test::eventually([&] { return a->settled() && b.settled(); }, 10s));

    // A DistributedSampler job over both nodes, rank 0 here.
    control::ControlRequest req;
    REQUIRE(control::parse_control(R"({"layout": "sorted", "sampler": "distributed",
        "world_size": 2, "ranks": [0], "seed": 5, "batch_size": 4})",
                                   req) == "");
    plan::Job job;
    REQUIRE(control::resolve_job(req.loaders().front(), d.idx, "", job) == "");
    auto prepared = engine.prepare("default", {std::make_shared<const plan::Job>(std::move(job))});
    // Activated, and not shared yet: the controller's next step.
    auto replaced = engine.activate(prepared);
    REQUIRE(replaced.empty());

    // The other node's note arrives now (it registered nothing yet).
    b.share_note(R"({"jobs": {}, "ranks": {}})");
    REQUIRE(test::eventually([&] { return a->notes().size() == 1; }, 10s));
    // Judged on the links thread just after it is stored; a round it let
    // run would start at once (the hold's end wakes the scheduler).
    std::this_thread::sleep_for(500ms);
    CHECK(backing_files(engine) == 0);
    CHECK(served.load() == 0);

    // Shared, and registered alike over there: the homes are placed by the
    // schedule and prefetching starts, from both nodes.
    engine.share_registrations({{"default", "same keys"}}, {{"default", {0}}});
    b.share_note(R"({"jobs": {"default": "same keys"}, "ranks": {"default": [1]}})");
    CHECK(test::eventually([&] { return backing_files(engine) > 0; }, 10s));
    nlohmann::json st;
    engine.status(st);
    CHECK(st["peers"]["homes"] == "schedule");
    engine.stop();
    b.stop();
}
