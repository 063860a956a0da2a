// SPDX-License-Identifier: MIT
#include "clairfs/fuse/transport.hpp"

#include <cstdio>
#include <doctest/doctest.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sched.h>
#include <string>
#include <thread>
#include <unistd.h>

using clairfs::config::IoUring;
using clairfs::fuse::Transport;

namespace {

// A stand-in for /sys/module/fuse/parameters/enable_uring.
struct SwitchFile {
    std::string path;
    explicit SwitchFile(const char* value) {
        char name[] = "/tmp/clairfs-unit-switch-XXXXXX";
        int fd = mkstemp(name);
        REQUIRE(fd >= 0);
        close(fd);
        path = name;
        std::ofstream(path) << value << "\n";
    }
    ~SwitchFile() { std::remove(path.c_str()); }
};

nlohmann::json status_of(const Transport& t) {
    nlohmann::json j;
    t.status(j);
    return j;
}

} // namespace

TEST_CASE("--io-uring off asks for nothing and says so") {
    SwitchFile on("Y");
    Transport t;
    CHECK(t.choose(IoUring::off, on.path) == "");
    CHECK_FALSE(t.asked());
    auto j = status_of(t);
    CHECK(j["in_use"] == "/dev/fuse");
    CHECK(j["io_uring"] == "off");
    CHECK(j["reason"] == "--io-uring off");
}

#if CLAIRFS_HAVE_IO_URING
TEST_CASE("the kernel's switch decides: auto falls back, on refuses in one line") {
    SwitchFile off("N");
    Transport a;
    CHECK(a.choose(IoUring::auto_, off.path) == "");
    CHECK_FALSE(a.asked());
    CHECK(status_of(a)["reason"].get<std::string>().find(off.path + " is N") != std::string::npos);
    Transport b;
    std::string why = b.choose(IoUring::on, off.path);
    CHECK(why.find("--io-uring on") == 0);
    CHECK(why.find("fuse.enable_uring=1") != std::string::npos);
    CHECK(why.find('\n') == std::string::npos);
    Transport c;
    why = c.choose(IoUring::on, "/nonexistent/enable_uring");
    CHECK(why.find("the kernel lacks it") != std::string::npos);
}

TEST_CASE("with the switch on, io_uring is asked for and in use once INIT offers it") {
    SwitchFile on("Y");
    Transport t;
    REQUIRE(t.choose(IoUring::auto_, on.path) == "");
    CHECK(t.asked());
    CHECK(status_of(t)["in_use"] == "/dev/fuse"); // until INIT
    fuse_conn_info conn{};
    conn.capable = FUSE_CAP_OVER_IO_URING;
    CHECK(t.init(&conn) == "");
    CHECK((conn.want & FUSE_CAP_OVER_IO_URING) != 0);
    CHECK(status_of(t)["in_use"] == "io_uring");
    // libfuse could not set its rings up: /dev/fuse, and auto serves on.
    CHECK_FALSE(t.ring_failed("Cannot allocate memory"));
    CHECK(status_of(t)["in_use"] == "/dev/fuse");
    CHECK(status_of(t)["reason"].get<std::string>().find("Cannot allocate memory") !=
          std::string::npos);
}

TEST_CASE("--io-uring on ends the mount when INIT or libfuse cannot give it") {
    SwitchFile on("1");
    Transport a;
    REQUIRE(a.choose(IoUring::on, on.path) == "");
    fuse_conn_info none{};
    CHECK(a.init(&none).find("did not offer it") != std::string::npos);
    Transport b;
    REQUIRE(b.choose(IoUring::on, on.path) == "");
    fuse_conn_info offered{};
    offered.capable = FUSE_CAP_OVER_IO_URING;
    REQUIRE(b.init(&offered) == "");
    CHECK(b.ring_failed("No such device"));
}
#else
TEST_CASE("a build without io_uring says so, and on refuses") {
    SwitchFile on("Y");
    Transport t;
    CHECK(t.choose(IoUring::auto_, on.path) == "");
    CHECK(status_of(t)["reason"].get<std::string>().find("this build's libfuse") !=
          std::string::npos);
    CHECK(Transport{}.choose(IoUring::on, on.path).find("--io-uring on") == 0);
}
#endif

TEST_CASE("a ring thread's policy: SCHED_IDLE taken on the calling thread alone") {
    int before = sched_getscheduler(0);
    int inside = -1, err = -1;
    std::thread ring([&] {
        err = clairfs::fuse::take_sched_idle();
        inside = sched_getscheduler(0);
    });
    ring.join();
    CHECK(err == 0);
    CHECK(inside == SCHED_IDLE);
    CHECK(sched_getscheduler(0) == before); // the caller's own thread untouched
}

TEST_CASE("status says which policy the ring threads take") {
    Transport t;
    CHECK(status_of(t)["ring_sched"] == "idle");
    CHECK(status_of(t)["ring_threads_idle"] == 0);
    t.ring_sched(clairfs::config::RingSched::normal);
    CHECK(status_of(t)["ring_sched"] == "normal");
}
