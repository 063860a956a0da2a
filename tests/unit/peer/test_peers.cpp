// SPDX-License-Identifier: MIT
// Daemons of one group, in one process over loopback: each file comes from
// its home byte for byte; a home that leaves, falls silent or sends bad
// bytes costs a fetch at most the peer timeout and never a wrong byte; a
// caller without the group's token is refused.
#include "clairfs/peer/peers.hpp"
#include "clairfs/peer/transport.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace clairfs;
using namespace clairfs::peer;
using namespace std::chrono_literals;

namespace {

const std::string token = "00112233445566778899aabbccddeeff";

std::string bytes_of(index::NodeId id) {
    std::string s(1000 + id * 37, '\0');
    for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>((i * 131 + id * 7) & 0xff);
    return s;
}

cache::BlobRef blob_of(const std::string& s) {
    auto b = cache::Blob::make(s.size());
    std::memcpy(b->bytes.get(), s.data(), s.size());
    return b;
}

// n listeners on loopback, and the group they form.
Group listen_all(int n, std::vector<int>& fds) {
    Group g;
    g.token = token;
    for (int r = 0; r < n; ++r) {
        int fd = -1;
        uint16_t port = 0;
        REQUIRE(open_listener(fd, port) == "");
        fds.push_back(fd);
        g.members.push_back({r, "127.0.0.1", port, 1, 1 << 20, 0});
    }
    return g;
}

template <class F> bool eventually(F f, std::chrono::milliseconds bound = 5000ms) {
    auto end = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < end) {
        if (f()) return true;
        std::this_thread::sleep_for(5ms);
    }
    return f();
}

struct Cluster {
    std::vector<std::unique_ptr<Peers>> p;
    std::atomic<int> served{0};
    Cluster(int n, PeerOptions opt = {}) {
        std::vector<int> fds;
        Group g = listen_all(n, fds);
        for (int r = 0; r < n; ++r) {
            Group mine = g;
            mine.self = r;
            p.push_back(std::make_unique<Peers>(mine, fds[static_cast<size_t>(r)], opt));
            p.back()->set_server([this](index::NodeId id) {
                ++served;
                return ServeResult{0, blob_of(bytes_of(id))};
            });
        }
        for (auto& x : p) x->start();
        for (auto& x : p) REQUIRE(eventually([&] { return x->settled(); }));
    }
};

nlohmann::json status_of(const Peers& p) {
    nlohmann::json j;
    p.status(j);
    return j["peers"];
}

// A raw caller: connects to `port` and says hello as `rank` with `tok`.
int raw_hello(uint16_t port, int rank, const std::string& tok) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    std::string body = std::to_string(rank) + " " + tok;
    FrameHeader h;
    h.type = FrameType::hello;
    h.length = body.size();
    h.payload_hash = payload_checksum({body.data(), body.size()});
    char hdr[FrameHeader::size];
    encode_header(h, hdr);
    REQUIRE(::write(fd, hdr, sizeof hdr) == static_cast<ssize_t>(sizeof hdr));
    REQUIRE(::write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size()));
    return fd;
}

} // namespace

TEST_CASE("every member fetches every file from its home, byte for byte") {
    Cluster c(3);
    int fetched = 0;
    for (index::NodeId id = 0; id < 300; ++id) {
        int home = c.p[0]->home_of(id);
        for (auto& x : c.p) REQUIRE(x->home_of(id) == home); // known everywhere alike
        for (int m = 0; m < 3; ++m) {
            if (m == home) continue;
            REQUIRE(c.p[static_cast<size_t>(m)]->usable(home));
            PeerReply r = c.p[static_cast<size_t>(m)]->fetch(home, id, bytes_of(id).size(), m == 1);
            REQUIRE(r.error == 0);
            REQUIRE(r.blob);
            CHECK(std::string(r.blob->bytes.get(), r.blob->size) == bytes_of(id));
            ++fetched;
        }
    }
    CHECK(c.served == fetched);
    uint64_t in = 0, out = 0;
    for (auto& x : c.p) {
        auto s = status_of(*x);
        in += s["files_in"].get<uint64_t>();
        out += s["files_out"].get<uint64_t>();
        CHECK(s["alive"] == 3);
        CHECK(s["formed"] == true);
        CHECK(s["errors"] == 0);
    }
    CHECK(in == static_cast<uint64_t>(fetched));
    CHECK(out == static_cast<uint64_t>(fetched));
}

TEST_CASE("homes spread the files over the members") {
    Cluster c(3);
    int per[3] = {};
    for (index::NodeId id = 0; id < 3000; ++id) ++per[c.p[0]->home_of(id)];
    for (int n : per) {
        CHECK(n > 850);
        CHECK(n < 1150);
    }
}

TEST_CASE("a size the index does not expect is refused, not served") {
    Cluster c(2);
    index::NodeId id = 0;
    while (c.p[0]->home_of(id) != 1) ++id;
    PeerReply r = c.p[0]->fetch(1, id, bytes_of(id).size() + 1, true);
    CHECK(r.error == -EBADMSG);
    CHECK(status_of(*c.p[0])["corrupt"] == 1);
}

TEST_CASE("a member that unmounts is down at once for the others, and never asked again") {
    Cluster c(3);
    c.p[2]->stop();
    REQUIRE(eventually([&] { return !c.p[0]->usable(2) && !c.p[1]->usable(2); }));
    auto t0 = std::chrono::steady_clock::now();
    PeerReply r = c.p[0]->fetch(2, 5, bytes_of(5).size(), true);
    CHECK(r.error == -EHOSTDOWN);
    CHECK(std::chrono::steady_clock::now() - t0 < 100ms);
    auto s = status_of(*c.p[0]);
    CHECK(s["alive"] == 2);
    CHECK(s["dead"] == nlohmann::json::array({2}));
    CHECK(s["down_reasons"]["2"].get<std::string>().find("unmounted") != std::string::npos);
    // The survivors still trade.
    index::NodeId id = 0;
    while (c.p[0]->home_of(id) != 1) ++id;
    CHECK(c.p[0]->fetch(1, id, bytes_of(id).size(), true).error == 0);
}

TEST_CASE("a silent home is dead after the timeout, and a fetch waiting on it ends then") {
    // Member 1 is a bare socket: it says hello, then nothing, as a hung
    // daemon (SIGSTOP, a dead NIC) would.
    std::vector<int> fds;
    Group g = listen_all(2, fds);
    ::close(fds[1]);
    g.self = 0;
    PeerOptions opt;
    opt.timeout = 400ms;
    Peers p(g, fds[0], opt);
    p.set_server([](index::NodeId) { return ServeResult{-EIO, nullptr}; });
    p.start();
    int fd = raw_hello(g.members[0].port, 1, token);
    REQUIRE(eventually([&] { return p.usable(1); }));
    auto t0 = std::chrono::steady_clock::now();
    PeerReply r = p.fetch(1, 3, 100, true);
    auto waited = std::chrono::steady_clock::now() - t0;
    CHECK(r.error == -EHOSTDOWN);
    CHECK(waited < 400ms + 1000ms);
    CHECK_FALSE(p.usable(1));
    CHECK(status_of(p)["down_reasons"]["1"].get<std::string>().find("silent") !=
          std::string::npos);
    ::close(fd);
}

TEST_CASE("bytes that fail their checksum are refused and counted; the link stays up") {
    std::vector<int> fds;
    Group g = listen_all(2, fds);
    Group g0 = g, g1 = g;
    g0.self = 0;
    g1.self = 1;
    Peers p(g0, fds[0], {});
    p.set_server([](index::NodeId) { return ServeResult{-EIO, nullptr}; });
    // Member 1 answers every get with the right bytes under a wrong checksum,
    // as a transfer corrupted on its way would arrive.
    std::unique_ptr<Transport> bad;
    bad = std::make_unique<Transport>(
        g1, fds[1], 2000ms,
        Transport::Events{[&](int from, const FrameHeader& h, std::shared_ptr<cache::Blob>) {
                              if (h.type != FrameType::get) return;
                              std::string s = bytes_of(h.file);
                              FrameHeader d;
                              d.type = FrameType::data;
                              d.file = h.file;
                              d.request = h.request;
                              d.payload_hash = payload_checksum({s.data(), s.size()}) ^ 1;
                              bad->send(from, d, blob_of(s));
                          },
                          nullptr, nullptr});
    p.start();
    bad->start();
    REQUIRE(eventually([&] { return p.usable(1); }));
    PeerReply r = p.fetch(1, 4, bytes_of(4).size(), true);
    CHECK(r.error == -EBADMSG);
    CHECK_FALSE(r.blob);
    auto s = status_of(p);
    CHECK(s["corrupt"] == 1);
    CHECK(s["errors"] == 1);
    CHECK(p.usable(1));
    bad->stop();
}

TEST_CASE("a caller without the group's token is refused and marks nobody down") {
    Cluster c(2);
    int fd = raw_hello(c.p[0]->members()[0].port, 1, "not-the-token");
    char b;
    // The daemon closes the stranger's link.
    CHECK(::read(fd, &b, 1) == 0);
    ::close(fd);
    CHECK(c.p[0]->usable(1));
    auto s = status_of(*c.p[0]);
    CHECK(s["bad_frames"] == 1);
    CHECK(s["dead"].empty());
}

TEST_CASE("a member whose dataset index differs is never asked") {
    std::vector<int> fds;
    Group g = listen_all(2, fds);
    g.members[1].fingerprint = 2;
    Group g0 = g, g1 = g;
    g0.self = 0;
    g1.self = 1;
    Peers a(g0, fds[0], {}), b(g1, fds[1], {});
    for (Peers* x : {&a, &b}) x->set_server([](index::NodeId id) {
        return ServeResult{0, blob_of(bytes_of(id))};
    });
    a.start();
    b.start();
    CHECK_FALSE(a.usable(1));
    CHECK(a.fetch(1, 0, bytes_of(0).size(), true).error == -EHOSTDOWN);
    CHECK(status_of(a)["down_reasons"]["1"].get<std::string>().find("index differs") !=
          std::string::npos);
}
