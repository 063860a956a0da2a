// SPDX-License-Identifier: MIT
#include "clairfs/control/controller.hpp"

#include "clairfs/config/utf8_text.hpp"
#include "clairfs/index/resolve.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"

#include <memory>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

namespace clairfs::control {

Controller::Controller(const index::Index& idx, prefetch::Engine& engine)
    : index_(idx), engine_(engine) {
    if (idx.lookup(idx.node(index::root_id), ".clairfs"))
        LOG_WARN("the backing directory has its own .clairfs, which the control directory hides "
                 "in the mount");
}

// Far above a real manifest (1 GiB holds twenty million paths of 50
// bytes); the whole text is held while the dataset is built.
constexpr uint64_t max_manifest_bytes = uint64_t{1} << 30;

std::string Controller::read_manifest(const std::string& path, std::string& text) {
    std::string shown = "manifest '" + config::message_text(path) + "'";
    index::Resolved r = index::resolve_path(index_, index_.node(index::root_id), path);
    if (!r.node) return shown + ": " + std::string(index::describe(r.status));
    if (!S_ISREG(r.node->mode)) return shown + " is not a regular file";
    if (r.node->size > max_manifest_bytes) return shown + " is larger than 1 GiB";
    cache::BackingStore& store = engine_.backing();
    int fd = store.open_verified(*r.node);
    if (fd < 0) return shown + ": " + sys::error_text(fd);
    text.resize(r.node->size);
    ssize_t got = store.read_at(fd, text.data(), text.size(), 0);
    sys::close(fd);
    if (got < 0) return shown + ": " + sys::error_text(static_cast<int>(got));
    text.resize(static_cast<size_t>(got));
    return "";
}

int Controller::write_control(std::string_view text, std::string& why) {
    // Parsing, reading the manifest and building the dataset (seconds for
    // millions of files) happen before the lock, so status stays readable.
    ControlRequest req;
    plan::Job job;
    why = parse_control(text, req);
    if (why.empty() && req.stage_only) {
        engine_.stage();
        std::lock_guard lock(mu_);
        error_.clear();
        return 0;
    }
    if (why.empty() && !req.unregister) {
        std::string manifest;
        if (req.registration.layout == layout::LayoutKind::list)
            why = read_manifest(req.registration.manifest, manifest);
        if (why.empty()) why = resolve_job(req.registration, index_, manifest, job);
    }
    if (!why.empty()) return refuse(why);

    // The job's planners and tracker are built here too, before the lock;
    // under it the engine only swaps pointers. The job replaced is freed
    // after the lock (`replaced` outlives it).
    size_t samples = job.dataset.samples.size();
    std::shared_ptr<prefetch::Engine::Active> prepared, replaced;
    if (!req.unregister)
        prepared = engine_.prepare(std::make_shared<const plan::Job>(std::move(job)));
    bool unregistered = false;
    uint32_t batch_size = req.registration.spec.batch_size;
    size_t ranks = req.registration.ranks.size();
    {
        std::lock_guard lock(mu_);
        if (req.unregister) {
            replaced = engine_.deactivate();
            unregistered = active_.has_value();
            active_.reset();
        } else {
            replaced = engine_.activate(std::move(prepared));
            active_ = std::move(req.registration);
            ++registrations_;
        }
        error_.clear();
    }
    if (unregistered) LOG_INFO("job unregistered");
    if (!req.unregister)
        LOG_INFO("job registered: %zu samples, batch size %u, %zu local ranks", samples,
                 batch_size, ranks);
    if (req.stage) engine_.stage();
    return 0;
}

int Controller::refuse(const std::string& why) {
    // Not logged here: the caller says it where it belongs (the daemon's
    // log for control-file writes, stderr for mount --register).
    std::lock_guard lock(mu_);
    error_ = why;
    return -EINVAL;
}

std::string Controller::control_text() const {
    std::lock_guard lock(mu_);
    return active_ ? registration_json(*active_) : "{}\n";
}

std::string Controller::status_text() const {
    nlohmann::json j;
    std::lock_guard lock(mu_);
    j["registered"] = active_.has_value();
    j["error"] = error_.empty() ? nlohmann::json(nullptr) : nlohmann::json(error_);
    j["registrations"] = registrations_;
    engine_.status(j);
    // Reasons may quote file names that are not UTF-8.
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace clairfs::control
