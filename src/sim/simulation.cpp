// SPDX-License-Identifier: MIT
// The event loop of `clairfs simulate`. Each rank's DataLoader runs as its
// workers (each opens its batches' samples in order, then spends the
// sample's CPU on a core) and its training loop (takes batches in order,
// one step each; with lockstep every rank waits for the slowest, as DDP's
// all-reduce makes it). Each node's clairfs runs as the daemon's
// scheduler: a window of the files due soonest up to --mem, fetched in
// order by --fetch-threads, room made by evicting what is due last within
// the lead, each fetch sent to the source expected to finish it first.
#include "clairfs/sim/simulation.hpp"

#include "clairfs/prefetch/cache_rules.hpp"
#include "run.hpp"

#include <chrono>
#include <cmath>

namespace clairfs::sim {

double Run::fs_read(uint32_t n, uint32_t size, double t, bool direct) {
    const double requests = direct && cfg_.shared_fs.direct_requests_per_file > 0
                                ? cfg_.shared_fs.direct_requests_per_file
                                : std::ceil(double(size) / double(cfg_.shared_fs.request_bytes));
    // The file system as a whole limits bytes and requests separately (as
    // token buckets do: a run of large files is bound by the one, of small
    // files by the other); the node's own client link limits its bytes.
    double bytes_end = fs_bytes_.reserve(t, size / cfg_.shared_fs.bandwidth);
    double requests_end = fs_requests_.reserve(t, requests / cfg_.shared_fs.iops);
    double client_end = node_[n].fs_client.reserve(t, size / cfg_.shared_fs.client_bandwidth);
    const double fs_end = std::max(bytes_end, requests_end);
    EpochResult& e = stats();
    e.fs_bytes += size;
    e.fs_requests += requests;
    ++e.fs_files;
    return std::max(fs_end, client_end) + cfg_.shared_fs.latency_s;
}

// Positions, epochs, streams and batches per rank, and the lead the
// daemon keeps.
void Run::size_job() {
    E_ = cfg_.job.epochs;
    S_ = std::max<uint32_t>(cfg_.job.num_workers, 1);
    B_ = (L_ + cfg_.job.batch_size - 1) / cfg_.job.batch_size;
    result_.epochs.assign(E_, {});
    epochs_.finished.assign(E_, 0);
    epochs_.boundary.assign(E_, 0);
    opens_total_ = uint64_t{L_} * world_ * E_;
    lead_ = prefetch::lead_files(prefetch::loader_in_flight(cfg_.job.num_workers,
                                                            cfg_.job.prefetch_factor,
                                                            cfg_.job.batch_size, R_),
                                 cfg_.node.fetch_threads);
}

// Nodes with their caches, cores, ranks and workers, all idle.
void Run::build_cluster() {
    node_ = std::vector<Node>(nodes_);
    for (Node& x : node_) x.ram.set_sizes(size_.data());
    if (sc_ == Scenario::direct && cfg_.shared_fs.page_cache > 0) {
        if (cfg_.shared_fs.page_cache_shared)
            shared_page_cache_ = std::make_unique<Lru>(cfg_.shared_fs.page_cache);
        else
            for (Node& x : node_) x.page_cache = std::make_unique<Lru>(cfg_.shared_fs.page_cache);
    }
    cores_.assign(cfg_.cluster.cores_shared ? 1 : nodes_, CorePool(cfg_.cluster.cores));
    ranks_.assign(world_, {});
    for (Rank& k : ranks_) {
        k.opened.assign(L_, 0);
        k.ready.assign(B_, 0);
    }
    workers_.assign(uint64_t{world_} * S_, {});
}

void Run::start_job() {
    orders_.build(1);
    if (peers()) place_homes();
    for (uint32_t r = 0; r < world_; ++r) start_epoch(r, cfg_.compute.job_start_s);
    if (clairfs()) // clairfs prefetches from the registration on
        for (uint32_t n = 0; n < nodes_; ++n) pump(n, 0);
    if (cfg_.compute.lockstep) lockstep_.ready.assign(B_, 0);
}

void Run::dispatch(const Event& ev) {
    switch (ev.kind) {
    case worker_go: worker_next(ev.a, ev.t); break;
    case sample_done: on_sample_done(ev.a, ev.t); break;
    case fetch_done: on_fetch_done(ev.a, ev.b, ev.t); break;
    case step_done: on_step_done(ev.a, ev.t); break;
    case global_step_done: on_global_step_done(ev.t); break;
    }
}

void Run::on_global_step_done(double t) {
    lockstep_.stepping = false;
    for (uint32_t r = 0; r < world_; ++r) on_step_done(r, t);
    if (++lockstep_.step == B_) {
        lockstep_.step = 0;
        std::fill(lockstep_.ready.begin(), lockstep_.ready.end(), 0);
    } else {
        try_global_step(t);
    }
}

ScenarioResult Run::run() {
    auto wall = std::chrono::steady_clock::now();
    result_.scenario = sc_;
    L_ = orders_.positions();
    max_file_ = cfg_.node.ram / 16; // EngineOptions::max_file's default
    if (L_ == 0) return result_; // check_job() refuses it
    size_job();
    build_cluster();
    start_job();
    while (!events_.empty()) {
        Event ev = events_.top();
        events_.pop();
        // Progress a person can watch on a long run (a few million events
        // a second).
        if ((++result_.events & ((1u << 22) - 1)) == 0 && progress_)
            progress_(sc_, epochs_.current, double(opens_done_) / double(opens_total_));
        dispatch(ev);
    }
    result_.wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    return result_;
}

std::string check_job(const SimConfig& cfg, uint64_t files) {
    SimOrders orders(cfg.job, static_cast<uint32_t>(files));
    if (orders.positions() > 0) return "";
    return "job: each rank opens no sample in an epoch (" + std::to_string(files) +
           " samples over " + std::to_string(cfg.world()) + " ranks" +
           (cfg.job.drop_last ? ", batches of " + std::to_string(cfg.job.batch_size) +
                                    " with drop_last"
                              : std::string()) +
           ")";
}

ScenarioResult simulate(const SimConfig& cfg, const std::vector<uint32_t>& sizes, Scenario s,
                        const Progress& progress) {
    Run run(cfg, sizes, s, progress);
    return run.run();
}

} // namespace clairfs::sim
