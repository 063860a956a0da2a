// SPDX-License-Identifier: MIT
#include "clairfs/prefetch/fetch_pool.hpp"

#include "clairfs/log.hpp"
#include "clairfs/sys/contained.hpp"
#include "clairfs/sys/normal_thread.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <pthread.h>

namespace clairfs::prefetch {

// Lives in pending_ from queueing until its result is published; waiters
// hold their own reference, so it outlives its map entry until they read it.
// Every field is guarded by the pool's mu_.
struct FetchPool::Pending {
    bool demanded = false;   // in the demand queue, or some demand() waits for it
    bool background = false; // in the background queue
    bool running = false;    // a pool thread took it
    bool done = false;       // result is final
    FetchResult result;
    std::condition_variable cv; // waits on mu_; signalled once, when done
};

FetchPool::FetchPool(cache::BackingStore& store, unsigned threads, size_t max_queued,
                     Completion done, std::chrono::milliseconds wait_bound)
    : FetchPool(
          [&store](index::NodeId id, bool) {
              FetchResult r;
              r.error = store.read_whole(id, r.blob);
              return r;
          },
          threads, max_queued, std::move(done), wait_bound) {}

FetchPool::FetchPool(Reader read, unsigned threads, size_t max_queued, Completion done,
                     std::chrono::milliseconds wait_bound)
    : read_(std::move(read)), done_(std::move(done)), max_queued_(max_queued),
      wait_bound_(wait_bound) {
    threads = std::max(threads, 1u);
    threads_.reserve(threads);
    try {
        for (unsigned i = 0; i < threads; ++i) {
            {
                std::lock_guard lk(mu_);
                ++live_;
            }
            threads_.push_back(sys::normal_thread([this] { run(); }));
        }
    } catch (...) {
        // The destructor does not run for a half-built pool, and a joinable
        // std::thread destroyed unjoined would terminate the process.
        {
            std::lock_guard lk(mu_);
            stopping_ = true;
        }
        work_cv_.notify_all();
        for (auto& t : threads_) t.join();
        throw;
    }
}

FetchPool::~FetchPool() {
    stop({});
}

bool FetchPool::stop(std::chrono::milliseconds bound) {
    std::unique_lock lk(mu_);
    if (stopped_) return true;
    stopping_ = true;
    // Nobody waits on a queued prefetch (a demand would have moved it to
    // the demand queue), so dropping it strands no caller.
    for (index::NodeId id : prefetch_queue_) pending_.erase(id);
    prefetch_queue_.clear();
    for (index::NodeId id : background_queue_) pending_.erase(id);
    background_queue_.clear();
    work_cv_.notify_all();
    auto all_out = [&] { return live_ == 0; };
    if (bound.count() > 0) {
        if (!idle_cv_.wait_for(lk, bound, all_out)) return false;
    } else {
        idle_cv_.wait(lk, all_out);
    }
    lk.unlock();
    for (auto& t : threads_) t.join();
    lk.lock();
    // A demand() woken by the last fetches may still be about to relock mu_;
    // mu_ and the Pending condvars must outlive it.
    idle_cv_.wait(lk, [&] { return waiters_ == 0; });
    stopped_ = true;
    return true;
}

FetchResult FetchPool::demand(index::NodeId id, const std::function<cache::BlobRef()>& landed) {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock lk(mu_);
    // Only a caller racing the destructor gets here; no thread would serve it.
    if (stopping_) return {-ESHUTDOWN, nullptr};

    std::shared_ptr<Pending> p;
    if (auto it = pending_.find(id); it != pending_.end()) {
        p = it->second;
        ++stats_.joined;
        if (!p->running && !p->demanded) {
            // A queued prefetch is now needed by a reader: it moves ahead of
            // every other prefetch instead of being read a second time.
            auto& from = p->background ? background_queue_ : prefetch_queue_;
            auto q = std::find(from.begin(), from.end(), id);
            if (q != from.end()) from.erase(q);
            p->background = false;
            demand_queue_.push_back(id);
            work_cv_.notify_one();
        }
    } else {
        if (landed) {
            if (cache::BlobRef b = landed()) return {0, std::move(b)};
        }
        p = std::make_shared<Pending>();
        pending_.emplace(id, p);
        demand_queue_.push_back(id);
        work_cv_.notify_one();
    }
    p->demanded = true;
    ++stats_.demand;
    ++waiters_;

    bool in_time = true;
    if (wait_bound_.count() > 0)
        in_time = p->cv.wait_for(lk, wait_bound_, [&] { return p->done; });
    else
        p->cv.wait(lk, [&] { return p->done; });

    stats_.stall_ns += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                 std::chrono::steady_clock::now() - start)
                                                 .count());
    FetchResult r = in_time ? p->result : FetchResult{-EIO, nullptr};
    if (!in_time) ++stats_.timeouts;
    // Notified under the lock so the destructor cannot free idle_cv_ first.
    if (--waiters_ == 0 && stopping_) idle_cv_.notify_all();
    lk.unlock();
    if (!in_time)
        LOG_ERROR("a read of node %u has not completed in %.1f s (--io-timeout); answered EIO, "
                  "the fetch goes on in the background",
                  id, static_cast<double>(wait_bound_.count()) / 1000);
    return r;
}

// One read, its failure contained: the fetch fails alone (its waiters get
// EIO or ENOMEM) and the calling thread, a pool thread or a peer's server,
// lives on.
FetchResult FetchPool::read_contained(const Reader& read, index::NodeId id, bool demanded) {
    try {
        return read(id, demanded);
    } catch (const std::bad_alloc&) {
        return {-ENOMEM, nullptr};
    } catch (...) {
        LOG_ERROR("fetch of node %u failed inside clairfs: %s", id,
                  sys::current_exception_text().c_str());
        return {-EIO, nullptr};
    }
}

FetchResult FetchPool::run_here(index::NodeId id, const Reader& read) {
    std::unique_lock lk(mu_);
    if (stopping_) return {-ESHUTDOWN, nullptr};
    std::shared_ptr<Pending> p;
    if (auto it = pending_.find(id); it != pending_.end()) {
        p = it->second;
        if (p->running) {
            // Being read by a pool thread: wait for it like a demand.
            p->demanded = true;
            ++waiters_;
            bool in_time = wait_bound_.count() > 0
                               ? p->cv.wait_for(lk, wait_bound_, [&] { return p->done; })
                               : (p->cv.wait(lk, [&] { return p->done; }), true);
            FetchResult r = in_time ? p->result : FetchResult{-EIO, nullptr};
            if (--waiters_ == 0 && stopping_) idle_cv_.notify_all();
            return r;
        }
        // Queued: take it off its queue and read it here.
        for (auto* q : {&demand_queue_, &prefetch_queue_, &background_queue_})
            if (auto at = std::find(q->begin(), q->end(), id); at != q->end()) q->erase(at);
        p->background = false;
    } else {
        p = std::make_shared<Pending>();
        pending_.emplace(id, p);
    }
    p->running = true;
    p->demanded = true;
    ++stats_.running;
    lk.unlock();
    FetchResult r = read_contained(read, id, true);
    FetchResult out = r;
    finish(id, *p, std::move(r));
    return out;
}

bool FetchPool::prefetch(index::NodeId id, const std::function<bool()>& held) {
    std::lock_guard lk(mu_);
    if (stopping_ || prefetch_queue_.size() >= max_queued_) return false;
    if (auto it = pending_.find(id); it != pending_.end()) {
        Pending& p = *it->second;
        if (!p.background || p.running) return false;
        // Stage-in queued it; the prediction needs it sooner.
        auto q = std::find(background_queue_.begin(), background_queue_.end(), id);
        if (q != background_queue_.end()) background_queue_.erase(q);
        p.background = false;
        prefetch_queue_.push_back(id);
        return true;
    }
    if (held && held()) return true;
    pending_.emplace(id, std::make_shared<Pending>());
    prefetch_queue_.push_back(id);
    work_cv_.notify_one();
    return true;
}

bool FetchPool::background(index::NodeId id, const std::function<bool()>& held) {
    std::lock_guard lk(mu_);
    if (stopping_ || pending_.contains(id) || background_queue_.size() >= max_queued_) return false;
    if (held && held()) return false;
    auto p = std::make_shared<Pending>();
    p->background = true;
    pending_.emplace(id, std::move(p));
    background_queue_.push_back(id);
    work_cv_.notify_one();
    return true;
}

bool FetchPool::busy(index::NodeId id) const {
    std::lock_guard lk(mu_);
    auto it = pending_.find(id);
    return it != pending_.end() && (!it->second->background || it->second->running);
}

void FetchPool::drop_queued_prefetches() {
    std::lock_guard lk(mu_);
    for (index::NodeId id : prefetch_queue_) pending_.erase(id);
    prefetch_queue_.clear();
}

void FetchPool::drop_background() {
    std::lock_guard lk(mu_);
    for (index::NodeId id : background_queue_) pending_.erase(id);
    background_queue_.clear();
}

bool FetchPool::background_idle() const {
    std::lock_guard lk(mu_);
    return background_queue_.empty() && stats_.background_running == 0;
}

FetchStats FetchPool::stats() const {
    std::lock_guard lk(mu_);
    FetchStats s = stats_;
    s.queued = prefetch_queue_.size();
    s.background_queued = background_queue_.size();
    return s;
}

void FetchPool::run() {
    // Named so `top -H` and per-thread CPU figures tell readers from the
    // FUSE workers.
    pthread_setname_np(pthread_self(), "clairfs-fetch");
    for (;;) {
        index::NodeId id;
        std::shared_ptr<Pending> p;
        bool demanded;
        {
            std::unique_lock lk(mu_);
            work_cv_.wait(lk, [&] {
                return stopping_ || !demand_queue_.empty() || !prefetch_queue_.empty() ||
                       !background_queue_.empty();
            });
            // Demand entries are finished even when stopping: someone waits
            // on each. The destructor already emptied the other queues.
            auto& q = !demand_queue_.empty()     ? demand_queue_
                      : !prefetch_queue_.empty() ? prefetch_queue_
                                                 : background_queue_;
            if (q.empty()) {
                --live_; // stop() waits for this, bounded, before it joins
                idle_cv_.notify_all();
                return;
            }
            id = q.front();
            q.pop_front();
            p = pending_.at(id);
            p->running = true;
            demanded = p->demanded;
            ++stats_.running;
            // Nothing changes `background` of a running fetch.
            if (p->background) ++stats_.background_running;
        }

        finish(id, *p, read_contained(read_, id, demanded));
    }
}

void FetchPool::finish(index::NodeId id, Pending& p, FetchResult r) {
    bool demanded;
    {
        std::lock_guard lk(mu_);
        demanded = p.demanded;
    }
    // Before waiters wake, so a demand() that returns finds the tier's
    // admission decided; and while the file is still busy(), so a scheduler
    // that checks busy() then the tier never misses it and reads it twice.
    if (done_) {
        try {
            done_(id, r, demanded);
        } catch (const std::exception& e) {
            // Waiters must still be woken, and the thread must live on.
            LOG_ERROR("fetch completion for node %u failed: %s", id, e.what());
        } catch (...) {
            LOG_ERROR("fetch completion for node %u failed", id);
        }
    }
    {
        std::lock_guard lk(mu_);
        p.result = std::move(r);
        p.done = true;
        pending_.erase(id);
        --stats_.running;
        if (p.background) --stats_.background_running;
        if (p.background && !demanded)
            ++stats_.background;
        else if (!demanded)
            ++stats_.prefetched;
    }
    // `p` stays alive through run()'s reference, and the destructor cannot
    // get past join() before this returns, so notifying unlocked is safe.
    p.cv.notify_all();
}

} // namespace clairfs::prefetch
