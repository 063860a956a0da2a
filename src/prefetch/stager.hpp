// SPDX-License-Identifier: MIT
// Stage-in: copies the whole dataset into the node's tiers in the
// background (clairfs mount --stage, clairfs stage), in the order the
// registered jobs will first open the files when there are any, so the copy
// and a job's first epoch help each other instead of competing; in index
// order otherwise. Its fetches wait behind every demand read and prefetch.
// Its own thread and lock; it asks the engine only for that order.
#pragma once

#include "clairfs/cache/ram_tier.hpp"
#include "clairfs/cache/tier.hpp"
#include "clairfs/index/index.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <thread>
#include <vector>

namespace clairfs::prefetch {

class ChunkStore;
class FetchPool;
class SsdWriter;

// Stage-in as status reports it.
struct StageStatus {
    // idle, running, done, full (the tier ran out of room), incomplete (some
    // files could not be read or written: see backing.errors, ssd.errors)
    const char* state = "idle";
    uint64_t done_bytes = 0;    // dataset bytes the target tier holds
    uint64_t total_bytes = 0;   // bytes of every file the tiers take
    double rate = 0;            // bytes per second since the pass began
    double eta_seconds = -1;    // -1 when unknown
    const char* target = "ram"; // "ssd" when there is an SSD tier
};

// The tiers a pass fills and the fetch threads it fills them by: set at
// start(), once the engine has them all.
struct StageTiers {
    const cache::RamTier* ram = nullptr;
    const cache::Tier* ssd = nullptr; // null without an SSD tier
    SsdWriter* writer = nullptr;      // with the SSD tier
    ChunkStore* chunks = nullptr;     // the files held by chunk, or null
    FetchPool* pool = nullptr;
    uint64_t mem = 0; // the RAM tier's budget (--mem)
};

class Stager {
public:
    // Every file the tiers take, in the order the jobs open them next,
    // without repeats; files the prediction does not reach are added after.
    using Order = std::function<std::vector<index::NodeId>()>;
    Stager(const index::Index& idx, Order predicted) : index_(idx), predicted_(std::move(predicted)) {}
    ~Stager() { stop(); }
    Stager(const Stager&) = delete;
    Stager& operator=(const Stager&) = delete;
    // The tiers as far as the engine has them (before start(): for status).
    void set_tiers(StageTiers tiers) { tiers_ = tiers; }
    void start(StageTiers tiers);
    // Begins a pass, or a new one in the current order if one is running.
    void request();
    // Ends a pass at its next file and joins the thread; idempotent.
    void stop();
    StageStatus status() const;
    // Key "stage" of status.
    void status(nlohmann::json& out) const;

private:
    void loop();
    // One pass: begin (the state and total), stage_files, stage_chunks,
    // settle (the last fetches and writes land), finish (the state).
    void pass();
    uint64_t begin(const std::vector<index::NodeId>& order, const ChunkStore* chunks);
    bool stage_files(const std::vector<index::NodeId>& order, bool& out_of_room);
    bool settle(uint64_t total, ChunkStore* chunks);
    void finish(uint64_t total, bool out_of_room, bool chunks);
    enum class ChunksStaged : uint8_t { all, full, interrupted };
    ChunksStaged stage_chunks(ChunkStore& chunks);
    bool interrupted() const;
    void pause(std::chrono::milliseconds d);
    const cache::Tier& target() const;
    uint64_t target_bytes() const;
    bool staged(index::NodeId id) const;

    const index::Index& index_;
    const Order predicted_;
    StageTiers tiers_;
    // Guards the fields below. Leaf lock: nothing is called under it, no
    // tier (their counters are read before it is taken) and no log line.
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool requested_ = false;
    bool stopping_ = false;
    StageStatus stage_;
    std::chrono::steady_clock::time_point started_{};
    uint64_t bytes_at_start_ = 0;
    std::thread thread_;
};

} // namespace clairfs::prefetch
