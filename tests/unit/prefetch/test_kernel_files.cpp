// SPDX-License-Identifier: MIT
// KernelFiles over a real SSD tier: off until turned on (and never without
// a tier), an entry is the kernel's to read only once verified, a warm
// verifies it and counts, and an entry that leaves the tier is no longer
// handed out.
#include "prefetch/kernel_files.hpp"
#include "ssd_fixtures.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

using namespace clairfs;
using test::CacheDir, test::Table, test::options, test::MiB;

TEST_CASE("the kernel reads an SSD entry only while on, and only once verified") {
    CacheDir d;
    Table t({50 * 1000, 70 * 1000});
    auto ssd = cache::SsdTier::open(options(d.path, MiB, t));
    REQUIRE(ssd->put(0, t.blob(0)));
    REQUIRE(ssd->put(1, t.blob(1)));

    prefetch::KernelFiles none;
    none.turn_on(true); // no tier: stays off
    CHECK_FALSE(none.on());

    prefetch::KernelFiles k;
    k.attach(ssd.get());
    CHECK_FALSE(k.warms(0));
    CHECK(k.open(0) == -ENOTSUP);
    k.turn_on(true);
    CHECK(k.warms(0));
    CHECK_FALSE(k.reads(0));
    CHECK(k.open(0) == -EAGAIN);
    CHECK(test::view(k.warm(0)) == t.bytes(0));
    CHECK(k.reads(0));
    CHECK_FALSE(k.reads(1));
    int fd = k.open(0);
    REQUIRE(fd >= 0);
    ::close(fd);
    k.count(true);

    nlohmann::json st;
    k.status(st);
    CHECK(st["kernel"]["on"] == true);
    CHECK(st["kernel"]["warmed"] == 1);
    CHECK(st["kernel"]["opens"] == 1);
    CHECK(st["kernel"]["unverified_opens"] == 1);
    CHECK(st["verified"] == 1);

    ssd->evict(0);
    CHECK_FALSE(k.reads(0));
    CHECK_FALSE(k.warms(0));
    CHECK(k.open(0) == -ENOENT);
    k.turn_on(false);
    CHECK_FALSE(k.reads(1));
}
