// SPDX-License-Identifier: MIT
// Page-cache drops of files read while a job is followed (set_dropper,
// --kernel-opens): the first READ of a file stands for its open there, and
// a file whose pages outlived its last use would be read again without a
// READ, unseen by the tracker. Opens are logged by FUSE threads; the
// scheduler thread drops each file once its reader has surely copied it out.
#pragma once

#include "clairfs/index/index.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <utility>
#include <vector>

namespace clairfs::prefetch {

class ReadDrops {
public:
    using Dropper = std::function<int(index::NodeId id)>;
    explicit ReadDrops(const index::Index& idx) : index_(idx) {}
    void set_dropper(Dropper drop) { drop_ = std::move(drop); }
    bool on() const { return static_cast<bool>(drop_); }
    // An open (FUSE thread); logged for a drop only while a job is registered:
    // unregistered, pages the kernel keeps are reads saved.
    void opened(index::NodeId id, bool registered);
    // No job is registered: one registered later drops anew what was read.
    void jobs_gone() { dropped_all_ = false; }
    // Scheduler thread: drops the files read long enough ago, while a job
    // is `following` (registered and clairvoyant).
    void drop(bool following);
    // Keys page_drops and page_drop_errors of status's "prefetch".
    void status(nlohmann::json& prefetch) const;

private:
    using Stamped = std::pair<index::NodeId, std::chrono::steady_clock::time_point>;
    void drop_one(index::NodeId id);

    const index::Index& index_;
    Dropper drop_;
    std::mutex mu_; // guards log_; leaf lock
    std::vector<Stamped> log_;
    std::deque<Stamped> due_;  // scheduler thread only, in read order
    bool dropped_all_ = false; // scheduler thread: since the first job was registered
    std::atomic<bool> read_any_{false}; // a file was read since the mount
    std::atomic<uint64_t> drops_{0}, errors_{0};
};

} // namespace clairfs::prefetch
