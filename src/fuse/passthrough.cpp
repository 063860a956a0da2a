// SPDX-License-Identifier: MIT
#include "clairfs/fuse/passthrough.hpp"
#include "clairfs/fuse/filesystem.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

namespace clairfs::fuse {

void Passthrough::start(std::string why_not) {
    std::lock_guard lk(mu_);
    why_off_ = std::move(why_not);
    on_.store(why_off_.empty(), std::memory_order_relaxed);
}

void Passthrough::stop(const std::string& why) {
    if (!on_.exchange(false)) return; // stopped already: one log line
    {
        std::lock_guard lk(mu_);
        why_off_ = why;
    }
    LOG_WARN("passthrough off: %s; files the tiers do not take are read through the daemon",
             why.c_str());
}

#if CLAIRFS_HAVE_PASSTHROUGH
namespace {

// The backing file opened within --io-timeout, as a READ's backing open
// is: a hung shared file system fails this OPEN with EIO, not the FUSE
// thread. The descriptor, or -errno.
int open_backing(Filesystem& fs, const index::Node& n) {
    struct Call {
        cache::BackingStore* store;
        const index::Node* node;
        int fd = -1;
    };
    auto c = std::make_shared<Call>(Call{&fs.engine->backing(), &n});
    if (!fs.engine->backing_calls().run({[c] { c->fd = c->store->open_verified(*c->node); },
                                         [c] {
                                             if (c->fd >= 0) sys::close(c->fd);
                                             c->fd = -1;
                                         }})) {
        fs.engine->note_io_timeout(n);
        return -EIO;
    }
    return c->fd;
}

} // namespace
#endif

int32_t Passthrough::open(fuse_req_t req, Filesystem& fs, const index::Node& n,
                          index::NodeId id) {
    close_queued(req);
    {
        // Another open of the file has a backing id: the kernel takes no
        // second one for the inode, and a cached open beside a passthrough
        // one would be refused (ETXTBSY), so it shares it even once off.
        std::lock_guard lk(mu_);
        if (auto it = open_.find(id); it != open_.end() && it->second.id) {
            ++it->second.opens;
            opens_.fetch_add(1, std::memory_order_relaxed);
            return it->second.id;
        }
    }
    if (!on()) return 0;
#if CLAIRFS_HAVE_PASSTHROUGH
    const int fd = open_backing(fs, n);
    if (fd < 0) return fd;
    errno = 0;
    int32_t backing = fuse_passthrough_open(req, fd);
    const int err = errno;
    sys::close(fd); // the kernel holds its own reference
    if (backing <= 0) {
        refused(err);
        return 0;
    }
    return adopt(req, id, backing);
#else
    (void)req, (void)fs, (void)n;
    return 0;
#endif
}

void Passthrough::refused(int err) {
    fallbacks_.fetch_add(1, std::memory_order_relaxed);
    stop(std::string("the kernel refused a backing file (") +
         (err ? std::strerror(err) : "no reason given") +
         (err == EPERM ? ": passthrough needs CAP_SYS_ADMIN" : "") + ")");
}

int32_t Passthrough::open_tier(fuse_req_t req, Filesystem& fs, index::NodeId id) {
    close_queued(req);
    int32_t kept = 0;
    {
        std::lock_guard lk(mu_);
        auto it = open_.find(id);
        if (it != open_.end() && it->second.id && it->second.opens > 0) {
            ++it->second.opens;
            tier_opens_.fetch_add(1, std::memory_order_relaxed);
            return it->second.id;
        }
        // A cached open of it is still live (or passthrough is off): this
        // one is cached too, and counted so that no later open mixes.
        if ((it != open_.end() && it->second.cached) || !on()) {
            ++open_[id].cached;
            return 0;
        }
        if (it != open_.end()) kept = it->second.id;
    }
#if CLAIRFS_HAVE_PASSTHROUGH
    // Asked at every first open, a kept id or not: the entry is the
    // kernel's only while its checked pages are all in the page cache.
    int32_t backing = 0;
    if (const int fd = fs.engine->kernel_file(id); fd >= 0 && kept) {
        sys::close(fd);
        if (int32_t b = share_kept(id, kept)) {
            fs.engine->kernel_file_served(id, true);
            return b;
        }
    } else if (fd >= 0) {
        errno = 0;
        backing = fuse_passthrough_open(req, fd);
        const int err = errno;
        sys::close(fd); // the kernel holds its own reference
        fs.engine->kernel_file_served(id, backing > 0);
        if (backing <= 0) {
            backing = 0;
            refused(err);
            fs.engine->serve_ssd_by_kernel(false, {});
        }
    }
    if (backing > 0) {
        kept_opened_.fetch_add(1, std::memory_order_relaxed);
        tier_opens_.fetch_add(1, std::memory_order_relaxed);
        return adopt(req, id, backing, true);
    }
#else
    (void)fs, (void)kept;
#endif
    // Not (or not now) the kernel's to read: the daemon serves this open.
    std::lock_guard lk(mu_);
    Backing& b = open_[id];
    if (b.id && b.opens > 0) { // another open passed it through meanwhile
        ++b.opens;
        return b.id;
    }
    ++b.cached;
    return 0;
}

// The kept id, for an open whose entry was found ready; 0 where another
// open went cached meanwhile or the entry left the tier (dropped()).
int32_t Passthrough::share_kept(index::NodeId id, int32_t kept) {
    std::lock_guard lk(mu_);
    auto it = open_.find(id);
    if (it == open_.end() || it->second.id != kept || it->second.cached) return 0;
    ++it->second.opens;
    tier_opens_.fetch_add(1, std::memory_order_relaxed);
    opens_.fetch_add(1, std::memory_order_relaxed);
    return kept;
}

void Passthrough::cached_release(index::NodeId id) {
    std::lock_guard lk(mu_);
    auto it = open_.find(id);
    if (it == open_.end() || it->second.cached == 0) return;
    if (--it->second.cached == 0 && it->second.id == 0) open_.erase(it);
}

void Passthrough::dropped(index::NodeId id) {
    std::lock_guard lk(mu_);
    auto it = open_.find(id);
    if (it == open_.end() || !it->second.kept) return;
    it->second.kept = false;
    --kept_;
    if (it->second.opens > 0) return; // closed at its last release
    to_close_.push_back(it->second.id);
    it->second.id = 0;
    if (it->second.cached == 0) open_.erase(it);
}

void Passthrough::close_queued(fuse_req_t req) {
    std::vector<int32_t> ids;
    {
        std::lock_guard lk(mu_);
        if (to_close_.empty() || !req) return;
        ids.swap(to_close_);
    }
#if CLAIRFS_HAVE_PASSTHROUGH
    for (int32_t b : ids) fuse_passthrough_close(req, b);
#endif
}

// A concurrent open of the same file may have got an id first: the file
// keeps that one, and this one is closed.
int32_t Passthrough::adopt(fuse_req_t req, index::NodeId id, int32_t backing, bool keep) {
    int32_t unused = 0;
    {
        std::lock_guard lk(mu_);
        Backing& b = open_[id];
        if (b.id) {
            unused = backing;
        } else {
            b.id = backing;
            b.kept = keep && kept_ < max_kept;
            kept_ += b.kept ? 1 : 0;
        }
        ++b.opens;
        backing = b.id;
    }
#if CLAIRFS_HAVE_PASSTHROUGH
    if (unused) fuse_passthrough_close(req, unused);
#else
    (void)req, (void)unused;
#endif
    opens_.fetch_add(1, std::memory_order_relaxed);
    return backing;
}

void Passthrough::release(fuse_req_t req, index::NodeId id) {
    int32_t last = 0;
    {
        std::lock_guard lk(mu_);
        auto it = open_.find(id);
        if (it == open_.end() || it->second.opens == 0) return;
        if (--it->second.opens == 0 && !it->second.kept) {
            last = it->second.id;
            it->second.id = 0;
            if (it->second.cached == 0) open_.erase(it);
            // No request to close it with (an OPEN whose reply failed):
            // the next request closes it.
            if (!req && last) to_close_.push_back(last);
        }
    }
#if CLAIRFS_HAVE_PASSTHROUGH
    if (last && req) fuse_passthrough_close(req, last);
#else
    (void)last;
#endif
    close_queued(req);
}

void Passthrough::status(nlohmann::json& out) const {
    std::lock_guard lk(mu_);
    out = {{"state", on() ? "on" : "off"},
           {"reason", why_off_.empty() ? nlohmann::json(nullptr) : nlohmann::json(why_off_)},
           {"opens", opens_.load(std::memory_order_relaxed)},
           {"files_open", std::count_if(open_.begin(), open_.end(),
                                        [](const auto& e) { return e.second.opens > 0; })},
           {"refused", fallbacks_.load(std::memory_order_relaxed)},
           {"tier_opens", tier_opens_.load(std::memory_order_relaxed)},
           {"tier_ids_made", kept_opened_.load(std::memory_order_relaxed)},
           {"tier_ids_kept", kept_}};
}

} // namespace clairfs::fuse
