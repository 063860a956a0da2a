// SPDX-License-Identifier: MIT
// One scenario's run of `clairfs simulate`: the cluster's state and the
// events that move it. The loader's side is in loader_model.cpp, clairfs
// on each node in daemon_model.cpp, the set-up and the event loop in
// simulation.cpp.
#pragma once

#include "clairfs/peer/source_model.hpp"
#include "clairfs/sim/simulation.hpp"
#include "node_cache.hpp"
#include "servers.hpp"
#include "sim_orders.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <queue>
#include <unordered_map>
#include <vector>

namespace clairfs::sim {

enum class Src : uint8_t { ssd, peer, fs };

struct Event {
    double t;
    uint64_t seq; // ties go first come first served
    uint8_t kind;
    uint32_t a;
    uint32_t b;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};
enum Kind : uint8_t { worker_go, sample_done, fetch_done, step_done, global_step_done };

struct Fetch {
    double issued;
    double done = 0;
    Src src;
    bool prefetch;
    int home; // peer fetches: the link's other end
    bool measured;
    std::vector<uint32_t> waiters; // workers whose open waits on it
};

struct Node {
    NodeCache ram;
    std::unordered_map<uint32_t, Fetch> inflight;
    uint64_t prefetching = 0;       // prefetches in flight
    uint64_t inflight_bytes = 0;    // their bytes (room spoken for)
    FlatMap<uint8_t> ssd; // files on the SSD tier
    uint64_t ssd_bytes = 0;
    uint64_t qp = 0;            // the next file of the node's future the prefetcher looks at
    uint64_t front = 0;         // the node's frontier in its future
    uint64_t window_bytes = 0;  // bytes of the future between front and qp
    uint64_t here_bytes = 0;    // peers: bytes homed here
    uint64_t homed_held = 0;    // peers: of them held
    bool pinned = false;        // peers: homes keep their files for good
    // Peers, homes not pinned: the files homed here, and this epoch's of
    // them by the group's first open (the node's future position), with a
    // cursor at the node's frontier: a file the frontier passes is next
    // due later, which its held entry must be told.
    std::vector<uint32_t> homed;
    std::vector<std::pair<uint64_t, uint32_t>> group_order;
    size_t group_cursor = 0;
    uint32_t group_epoch = UINT32_MAX;
    Server fs_client, ssd_dev, net_in, net_out;
    std::unique_ptr<Lru> page_cache;
    peer::SourceRate backing_rate;
};

struct Worker {
    uint32_t batch = 0; // the batch it loads (its w-th, w + S-th, ...)
    uint32_t i = 0;     // samples of it done
    bool blocked = false;
};

struct Rank {
    uint32_t epoch = 0;
    uint32_t received = 0;  // batches the loop has taken
    uint32_t completed = 0; // steps finished
    bool stepping = false;
    double loop_free = 0;   // when the loop last went idle
    double stall = 0;
    uint32_t front = 0;            // first position not yet opened
    std::vector<uint8_t> opened;   // per position, this epoch
    std::vector<uint8_t> ready;    // per batch, this epoch
    bool done = false;
};

class Run {
public:
    Run(const SimConfig& cfg, const std::vector<uint32_t>& sizes, Scenario s, const Progress& p)
        : cfg_(cfg), size_(sizes), sc_(s), progress_(p),
          orders_(cfg.job, static_cast<uint32_t>(sizes.size())), R_(cfg.cluster.ranks_per_node),
          world_(orders_.world()), nodes_(cfg.cluster.nodes) {}

    ScenarioResult run();

private:
    // run()'s steps: the job's dimensions, the cluster's state, the first
    // events, and each event as it comes.
    void size_job();
    void build_cluster();
    void start_job();
    void dispatch(const Event& ev);
    void on_global_step_done(double t);

    // The node's future: Q = (epoch * L + position) * R + local rank.
    uint64_t q_of(uint32_t e, uint32_t p, uint32_t j) const {
        return (uint64_t{e} * L_ + p) * R_ + j;
    }
    uint32_t q_epoch(uint64_t q) const { return static_cast<uint32_t>(q / (uint64_t{L_} * R_)); }
    uint32_t future(uint32_t n, uint64_t q) const {
        uint64_t rem = q % (uint64_t{L_} * R_);
        return orders_.file(q_epoch(q), n * R_ + static_cast<uint32_t>(rem % R_),
                            static_cast<uint32_t>(rem / R_));
    }
    uint64_t rank_q(uint32_t r) const {
        const Rank& k = ranks_[r];
        if (k.done) return never;
        return q_of(k.epoch, k.front, r % R_);
    }
    uint64_t node_front(uint32_t n) const {
        uint64_t m = never;
        for (uint32_t j = 0; j < R_; ++j) m = std::min(m, rank_q(n * R_ + j));
        return m;
    }
    bool clairfs() const { return sc_ == Scenario::clairfs || sc_ == Scenario::clairfs_peers; }
    // Engine::tiered(): a file above a sixteenth of --mem is read through,
    // never cached, prefetched or homed.
    bool tiered(uint32_t f) const { return size_[f] <= max_file_; }
    bool peers() const { return sc_ == Scenario::clairfs_peers; }

    void push(double t, Kind k, uint32_t a, uint32_t b = 0) {
        events_.push(Event{t, seq_++, k, a, b});
    }
    EpochResult& stats() { return result_.epochs[std::min<uint32_t>(epochs_.current, E_ - 1)]; }
    EpochResult& stats_of(uint32_t r) { return result_.epochs[ranks_[r].epoch]; }

    // Resources.
    double fs_read(uint32_t n, uint32_t size, double t, bool direct = false);
    double ram_read(uint32_t size, double t, bool local) const {
        return t + (local ? cfg_.node.local_file_cost_s : cfg_.node.file_cost_s) +
               size / cfg_.node.ram_bandwidth;
    }
    double cpu(uint32_t n, double t) {
        if (cfg_.compute.sample_cpu_s <= 0) return t;
        CorePool& c = cfg_.cluster.cores_shared ? cores_.front() : cores_[n];
        return c.reserve(t, cfg_.compute.sample_cpu_s);
    }

    // The loader.
    void start_epoch(uint32_t r, double t);
    void worker_next(uint32_t w, double t);
    // An open by worker w of rank r of file f at position p, by scenario:
    // when its read is done, or < 0 when it waits on a fetch.
    double read_warm(uint32_t r, uint32_t f, double t);
    double read_direct(uint32_t r, uint32_t f, double t);
    double read_clairfs(uint32_t w, uint32_t r, uint32_t p, uint32_t f, double t);
    void read_done(uint32_t w, double t) { push(cpu(worker_node(w), t), sample_done, w); }
    void on_sample_done(uint32_t w, double t);
    void try_step(uint32_t r, double t);
    void try_global_step(double t);
    void take_batch(uint32_t r, double t);
    void on_step_done(uint32_t r, double t);
    void end_epoch(uint32_t r, double t);
    void wake_workers(uint32_t r, double t);
    bool dispatchable(const Rank& k, uint32_t batch) const;
    uint32_t worker_node(uint32_t w) const { return (w / S_) / R_; }
    uint32_t batch_len(uint32_t b) const { return std::min(cfg_.job.batch_size, L_ - b * cfg_.job.batch_size); }

    // clairfs.
    double open(uint32_t n, uint32_t w, uint32_t f, double t); // < 0: waits on a fetch
    void opened(uint32_t r, uint32_t p);
    void pass_group_firsts(uint32_t n);
    void fetch(uint32_t n, uint32_t f, double t, bool prefetch, std::optional<uint32_t> waiter);
    bool peer_first(uint32_t n, int home) const;
    double fetch_from_peer(uint32_t n, int home, uint32_t f, double t, Fetch& fe);
    void on_fetch_done(uint32_t n, uint32_t f, double t);
    void admit(uint32_t n, uint32_t f, bool opened_on_arrival);
    void pump(uint32_t n, double t);
    uint32_t known_epochs(uint32_t n) const;
    uint64_t free_ram(const Node& x) const;
    bool make_room(uint32_t n, uint64_t need);
    void evict(uint32_t n, uint32_t f);
    uint64_t due(uint32_t n, uint32_t f) const;
    uint64_t reserved(const Node& x) const;
    void place_homes();

    const SimConfig& cfg_;
    const std::vector<uint32_t>& size_;
    Scenario sc_;
    Progress progress_;
    SimOrders orders_;
    uint32_t R_, world_, nodes_;
    uint32_t L_ = 0, E_ = 0, S_ = 1, B_ = 0; // positions, epochs, streams per rank, batches
    uint64_t lead_ = 0;
    uint64_t max_file_ = 0;
    std::vector<Node> node_;
    std::vector<Rank> ranks_;
    std::vector<Worker> workers_;
    std::vector<CorePool> cores_;
    std::vector<int> home_;
    std::unique_ptr<peer::SourceRate[]> links_; // [n * nodes + home]
    Server fs_bytes_, fs_requests_;
    std::unique_ptr<Lru> shared_page_cache_;
    std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
    uint64_t seq_ = 0;
    ScenarioResult result_;
    // The epoch the slowest rank is in, and per epoch the ranks done with
    // it and when the last of them finished it.
    struct Epochs {
        uint32_t current = 0;
        std::vector<uint32_t> finished;
        std::vector<double> boundary;
    } epochs_;
    // --lockstep: per batch, the ranks ready for its global step; the next
    // step due, and whether one is under way.
    struct Lockstep {
        std::vector<uint32_t> ready;
        uint32_t step = 0;
        bool stepping = false;
    } lockstep_;
    uint64_t opens_done_ = 0, opens_total_ = 0;
};

} // namespace clairfs::sim
