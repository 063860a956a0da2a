// SPDX-License-Identifier: MIT
// Two ranges jobs over one file (a sweep): a READ of a process neither job
// has claimed is told to a job only when it fits that job's order alone
// (RangeJobs::follow_read). Both jobs read every sample, so a READ that fits
// both, or neither, says nothing of whose it is; told to one of them, it
// moved that job's cursors, or counted a miss, with the other job's reader.
// On a loaded host that took a position from the job whose it was, its
// next epoch began early, and it fell back (tests/prefetch lmdb_twice).
//
// Job a reads records 0, 1, 2, ... and job b records 4, 5, 6, ... (its
// manifest's sample i is record i + 4, mod 64), one at a time and without
// workers, so each one's window (eight batches: active_job.cpp) holds its
// next nine records: records 4-8 fit both, 1-3 fit a alone, 9-12 b alone,
// and 40 neither.
#include "clairfs/control/controller.hpp"
#include "dataset.hpp"
#include "live_process.hpp"
#include "packed_records.hpp"

#include <array>
#include <nlohmann/json.hpp>

using namespace clairfs;
using test::record;
using test::records;

namespace {

// Sample i is record i + rotate (mod 64); with `swap_last`, samples 62 and
// 63 are records 63 and 62.
std::string manifest(const std::string& file, size_t rotate, bool swap_last = false) {
    std::string m = "clairfs-ranges 1\nsamples " + std::to_string(records) + "\n";
    for (size_t i = 0; i < records; ++i) {
        size_t rec = (i + rotate) % records;
        if (swap_last && i >= records - 2) rec = 2 * records - 3 - i;
        m += std::to_string(i) + "\t" + file + "\t" + std::to_string(rec * record) + "\t" +
             std::to_string(record) + "\n";
    }
    return m;
}

struct Counts {
    uint64_t opens = 0, matched = 0, epoch = 0;
};

Counts loader(const nlohmann::json& st, const std::string& job) {
    for (const auto& j : st["jobs"])
        if (j["id"] == job) {
            const auto& l = j["loaders"][0];
            CHECK(l["mode"] == "clairvoyant");
            return {l["opens"].get<uint64_t>(), l["matched"].get<uint64_t>(),
                    l["epoch"].get<uint64_t>()};
        }
    FAIL("no job " << job << " in " << st.dump());
    return {};
}

// Jobs a and b over one packed file, b's manifest rotated by `rotate_b`
// (and its last two samples swapped with `swap_last_b`). With
// `from_loader`, each registration names its writer as the job's loader
// process (clairfs.register() in each training script). Writers and
// readers are live processes, forked before the engine's threads start.
struct RangeJobs {
    test::Dataset d{1};
    test::LiveProcess process_a, process_b;
    std::array<test::LiveProcess, 2> readers;
    const uint32_t writer_a = process_a.id();
    const uint32_t writer_b = process_b.id();
    std::unique_ptr<prefetch::Engine> engine;
    std::unique_ptr<control::Controller> control;

    explicit RangeJobs(size_t rotate_b, bool swap_last_b = false, bool from_loader = false) {
        std::string packed = test::packed_records();
        d.contents[0] = packed;
        d.rewrite(0, packed);
        std::ofstream(d.tree.root / "ranges-a.txt") << manifest(test::sample_name(0), 0);
        std::ofstream(d.tree.root / "ranges-b.txt") << manifest(test::sample_name(0), rotate_b, swap_last_b);
        d.rescan();
        prefetch::EngineOptions opt;
        opt.mem = 4 << 20; // the 1 MiB file is held by chunk
        opt.chunk_size = 64 << 10;
        opt.fetch_threads = 2;
        engine = std::make_unique<prefetch::Engine>(d.idx, d.root_fd, opt);
        // No kernel here: nothing is pushed, so every sample takes its READ.
        engine->set_range_pusher(
            [](index::NodeId, uint64_t, const char*, size_t) { return -ENOENT; });
        engine->start();
        REQUIRE(engine->chunked(d.id(0)));
        control = std::make_unique<control::Controller>(d.idx, *engine);
        for (const char* job : {"a", "b"}) {
            std::string why;
            std::string reg = std::string(R"({"job": ")") + job +
                              R"(", "layout": "ranges", "manifest": "ranges-)" + job +
                              R"(.txt", "sampler": "sequential", "batch_size": 1, "epochs": 2)" +
                              (from_loader ? R"(, "from_loader": true})" : "}");
            const uint32_t writer = job[0] == 'a' ? writer_a : writer_b;
            REQUIRE_MESSAGE(control->write_control(reg, why, writer) == 0, why);
        }
    }
    ~RangeJobs() { engine->stop(); }

    Counts counts(const std::string& job) const {
        return loader(nlohmann::json::parse(control->status_text()), job);
    }
    // The first page of a record, as a mapping's fault asks for it.
    void read(uint64_t rec, size_t reader) { read_by(rec, readers.at(reader).id()); }
    void read_by(uint64_t rec, uint32_t tid) {
        engine->read_range(d.id(0), rec * record, 4096, tid);
    }
};

} // namespace

TEST_CASE("a READ of an unclaimed process is told only to the one job whose order it fits") {
    RangeJobs t(4);
    auto counts = [&](const std::string& job) { return t.counts(job); };
    auto read = [&](uint64_t rec, size_t reader) { t.read(rec, reader); };

    SUBCASE("a READ that fits both jobs is told to neither") {
        for (uint64_t rec : {4, 6, 8}) read(rec, 0);
        Counts a = counts("a"), b = counts("b");
        CHECK(a.opens == 0);
        CHECK(b.opens == 0);
    }
    SUBCASE("a READ that fits neither counts as no job's miss") {
        read(40, 0);
        read(50, 1);
        CHECK(counts("a").opens == 0);
        CHECK(counts("b").opens == 0);
    }
    SUBCASE("a READ that fits one job alone is that job's, and three claim the process") {
        read(1, 0);
        CHECK(counts("a").matched == 1);
        CHECK(counts("b").opens == 0);
        read(12, 1);
        CHECK(counts("b").matched == 1);
        read(2, 0);
        read(3, 0);
        CHECK(counts("a").matched == 3);
        // Reader 0 is a's now: a READ of it that fits both is a's.
        read(5, 0);
        CHECK(counts("a").matched == 4);
        CHECK(counts("b").matched == 1);
    }
    SUBCASE("an unclaimed process does not begin a job's next epoch") {
        // Reader 0 is a's (records 1-3 fit a alone) and reads on to record
        // 58: a's next epoch may begin (within its window of the end).
        for (uint64_t rec = 1; rec <= 58; ++rec) read(rec, 0);
        Counts a = counts("a");
        REQUIRE(a.matched == 58);
        REQUIRE(a.epoch == 0);
        // Record 1 is the second of a's next epoch, and of nothing b's
        // window holds: reader 1, which no job claimed, fits a's next
        // epoch alone. It is not a's.
        read(1, 1);
        CHECK(counts("a").epoch == 0);
        CHECK(counts("a").opens == 58);
        // a's own reader begins it.
        read(1, 0);
        CHECK(counts("a").epoch == 1);
        CHECK(counts("b").opens == 0);
    }
}

// A sweep of one seed: the jobs' orders agree, so a READ that fits both is
// one of them (the nearest takes it, claiming nothing): were it told to
// neither, jobs reading in step would never be followed.
TEST_CASE("a READ that fits two jobs of one order is told to one of them") {
    RangeJobs t(0);
    for (uint64_t rec : {1, 2, 3, 4}) t.read(rec, 0);
    Counts a = t.counts("a"), b = t.counts("b");
    CHECK(a.matched + b.matched == 4);
    CHECK(a.opens + b.opens == 4);
}

// Equal specs, and the record at the same position, but manifests that
// differ elsewhere: the orders are not one, and a READ that fits both is
// neither's.
TEST_CASE("a READ that fits two jobs of different manifests is told to neither") {
    RangeJobs t(0, true);
    for (uint64_t rec : {1, 2, 3, 4}) t.read(rec, 0);
    CHECK(t.counts("a").opens == 0);
    CHECK(t.counts("b").opens == 0);
}

// The same sweep, each job registered from its own training script: its
// loader process is known from its registration, so every READ of it is
// its job's from the first, though each fits both jobs at the same place.
// Only processes tell the two jobs' reads apart: credited to the nearest,
// one job's reader moved the other's cursors, and on a loaded host one of
// the two fell back (a same-seed lmdb_twice failed 3 of 12 runs).
TEST_CASE("a READ of a job's registering process is that job's, whatever else it fits") {
    RangeJobs t(0, false, true);
    for (uint64_t rec : {1, 2, 3, 4}) t.read_by(rec, t.writer_b);
    for (uint64_t rec : {1, 2}) t.read_by(rec, t.writer_a);
    Counts a = t.counts("a"), b = t.counts("b");
    CHECK(b.matched == 4);
    CHECK(b.opens == 4);
    CHECK(a.matched == 2);
    CHECK(a.opens == 2);
    // A process no registration named is routed as before: told to one.
    for (uint64_t rec : {5, 6}) t.read(rec, 0);
    a = t.counts("a");
    b = t.counts("b");
    CHECK(a.opens + b.opens == 8);
}

// A sweep's driver that registers both jobs from one process is the loader
// of neither: its reads are routed by fit, as an unnamed process's are.
TEST_CASE("a process that registers two jobs is neither's loader") {
    RangeJobs t(0, false, true);
    std::string why;
    const std::string again =
        R"({"job": "b", "layout": "ranges", "manifest": "ranges-b.txt", "sampler": "sequential",)"
        R"( "batch_size": 1, "epochs": 2, "from_loader": true})";
    // The writer of a's registration now writes b's too.
    REQUIRE_MESSAGE(t.control->write_control(again, why, t.writer_a) == 0, why);
    for (uint64_t rec : {1, 2, 3, 4}) t.read_by(rec, t.writer_a);
    Counts a = t.counts("a"), b = t.counts("b");
    // One order: each READ goes to one job, the nearest. Bound to b (the
    // last registration it wrote), all four would have been b's.
    CHECK(a.opens + b.opens == 4);
    CHECK(b.opens < 4);
}
