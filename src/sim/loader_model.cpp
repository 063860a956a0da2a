// SPDX-License-Identifier: MIT
// The loader in `clairfs simulate`: each rank's DataLoader workers open
// their batches' samples in order, and its training loop takes the
// batches, one step each.
#include "clairfs/order/worker_split.hpp"
#include "run.hpp"

namespace clairfs::sim {

bool Run::dispatchable(const Rank& k, uint32_t batch) const {
    // torch hands prefetch_factor batches per worker out at first and one
    // more per batch the loop takes; without workers the main process loads
    // a batch only when the step before it is done.
    if (cfg_.job.num_workers == 0) return batch <= k.completed && !k.stepping;
    return batch < k.received + order::batches_in_flight(cfg_.job.num_workers,
                                                           cfg_.job.prefetch_factor);
}

void Run::start_epoch(uint32_t r, double t) {
    Rank& k = ranks_[r];
    k.received = k.completed = 0;
    k.stepping = false;
    k.front = 0;
    std::fill(k.opened.begin(), k.opened.end(), 0);
    std::fill(k.ready.begin(), k.ready.end(), 0);
    k.loop_free = t + cfg_.compute.epoch_overhead_s;
    k.stall = 0;
    for (uint32_t s = 0; s < S_; ++s) {
        Worker& w = workers_[r * S_ + s];
        w.batch = s;
        w.i = 0;
        w.blocked = false;
        push(t + cfg_.compute.epoch_overhead_s, worker_go, r * S_ + s);
    }
}

void Run::worker_next(uint32_t wi, double t) {
    Worker& w = workers_[wi];
    const uint32_t r = wi / S_;
    Rank& k = ranks_[r];
    if (k.done || w.batch >= B_) return;
    if (!dispatchable(k, w.batch)) {
        w.blocked = true;
        return;
    }
    w.blocked = false;
    const uint32_t p = w.batch * cfg_.job.batch_size + w.i;
    const uint32_t f = orders_.file(k.epoch, r, p);
    ++stats_of(r).opens;
    ++opens_done_;
    double done = 0;
    switch (sc_) {
    case Scenario::local_warm: done = read_warm(r, f, t); break;
    case Scenario::direct: done = read_direct(r, f, t); break;
    default: done = read_clairfs(wi, r, p, f, t); break;
    }
    if (done >= 0) read_done(wi, done);
}

// Every file already in the node's memory.
double Run::read_warm(uint32_t r, uint32_t f, double t) {
    ++stats_of(r).ram_hits;
    return ram_read(size_[f], t, true);
}

// The shared file system through the kernel's page cache, if one is
// modelled.
double Run::read_direct(uint32_t r, uint32_t f, double t) {
    const uint32_t n = r / R_;
    Lru* pc = shared_page_cache_ ? shared_page_cache_.get() : node_[n].page_cache.get();
    if (pc && pc->hit(f)) {
        ++stats_of(r).page_cache_hits;
        return ram_read(size_[f], t, true);
    }
    ++stats_of(r).from_fs;
    double done = fs_read(n, size_[f], t, true) + size_[f] / cfg_.node.ram_bandwidth;
    if (pc) pc->insert(f, size_[f]);
    return done;
}

// Through the node's clairfs, which sees the open and schedules on.
double Run::read_clairfs(uint32_t wi, uint32_t r, uint32_t p, uint32_t f, double t) {
    const uint32_t n = r / R_;
    opened(r, p);
    double done = 0;
    if (tiered(f)) {
        done = open(n, wi, f, t);
    } else {
        ++stats_of(r).from_fs;
        done = ram_read(size_[f], fs_read(n, size_[f], t), false);
    }
    pump(n, t);
    return done;
}

void Run::on_sample_done(uint32_t wi, double t) {
    Worker& w = workers_[wi];
    const uint32_t r = wi / S_;
    if (++w.i < batch_len(w.batch)) {
        worker_next(wi, t);
        return;
    }
    Rank& k = ranks_[r];
    k.ready[w.batch] = 1;
    if (cfg_.compute.lockstep && ++lockstep_.ready[w.batch] == world_) try_global_step(t);
    w.batch += S_;
    w.i = 0;
    if (!cfg_.compute.lockstep) try_step(r, t);
    worker_next(wi, t);
}

void Run::take_batch(uint32_t r, double t) {
    Rank& k = ranks_[r];
    k.stall += std::max(0.0, t - k.loop_free);
    k.stepping = true;
    ++k.received;
    wake_workers(r, t);
}

void Run::try_step(uint32_t r, double t) {
    Rank& k = ranks_[r];
    if (k.done || k.stepping || k.completed >= B_ || !k.ready[k.completed]) return;
    take_batch(r, t);
    push(t + cfg_.compute.step_s, step_done, r);
}

void Run::try_global_step(double t) {
    if (lockstep_.stepping || lockstep_.step >= B_ || lockstep_.ready[lockstep_.step] != world_)
        return;
    lockstep_.stepping = true;
    for (uint32_t r = 0; r < world_; ++r) take_batch(r, t);
    push(t + cfg_.compute.step_s, global_step_done, 0);
}

void Run::on_step_done(uint32_t r, double t) {
    Rank& k = ranks_[r];
    k.stepping = false;
    ++k.completed;
    k.loop_free = t;
    if (k.completed == B_) {
        end_epoch(r, t);
        return;
    }
    if (cfg_.job.num_workers == 0) wake_workers(r, t);
    if (!cfg_.compute.lockstep) try_step(r, t);
}

void Run::wake_workers(uint32_t r, double t) {
    for (uint32_t s = 0; s < S_; ++s) {
        Worker& w = workers_[r * S_ + s];
        if (w.blocked && dispatchable(ranks_[r], w.batch)) {
            w.blocked = false;
            push(t, worker_go, r * S_ + s);
        }
    }
}

void Run::end_epoch(uint32_t r, double t) {
    Rank& k = ranks_[r];
    EpochResult& mine = result_.epochs[k.epoch];
    mine.stall_s = std::max(mine.stall_s, k.stall);
    const uint32_t e = k.epoch;
    if (++epochs_.finished[e] == world_) {
        epochs_.boundary[e] = t;
        epochs_.current = e + 1;
        result_.epochs[e].seconds =
            t - (e == 0 ? cfg_.compute.job_start_s : epochs_.boundary[e - 1]);
        // The daemon holds the current and the next epoch's order.
        orders_.release_before(e + 1);
        if (progress_) progress_(sc_, std::min(e + 1, E_ - 1), double(opens_done_) / opens_total_);
    }
    if (e + 1 >= E_) {
        k.done = true;
        if (clairfs()) pump(r / R_, t);
        return;
    }
    ++k.epoch;
    orders_.build(k.epoch + 1);
    start_epoch(r, t);
    if (clairfs()) {
        const uint32_t n = r / R_;
        node_[n].front = std::max(node_[n].front, node_front(n));
        pass_group_firsts(n);
        pump(n, t);
    }
}

} // namespace clairfs::sim
