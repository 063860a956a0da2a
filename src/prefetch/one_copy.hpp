// SPDX-License-Identifier: MIT
// One copy (--one-copy): the pages of a file the RAM tier holds leave the
// kernel's page cache at its last close, so its bytes are in memory once.
// Counts each file's opens not yet released, and decides (automatic) from
// the page cache's room whether last closes drop pages now.
#pragma once

#include "clairfs/config/mount_choices.hpp"
#include "clairfs/index/node.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>

namespace clairfs::prefetch {

class OneCopy {
public:
    // `files`: the index's size. Off (never counts) for When::never.
    OneCopy(config::When mode, size_t files);
    bool on() const { return open_count_ != nullptr; }
    bool automatic() const { return on() && mode_ == config::When::automatic; }
    // Whether last closes drop the file's pages now.
    bool dropping() const { return on() && dropping_.load(std::memory_order_relaxed); }
    void opening(index::NodeId id) {
        if (on()) open_count_[id].fetch_add(1, std::memory_order_acq_rel);
    }
    // A release (OPEN and RELEASE, on()): whether it was the file's last
    // open and pages are dropped now.
    bool last_release(index::NodeId id);
    // A close told by fanotify, which may have no open counted (the opens
    // made before the watch began were told by OPEN, and end with a
    // RELEASE as well as this close): never below zero.
    bool last_close(index::NodeId id);
    void count_drop(bool ok) {
        (ok ? drops_ : drop_errors_).fetch_add(1, std::memory_order_relaxed);
    }
    // Automatic: the RAM tier holds `held` bytes, the page cache has room
    // for `room`; switches dropping on above half the room, off below a third.
    void weigh(uint64_t held, uint64_t room);
    // Keys close_drops, close_drop_errors and one_copy of status's
    // "prefetch"; `room` as last weighed (UINT64_MAX: unknown).
    void status(nlohmann::json& prefetch, uint64_t room) const;

private:
    const config::When mode_;
    std::unique_ptr<std::atomic<uint32_t>[]> open_count_; // per node; null when off
    std::atomic<bool> dropping_{false};
    std::atomic<uint64_t> drops_{0}, drop_errors_{0}, switches_{0};
};

} // namespace clairfs::prefetch
