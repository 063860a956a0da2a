// SPDX-License-Identifier: MIT
// KernelFiles over a real SSD tier: off until turned on (and never without
// a tier), an entry is the kernel's to read only once verified, a warm
// verifies it and counts, and an entry that leaves the tier is no longer
// handed out.
#include "clairfs/cache/ram_tier.hpp"
#include "prefetch/kernel_files.hpp"
#include "prefetch/one_copy.hpp"
#include "prefetch/page_room.hpp"
#include "ssd_fixtures.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

using namespace clairfs;
using test::CacheDir, test::Table, test::options, test::MiB, test::entry_file_of_size;

namespace {

// A tier holding two entries of 50 and 70 kB, neither verified yet.
struct TwoEntries {
    CacheDir d;
    Table t{{50 * 1000, 70 * 1000}};
    std::unique_ptr<cache::SsdTier> ssd = cache::SsdTier::open(options(d.path, MiB, t));
    TwoEntries() {
        REQUIRE(ssd->put(0, t.blob(0)));
        REQUIRE(ssd->put(1, t.blob(1)));
    }
};

} // namespace

TEST_CASE("the kernel reads an SSD entry only while on, and only once verified") {
    TwoEntries e;
    const Table& t = e.t;
    auto& ssd = e.ssd;

    prefetch::KernelFiles none;
    none.turn_on(true); // no tier: stays off
    CHECK_FALSE(none.on());

    prefetch::KernelFiles k;
    k.attach(ssd.get(), t.files.size());
    CHECK_FALSE(k.warms(0));
    CHECK(k.open(0) == -ENOTSUP);
    k.turn_on(true);
    CHECK(k.warms(0));
    CHECK_FALSE(k.reads(0));
    CHECK(test::view(k.warm(0)) == t.bytes(0));
    CHECK(k.reads(0));
    CHECK_FALSE(k.reads(1));
    int fd = k.open(0);
    REQUIRE(fd >= 0);
    ::close(fd);
    k.count(true);
    // Not verified at its open: checked there, then handed over.
    fd = k.open(1);
    REQUIRE(fd >= 0);
    CHECK(test::read_fd(fd) == t.bytes(1));
    ::close(fd);
    CHECK(k.reads(1));

    nlohmann::json st;
    k.status(st);
    CHECK(st["kernel"]["on"] == true);
    CHECK(st["kernel"]["warmed"] == 1);
    CHECK(st["kernel"]["warmed_at_open"] == 1);
    CHECK(st["kernel"]["opens"] == 1);
    CHECK(st["kernel"]["unverified_opens"] == 1);
    CHECK(st["verified"] == 2);

    ssd->evict(0);
    CHECK_FALSE(k.reads(0));
    CHECK_FALSE(k.warms(0));
    CHECK(k.open(0) == -ENOENT);
    k.turn_on(false);
    CHECK_FALSE(k.reads(1));
}

// Drop-behind of the entries the kernel reads, weighed against the page
// cache's room: an entry's pages go at the last close of a clairvoyant
// job's open only while drop-behind is on, and under --drop-behind auto it
// is on while the entries take more than half the room, off once they fit
// in a third.
TEST_CASE("the kernel's entries are dropped behind only where they do not fit the room") {
    TwoEntries e;
    auto& ssd = e.ssd;
    prefetch::KernelFiles k;
    k.attach(ssd.get(), e.t.files.size());
    k.turn_on(true);
    REQUIRE(k.warm(0) != nullptr);
    REQUIRE(k.warm(1) != nullptr);

    CHECK_FALSE(k.drop_behind());
    k.closed(0, true); // off: its pages stay, still the kernel's
    CHECK(k.reads(0));
    k.set_drop_behind(true);
    k.closed(0, false); // not clairvoyant: nothing prefetches it anew
    CHECK(k.reads(0));
    k.closed(0, true);
    CHECK_FALSE(k.reads(0));
    nlohmann::json st;
    k.status(st);
    CHECK(st["kernel"]["pages_dropped"] == 1);
    CHECK(st["kernel"]["drop_behind"] == true);

    const uint64_t bytes = 120 * 1000;
    CHECK(k.bytes() == bytes);
    cache::RamTier ram(MiB);
    prefetch::OneCopy never(config::When::never, 2);
    uint64_t room = 10 * bytes;
    auto weighed = [&](uint64_t r) {
        prefetch::PageRoom pr(config::When::automatic);
        pr.set_probe([&] { return room; });
        pr.set_kernel_files(&k);
        room = r;
        pr.weigh(never, ram);
        return k.drop_behind();
    };
    CHECK_FALSE(weighed(10 * bytes)); // fits: off
    CHECK_FALSE(weighed(bytes * 5 / 2)); // above a third but not half: stays off
    CHECK(weighed(bytes * 3 / 2));       // more than half: on
    CHECK(weighed(bytes * 5 / 2));       // stays on until a third
    CHECK_FALSE(weighed(bytes * 4));
    // --drop-behind always or never: not weighed.
    k.set_drop_behind(true);
    prefetch::PageRoom fixed(config::When::always);
    fixed.set_probe([] { return uint64_t{1} << 40; });
    fixed.set_kernel_files(&k);
    fixed.weigh(never, ram);
    CHECK(k.drop_behind());
}

// --ssd-check once: the files due next are read ahead by the kernel, each
// once until its next close, and only those the kernel reads itself.
TEST_CASE("with check_once the kernel's entries are read ahead once per use") {
    CacheDir d;
    Table t{{50 * 1000, 70 * 1000}};
    cache::SsdOptions o = options(d.path, MiB, t);
    o.check_once = true;
    auto ssd = cache::SsdTier::open(o);
    REQUIRE(ssd->put(0, t.blob(0)));
    prefetch::KernelFiles k;
    k.attach(ssd.get(), t.files.size());
    CHECK_FALSE(k.reads_ahead()); // off
    k.turn_on(true);
    CHECK(k.reads_ahead());
    CHECK(k.reads(0));
    CHECK_FALSE(k.reads(1)); // not held
    k.read_ahead({0, 1});
    k.read_ahead({0});
    nlohmann::json st;
    k.status(st);
    CHECK(st["kernel"]["read_ahead"] == 1);
    CHECK(st["kernel"]["check"] == "once");
    k.set_drop_behind(true);
    k.closed(0, true); // drop-behind keeps it the kernel's
    CHECK(k.reads(0));
    k.read_ahead({0});
    k.status(st);
    CHECK(st["kernel"]["read_ahead"] == 2);
    CHECK(st["kernel"]["pages_dropped"] == 1);
}

// Under `resident` an entry's checked pages may leave the page cache
// between the prefetch's check and the open (a tight memory budget): the
// open checks it again and hands it over, and an entry found corrupt then
// is dropped, never handed over.
TEST_CASE("an open checks again an entry whose pages left, and never hands over a bad one") {
    TwoEntries e;
    const Table& t = e.t;
    auto& ssd = e.ssd;
    prefetch::KernelFiles k;
    k.attach(ssd.get(), t.files.size());
    k.turn_on(true);
    REQUIRE(k.warm(0) != nullptr);
    REQUIRE(k.warm(1) != nullptr);
    REQUIRE(ssd->drop_pages(0) == 0); // as reclaim would
    CHECK_FALSE(k.reads(0));
    int fd = k.open(0);
    REQUIRE(fd >= 0);
    CHECK(test::read_fd(fd) == t.bytes(0));
    ::close(fd);

    // A byte of entry 1 changed on the device after its check: written by
    // hand here, with its pages dropped so the next read is the device's.
    const std::string file = entry_file_of_size(*ssd, t.files[1].size);
    REQUIRE_FALSE(file.empty());
    {
        int w = ::open(file.c_str(), O_WRONLY);
        REQUIRE(w >= 0);
        REQUIRE(::pwrite(w, "!", 1, 100) == 1);
        ::close(w);
    }
    REQUIRE(ssd->drop_pages(1) == 0);
    CHECK(k.open(1) < 0);
    CHECK_FALSE(ssd->contains(1)); // dropped: the daemon reads the backing store
    nlohmann::json st;
    k.status(st);
    CHECK(st["kernel"]["unverified_opens"] == 2); // a dropped entry is checked anew
    CHECK(st["kernel"]["warmed_at_open"] == 1);   // the bad one's check failed
}
