// SPDX-License-Identifier: MIT
#include "clairfs/config/mount_args.hpp"
#include "clairfs/config/option_registry.hpp"
#include "clairfs/config/value_parsers.hpp"

#include <cstdio>
#include <doctest/doctest.h>
#include <fstream>
#include <unistd.h>

using namespace clairfs::config;

namespace {

std::string parse(std::vector<std::string> args, MountArgs& out) {
    return parse_mount_args(args, out);
}

} // namespace

TEST_CASE("sizes take binary units") {
    uint64_t n = 0;
    CHECK((parse_size("4096", n) && n == 4096));
    CHECK((parse_size("64K", n) && n == 64 << 10));
    CHECK((parse_size("1M", n) && n == 1 << 20));
    CHECK((parse_size("1MiB", n) && n == 1 << 20));
    CHECK((parse_size("2G", n) && n == 2ull << 30));
    CHECK((parse_size("3kb", n) && n == 3 << 10));
    for (const char* bad : {"", "K", "1X", "-1", "1.5M", "99999999999999999999", "20000000000T"})
        CHECK_FALSE(parse_size(bad, n));
}

TEST_CASE("defaults come from MountOptions and positionals fill the paths") {
    MountArgs a;
    REQUIRE(parse({"/data", "/mnt"}, a) == "");
    CHECK(a.options.backing == "/data");
    CHECK(a.options.mountpoint == "/mnt");
    CHECK(a.options.max_read == 1u << 20);
    CHECK(a.options.blksize == 0); // st_blksize as the backing reports it
    CHECK_FALSE(a.options.foreground);
    CHECK(a.options.threads == 16);
    CHECK(a.options.chunk_size == 1u << 20);
}

TEST_CASE("--chunk-size: 0 (off) or a multiple of 4K from 64K to 64M") {
    for (auto [text, want] : {std::pair{"0", 0ull}, {"64K", 64ull << 10}, {"64M", 64ull << 20},
                              {"4100K", 4100ull << 10}}) {
        MountArgs a;
        REQUIRE(parse({"/d", "/m", "--chunk-size", text}, a) == "");
        CHECK(a.options.chunk_size == want);
    }
    MountArgs o;
    REQUIRE(parse({"-o", "chunk_size=256K", "/d", "/m"}, o) == "");
    CHECK(o.options.chunk_size == 256u << 10);
}

TEST_CASE("long, short, -o and = forms all reach the same fields") {
    MountArgs a;
    REQUIRE(parse({"-f", "-t", "4", "--max-read=64K", "--blksize", "4K", "-o",
                   "allow_other,cache_timeout=2.5,log-level=debug", "/d", "/m"},
                  a) == "");
    CHECK(a.options.foreground);
    CHECK(a.options.threads == 4);
    CHECK(a.options.max_read == 64 << 10);
    CHECK(a.options.blksize == 4096);
    CHECK(a.options.allow_other);
    CHECK(a.options.cache_timeout == doctest::Approx(2.5));
    CHECK(a.options.log_level == clairfs::log::Level::debug);

    MountArgs b;
    REQUIRE(parse({"-oscan_threads=3", "--foreground", "--no-foreground", "/d", "/m"}, b) == "");
    CHECK(b.options.scan_threads == 3);
    CHECK_FALSE(b.options.foreground);
}

TEST_CASE("a JSON config file applies first and the command line overrides it") {
    char path[] = "/tmp/clairfs-config-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    std::ofstream(path) << R"({"max_read": "128K", "threads": 5, "allow_other": true})";
    MountArgs a;
    REQUIRE(parse({"/d", "/m", "--threads", "7", "--config", path}, a) == "");
    CHECK(a.options.max_read == 128 << 10);
    CHECK(a.options.threads == 7);
    CHECK(a.options.allow_other);

    std::ofstream(path) << R"({"max_read": "128K", "colour": "blue"})";
    MountArgs b;
    CHECK(parse({"/d", "/m", "--config", path}, b).find("unknown option 'colour'") !=
          std::string::npos);
    std::ofstream(path) << "{ not json";
    CHECK(parse({"/d", "/m", "--config", path}, b).find("not valid JSON") != std::string::npos);
    std::ofstream(path) << R"({"threads": [1]})";
    CHECK(parse({"/d", "/m", "--config", path}, b).find("must be a string") != std::string::npos);
    unlink(path);
    CHECK(parse({"/d", "/m", "--config", path}, b).find("cannot read config") != std::string::npos);
}

TEST_CASE("every kind of bad argument is a one-line reason") {
    struct Case {
        std::vector<std::string> args;
        const char* expect;
    } cases[] = {
        {{"/d"}, "expected BACKING and MOUNTPOINT"},
        {{"/d", "/m", "/x"}, "unexpected argument '/x'"},
        {{"--bogus", "/d", "/m"}, "unknown option '--bogus'"},
        {{"-q", "/d", "/m"}, "unknown option '-q'"},
        {{"/d", "/m", "--threads"}, "needs a value"},
        {{"/d", "/m", "--threads", "0"}, "invalid value for threads"},
        {{"/d", "/m", "--threads", "many"}, "invalid value for threads"},
        {{"/d", "/m", "--max-read", "3000"}, "invalid value for max_read"},
        {{"/d", "/m", "--max-read", "2M"}, "invalid value for max_read"},
        {{"/d", "/m", "--blksize", "3000"}, "invalid value for blksize"},
        {{"/d", "/m", "--chunk-size", "1000"}, "invalid value for chunk_size"},
        {{"/d", "/m", "--chunk-size", "32K"}, "invalid value for chunk_size"},
        {{"/d", "/m", "--chunk-size", "128M"}, "invalid value for chunk_size"},
        {{"/d", "/m", "--chunk-size", "65540"}, "invalid value for chunk_size"},
        {{"/d", "/m", "--cache-timeout", "-1"}, "invalid value for cache_timeout"},
        {{"/d", "/m", "--log-level", "loud"}, "invalid value for log_level"},
        {{"/d", "/m", "-o", "foreground=maybe"}, "invalid value for foreground"},
        {{"/d", "/m", "--no-threads"}, "unknown option '--no-threads'"},
        {{"/d", "/m", "--push-ahead", "--kernel-opens"}, "--push-ahead needs the opens"},
        {{"/d", "/m", "--opens", "fanotify", "--kernel-opens"}, "use one of them"},
        {{"/d", "/m", "--opens", "inotify"}, "invalid value for opens"},
        {{"/d", "/m", "--detect-cpu", "0"}, "--no-detect turns detection off"},
        {{"/d", "/m", "--detect-cpu", "101"}, "invalid value for detect_cpu"},
        {{"/d", "/m", "--detect-cpu", "5%"}, "invalid value for detect_cpu"},
        {{"/d", "/m", "--control-owner", "no-such-user-here"}, "no user 'no-such-user-here'"},
        {{"/d", "/m", "--control-owner", "4294967295"}, "a uid below 4294967295"},
    };
    for (auto& c : cases) {
        MountArgs a;
        std::string why = parse(c.args, a);
        INFO(why);
        CHECK(why.find(c.expect) != std::string::npos);
        CHECK(why.find('\n') == std::string::npos);
    }
}

TEST_CASE("--control-owner takes a user name or a uid") {
    MountArgs a;
    REQUIRE(parse({"/d", "/m", "--control-owner", "root"}, a) == "");
    CHECK(a.options.control_owner == 0);
    MountArgs b;
    REQUIRE(parse({"/d", "/m", "-o", "control_owner=65534"}, b) == "");
    CHECK(b.options.control_owner == 65534);
    MountArgs c;
    REQUIRE(parse({"/d", "/m"}, c) == "");
    CHECK(c.options.control_owner == -1);
}

TEST_CASE("--opens: fuse by default; --kernel-opens settles auto for no fanotify") {
    MountArgs a;
    REQUIRE(parse({"/d", "/m"}, a) == "");
    CHECK(a.options.fast_path.opens == Opens::fuse);
    MountArgs b;
    REQUIRE(parse({"/d", "/m", "--opens", "auto"}, b) == "");
    CHECK(b.options.fast_path.opens == Opens::auto_);
    MountArgs c;
    REQUIRE(parse({"/d", "/m", "-o", "opens=auto", "--kernel-opens"}, c) == "");
    CHECK(c.options.fast_path.opens == Opens::fuse);
    CHECK(c.options.fast_path.kernel_opens);
}

TEST_CASE("--detect-cpu: 2% of one core by default, any share above 0 and up to 100") {
    MountArgs a;
    REQUIRE(parse({"/d", "/m"}, a) == "");
    CHECK(a.options.detect.cpu == doctest::Approx(2));
    MountArgs b;
    REQUIRE(parse({"/d", "/m", "--detect-cpu", "0.5"}, b) == "");
    CHECK(b.options.detect.cpu == doctest::Approx(0.5));
    MountArgs c;
    REQUIRE(parse({"/d", "/m", "-o", "detect_cpu=100"}, c) == "");
    CHECK(c.options.detect.cpu == doctest::Approx(100));
}

TEST_CASE("every registered option has a name, help and a parser that accepts its default") {
    for (const auto& spec : mount_option_specs()) {
        INFO(spec.name);
        CHECK(find_option(spec.name) == &spec);
        CHECK_FALSE(spec.help.empty());
        MountOptions o;
        std::string value =
            spec.type == OptionType::flag ? "false" : std::string(spec.default_text);
        if (spec.type == OptionType::text) continue; // empty default means "not set"
        CHECK(spec.set(o, value) == "");
    }
}

TEST_CASE("--io-uring: auto by default, on and off, nothing else") {
    MountArgs a;
    REQUIRE(parse({"/d", "/m"}, a) == "");
    CHECK(a.options.fast_path.io_uring == IoUring::auto_);
    MountArgs b;
    REQUIRE(parse({"/d", "/m", "--io-uring", "on"}, b) == "");
    CHECK(b.options.fast_path.io_uring == IoUring::on);
    MountArgs c;
    REQUIRE(parse({"/d", "/m", "-o", "io_uring=off"}, c) == "");
    CHECK(c.options.fast_path.io_uring == IoUring::off);
    MountArgs d;
    CHECK(parse({"/d", "/m", "--io-uring", "yes"}, d).find("invalid value for io_uring") !=
          std::string::npos);
    CHECK(std::string(io_uring_name(IoUring::auto_)) == "auto");
}

TEST_CASE("--ssd-check: resident by default, once, nothing else") {
    using clairfs::config::SsdCheck;
    MountArgs a;
    REQUIRE(parse({"/d", "/m"}, a) == "");
    CHECK(a.options.fast_path.ssd_check == SsdCheck::resident);
    MountArgs b;
    REQUIRE(parse({"/d", "/m", "--ssd-check", "once"}, b) == "");
    CHECK(b.options.fast_path.ssd_check == SsdCheck::once);
    MountArgs c;
    CHECK(parse({"/d", "/m", "-o", "ssd_check=never"}, c) ==
          "invalid value for ssd_check: never (expected resident or once)");
}

TEST_CASE("--ring-sched: idle by default, normal, nothing else") {
    MountArgs a;
    REQUIRE(parse({"/d", "/m"}, a) == "");
    CHECK(a.options.fast_path.ring_sched == clairfs::config::RingSched::idle);
    MountArgs b;
    REQUIRE(parse({"/d", "/m", "--ring-sched", "normal"}, b) == "");
    CHECK(b.options.fast_path.ring_sched == clairfs::config::RingSched::normal);
    MountArgs c;
    CHECK(parse({"/d", "/m", "-o", "ring_sched=fifo"}, c) ==
          "invalid value for ring_sched: fifo (expected idle or normal)");
}
