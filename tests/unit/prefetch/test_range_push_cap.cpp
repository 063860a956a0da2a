// SPDX-License-Identifier: MIT
// A ranges job's READ that tells the tracker of a sample pushes the rest
// of that sample into the page cache from the FUSE thread answering it
// (RangeJobs::push_rest). Such a push waits for any page of the sample that
// another READ in flight has locked, and only a free FUSE thread answers
// that READ: so these pushes take at most half the FUSE threads, and one
// that would take more is not made (status chunks.pushed.busy). Here the
// pusher blocks, as on a locked page, and four READs of four samples come
// at once on a mount of four FUSE threads: two push, two go on without.
#include "clairfs/control/controller.hpp"
#include "dataset.hpp"
#include "packed_records.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unistd.h>

using namespace clairfs;
using namespace std::chrono_literals;
using test::record;
using test::records;

namespace {

constexpr unsigned fuse_threads = 4;

// Set on the threads that stand for FUSE threads answering READs: the
// scheduler's pushes ahead are refused (ENOENT: no inode yet), so that the
// samples are left for the READs to push.
thread_local bool answering_read = false;

struct BlockingPush {
    std::mutex mu;
    std::condition_variable cv;
    bool released = false;
    unsigned in = 0, most_in = 0, entered = 0;

    int push() {
        if (!answering_read) return -ENOENT;
        std::unique_lock lk(mu);
        ++entered;
        most_in = std::max(most_in, ++in);
        cv.notify_all();
        cv.wait(lk, [this] { return released; });
        --in;
        return 0;
    }
};

} // namespace

TEST_CASE("pushes from READs take at most half the FUSE threads") {
    test::Dataset d(1);
    std::string packed = test::packed_records();
    d.contents[0] = packed;
    d.rewrite(0, packed);
    {
        std::string manifest = "clairfs-ranges 1\nsamples " + std::to_string(records) + "\n";
        for (size_t i = 0; i < records; ++i)
            manifest += std::to_string(i) + "\t" + test::sample_name(0) + "\t" +
                        std::to_string(i * record) + "\t" + std::to_string(record) + "\n";
        std::ofstream(d.tree.root / "ranges.txt") << manifest;
    }
    d.rescan();

    prefetch::EngineOptions opt;
    opt.mem = 4 << 20; // files above 256 KiB are held by chunk: this one (1 MiB)
    opt.chunk_size = 64 << 10;
    opt.fetch_threads = 2;
    opt.fuse_threads = fuse_threads;
    prefetch::Engine engine(d.idx, d.root_fd, opt);
    BlockingPush pusher;
    engine.set_range_pusher(
        [&pusher](index::NodeId, uint64_t, const char*, size_t) { return pusher.push(); });
    engine.start();
    REQUIRE(engine.chunked(d.id(0)));
    control::Controller control(d.idx, engine);
    std::string why;
    REQUIRE(control.write_control(R"({"layout": "ranges", "manifest": "ranges.txt",
                                      "sampler": "sequential", "batch_size": 1})",
                                  why) == 0);
    INFO(why);

    // The first page of samples 1, 3, 5 and 7, as a mapping's faults ask
    // for them, each on its own thread; the pushes that block hold theirs.
    // Not sample 0: a READ at offset 0 stands for no sample (a format's
    // header page), and none continues where another ended.
    const auto tid = static_cast<uint32_t>(::getpid());
    std::atomic<unsigned> returned{0};
    std::vector<std::thread> reads;
    // In the order the job reads them (a READ behind the tracker's cursor
    // would not be told): each after the last one has pushed or returned.
    auto started = [&](unsigned n) {
        return test::eventually([&] {
            std::lock_guard lk(pusher.mu);
            return pusher.entered + returned.load() >= n;
        }, 30s);
    };
    for (uint64_t s = 0; s < fuse_threads; ++s) {
        REQUIRE(started(static_cast<unsigned>(s)));
        reads.emplace_back([&, s] {
            answering_read = true;
            engine.read_range(d.id(0), (2 * s + 1) * record, 4096, tid);
            returned.fetch_add(1);
        });
    }
    bool settled = test::eventually(
        [&] {
            std::lock_guard lk(pusher.mu);
            return pusher.entered + returned.load() == fuse_threads && pusher.entered > 0;
        },
        30s);
    {
        std::lock_guard lk(pusher.mu);
        INFO("pushes entered " << pusher.entered << ", READs returned " << returned.load());
        CHECK(settled);
        CHECK(pusher.most_in == fuse_threads / 2);
        CHECK(returned.load() == fuse_threads - fuse_threads / 2);
        pusher.released = true;
    }
    pusher.cv.notify_all();
    for (auto& t : reads) t.join();
    nlohmann::json st = nlohmann::json::parse(control.status_text());
    INFO(st["chunks"].dump());
    CHECK(st["chunks"]["pushed"]["busy"] == fuse_threads - fuse_threads / 2);
    CHECK(st["chunks"]["pushed"]["samples"] == fuse_threads / 2);
    engine.stop();
}
