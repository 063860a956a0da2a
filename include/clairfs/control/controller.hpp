// SPDX-License-Identifier: MIT
// The .clairfs/ control directory's state: the active registration, the
// last registration error, and the status document. The FUSE operations on
// .clairfs/ call only this.
#pragma once

#include "clairfs/control/detector.hpp"
#include "clairfs/control/registration.hpp"
#include "clairfs/prefetch/engine.hpp"

#include <atomic>
#include <cerrno>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <mutex>
#include <optional>
#include <vector>
#include <string>
#include <string_view>

namespace clairfs::control {

class Controller {
public:
    // Warns (once, at mount) when the backing tree has its own top-level
    // .clairfs, which the control directory hides.
    Controller(const index::Index& idx, prefetch::Engine& engine);

    // One complete write to .clairfs/control. Registers, re-registers or
    // unregisters; returns 0, or -EINVAL with the one-line reason in `why`,
    // which status also shows as `error` until the next good write. A
    // refused write leaves the previous mode running.
    // `writer`: the thread that wrote it (FUSE's pid of the request), 0 if
    // unknown; a registration with "from_loader" binds its process to the job.
    // A registration that would replace an active written job of its id,
    // different from it, that another process wrote and that processes
    // other than the writer still run, is refused with -EBUSY instead
    // (unless it says "replace": true): two scripts registering without a
    // job name must not silently end each other's prefetching.
    int write_control(std::string_view text, std::string& why, uint32_t writer = 0);

    // Job detection (--detect): watches opens while nothing is registered.
    // Before the fork; start_detection() in the process that serves,
    // stop_detection() before the engine stops.
    void enable_detection(DetectorOptions opt);
    void start_detection();
    void stop_detection();

    // A write refused before it could be parsed (too large): recorded as
    // the error like any other refusal. Returns -err.
    int refuse(const std::string& why, int err = EINVAL);
    void share_with_peers();

    // What reading .clairfs/control returns: the active registration as
    // JSON, or "{}\n" when none.
    std::string control_text() const;

    // What reading .clairfs/status returns: a pretty-printed JSON object
    // with a trailing newline (keys in clairfs-control(5)).
    std::string status_text() const;

    // Adds what the mount itself counts (its FUSE requests) to each status
    // document. Set once, before the mount serves.
    using StatusPart = std::function<void(nlohmann::json&)>;
    void add_status_part(StatusPart part) { status_part_ = std::move(part); }

private:
    // The text of a layout-list manifest (a file in the mount), read
    // through the backing store so it is the scanned version.
    std::string read_manifest(const std::string& path, std::string& text);
    int unregister(const std::string& id, std::string& why);
    // Builds and activates `job` (written, or detected); 0, -EINVAL, or
    // -EBUSY for a written job another process's running job holds the id
    // of (busy_reason), unless `replace`.
    // `replay`: opens made before, told to the job's trackers first;
    // `late`: the opens detection has not looked at yet, told to them as
    // the job goes live (Engine::activate).
    int register_job(JobRegistration job, bool stage, bool replace, std::string& why,
                     std::span<const std::pair<index::NodeId, uint32_t>> replay = {},
                     const std::function<prefetch::Engine::Opens()>& late = {});
    bool registered_unchanged(const JobRegistration& job, bool replace,
                              std::optional<uint32_t>& held_by);
    int resolve_loaders(const JobRegistration& job, std::string& why,
                        std::vector<plan::Job>& resolved, size_t& samples);
    int activate(JobRegistration job, bool replace,
                 std::shared_ptr<prefetch::Engine::Active> prepared,
                 const std::function<prefetch::Engine::Opens()>& late,
                 prefetch::Engine::Jobs& replaced, std::string& why);
    // Under mu_: the active written job of `job`'s id that `job` differs
    // from and that another process wrote (or an unknown one), which only
    // a process of its own may replace while it runs; null if none.
    const JobRegistration* contested_by(const JobRegistration& job) const;
    // Why a registration may not replace job `id`, written by `writer`,
    // whose processes `live` still run: one line, naming the job and what
    // to do instead.
    static std::string busy_reason(const std::string& id, uint32_t writer, size_t live);
    // A detected job that is over (fell back, or retired: every process
    // of it exited) is dropped, so detection can start over (the next job
    // may be another). True if it did.
    bool drop_finished_detected();

    const index::Index& index_;
    prefetch::Engine& engine_;
    // Guards the fields below; held across the engine's swap of the active
    // job and its status, so the status never pairs one registration with
    // another's engine state. Never held while a job is built or freed.
    // Lock order: Controller::mu_, then the engine's locks.
    mutable std::mutex mu_;
    std::vector<JobRegistration> active_; // active and retired jobs, in registration order
    // Whether every job in active_ was detected (or none is): detection then
    // watches the opens no job covers. Read by the open observer on FUSE
    // threads, which must not take mu_ (activate() calls it under the
    // engine's observer lock, which register_job takes under mu_).
    std::atomic<bool> only_detected_{true};
    void note_active(); // under mu_: only_detected_ from active_
    std::string error_;
    uint64_t registrations_ = 0; // successful registrations since the mount
    std::unique_ptr<Detector> detector_; // null with --no-detect
    StatusPart status_part_;
};

// `clairfs mount --register FILE`: applies FILE as one control-file write
// before the mount, so prefetching starts before the job does. "" or
// "cannot register FILE: reason".
std::string register_at_mount(Controller& control, const std::string& file);

} // namespace clairfs::control
