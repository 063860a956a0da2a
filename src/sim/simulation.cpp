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

#include "clairfs/order/worker_split.hpp"
#include "clairfs/peer/group.hpp"
#include "clairfs/peer/source_model.hpp"
#include "clairfs/prefetch/cache_rules.hpp"
#include "node_cache.hpp"
#include "servers.hpp"
#include "sim_orders.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <queue>
#include <unordered_map>

namespace clairfs::sim {
namespace {

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
          orders_(cfg.job, static_cast<uint32_t>(sizes.size())), R_(cfg.ranks_per_node),
          world_(orders_.world()), nodes_(cfg.nodes) {}

    ScenarioResult run();

private:
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
    EpochResult& stats() { return result_.epochs[std::min<uint32_t>(global_epoch_, E_ - 1)]; }
    EpochResult& stats_of(uint32_t r) { return result_.epochs[ranks_[r].epoch]; }

    // Resources.
    double fs_read(uint32_t n, uint32_t size, double t, bool direct = false);
    double ram_read(uint32_t size, double t, bool local) const {
        return t + (local ? cfg_.local_file_cost_s : cfg_.file_cost_s) + size / cfg_.ram_bandwidth;
    }
    double cpu(uint32_t n, double t) {
        if (cfg_.sample_cpu_s <= 0) return t;
        CorePool& c = cfg_.cores_shared ? cores_.front() : cores_[n];
        return c.reserve(t, cfg_.sample_cpu_s);
    }

    // The loader.
    void start_epoch(uint32_t r, double t);
    void worker_next(uint32_t w, double t);
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
    void on_fetch_done(uint32_t n, uint32_t f, double t);
    void admit(uint32_t n, uint32_t f, bool opened_on_arrival);
    void pump(uint32_t n, double t);
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
    uint32_t global_epoch_ = 0;
    std::vector<uint32_t> finished_; // per epoch: ranks done with it
    std::vector<double> boundary_;   // per epoch: when the last rank finished it
    // lockstep
    std::vector<uint32_t> ready_count_;
    uint32_t global_step_ = 0;
    bool global_stepping_ = false;
    uint64_t opens_done_ = 0, opens_total_ = 0;
};

double Run::fs_read(uint32_t n, uint32_t size, double t, bool direct) {
    const double requests = direct && cfg_.direct_requests_per_file > 0
                                ? cfg_.direct_requests_per_file
                                : std::ceil(double(size) / double(cfg_.fs_request_bytes));
    // The file system as a whole limits bytes and requests separately (as
    // token buckets do: a run of large files is bound by the one, of small
    // files by the other); the node's own client link limits its bytes.
    double bytes_end = fs_bytes_.reserve(t, size / cfg_.fs_bandwidth);
    double requests_end = fs_requests_.reserve(t, requests / cfg_.fs_iops);
    double client_end = node_[n].fs_client.reserve(t, size / cfg_.fs_client_bandwidth);
    const double fs_end = std::max(bytes_end, requests_end);
    EpochResult& e = stats();
    e.fs_bytes += size;
    e.fs_requests += requests;
    ++e.fs_files;
    return std::max(fs_end, client_end) + cfg_.fs_latency_s;
}

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
    k.loop_free = t + cfg_.epoch_overhead_s;
    k.stall = 0;
    for (uint32_t s = 0; s < S_; ++s) {
        Worker& w = workers_[r * S_ + s];
        w.batch = s;
        w.i = 0;
        w.blocked = false;
        push(t + cfg_.epoch_overhead_s, worker_go, r * S_ + s);
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
    const uint32_t n = r / R_;
    ++stats_of(r).opens;
    ++opens_done_;
    double done = 0;
    switch (sc_) {
    case Scenario::local_warm:
        ++stats_of(r).ram_hits;
        done = ram_read(size_[f], t, true);
        break;
    case Scenario::direct: {
        Lru* pc = shared_page_cache_ ? shared_page_cache_.get() : node_[n].page_cache.get();
        if (pc && pc->hit(f)) {
            ++stats_of(r).page_cache_hits;
            done = ram_read(size_[f], t, true);
        } else {
            ++stats_of(r).from_fs;
            done = fs_read(n, size_[f], t, true) + size_[f] / cfg_.ram_bandwidth;
            if (pc) pc->insert(f, size_[f]);
        }
        break;
    }
    default:
        opened(r, p);
        if (tiered(f)) {
            done = open(n, wi, f, t);
        } else {
            ++stats_of(r).from_fs;
            done = ram_read(size_[f], fs_read(n, size_[f], t), false);
        }
        pump(n, t);
        break;
    }
    if (done >= 0) read_done(wi, done);
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
    if (cfg_.lockstep && ++ready_count_[w.batch] == world_) try_global_step(t);
    w.batch += S_;
    w.i = 0;
    if (!cfg_.lockstep) try_step(r, t);
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
    push(t + cfg_.step_s, step_done, r);
}

void Run::try_global_step(double t) {
    if (global_stepping_ || global_step_ >= B_ || ready_count_[global_step_] != world_) return;
    global_stepping_ = true;
    for (uint32_t r = 0; r < world_; ++r) take_batch(r, t);
    push(t + cfg_.step_s, global_step_done, 0);
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
    if (!cfg_.lockstep) try_step(r, t);
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
    if (++finished_[e] == world_) {
        boundary_[e] = t;
        global_epoch_ = e + 1;
        result_.epochs[e].seconds = t - (e == 0 ? cfg_.job_start_s : boundary_[e - 1]);
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

// ---- clairfs on a node ----

void Run::opened(uint32_t r, uint32_t p) {
    Rank& k = ranks_[r];
    k.opened[p] = 1;
    if (p != k.front) return;
    while (k.front < L_ && k.opened[k.front]) ++k.front;
    // The node's frontier moves with its slowest rank; files it passes
    // leave the window.
    const uint32_t n = r / R_;
    Node& x = node_[n];
    const uint64_t nf = node_front(n); // finite: rank r is not done
    for (uint64_t q = x.front; q < std::min(nf, x.qp); ++q) {
        const uint32_t g = future(n, q);
        if (tiered(g)) x.window_bytes -= std::min<uint64_t>(x.window_bytes, size_[g]);
    }
    x.front = std::max(x.front, nf);
    pass_group_firsts(n);
}

void Run::pass_group_firsts(uint32_t n) {
    Node& x = node_[n];
    if (x.homed.empty() || x.front == never) return;
    for (;;) {
        while (x.group_cursor < x.group_order.size() &&
               x.group_order[x.group_cursor].first < x.front) {
            uint32_t f = x.group_order[x.group_cursor++].second;
            if (x.ram.holds(f)) x.ram.update_key(f, due(n, f));
        }
        const uint32_t e = q_epoch(x.front);
        if (e == x.group_epoch || e >= E_) return;
        // The frontier entered epoch e: order its homed files by the
        // group's first open in it.
        x.group_epoch = e;
        x.group_order.clear();
        x.group_cursor = 0;
        for (uint32_t f : x.homed)
            if (uint32_t k = orders_.first(e, f); k != none)
                x.group_order.emplace_back(q_of(e, k / world_, 0), f);
        std::sort(x.group_order.begin(), x.group_order.end());
    }
}

double Run::open(uint32_t n, uint32_t wi, uint32_t f, double t) {
    Node& x = node_[n];
    const uint32_t r = wi / S_;
    if (x.ram.holds(f)) {
        ++stats_of(r).ram_hits;
        x.ram.rekey(f, due(n, f));
        return ram_read(size_[f], t, false);
    }
    if (auto it = x.inflight.find(f); it != x.inflight.end()) {
        ++stats_of(r).waited;
        it->second.waiters.push_back(wi);
        return -1;
    }
    fetch(n, f, t, false, wi);
    const Src s = x.inflight.at(f).src;
    EpochResult& e = stats_of(r);
    ++(s == Src::ssd ? e.from_ssd : s == Src::peer ? e.from_peer : e.from_fs);
    return -1;
}

// Where the daemon's read_whole() goes: the SSD tier if it holds the file,
// else the file's home if that is another node and choose_source() picks
// it, else the shared file system.
void Run::fetch(uint32_t n, uint32_t f, double t, bool prefetch, std::optional<uint32_t> waiter) {
    Node& x = node_[n];
    const uint32_t size = size_[f];
    Fetch fe{t, 0, Src::fs, prefetch, -1, true, {}};
    if (waiter) fe.waiters.push_back(*waiter);
    double done = 0;
    if (x.ssd.contains(f)) {
        fe.src = Src::ssd;
        done = x.ssd_dev.reserve(t, size / cfg_.ssd_read_bandwidth) + cfg_.ssd_latency_s;
    } else {
        int h = peers() ? home_[f] : -1;
        bool to_peer = false;
        if (h >= 0 && h != static_cast<int>(n)) {
            peer::SourceRate& link = links_[uint64_t{n} * nodes_ + h];
            to_peer = peer::choose_source(
                          {link.seconds_per_file(), link.inflight(), cfg_.server_threads},
                          {x.backing_rate.seconds_per_file(), x.backing_rate.inflight(),
                           cfg_.fetch_threads}) == peer::Choice::peer;
        }
        if (to_peer) {
            // The home answers from RAM, from a fetch of its own already on
            // the way, or reads the file itself (SSD, else the shared file
            // system: serve_peer never asks a third node).
            Node& hx = node_[h];
            double ready = t;
            if (auto it = hx.inflight.find(f); it != hx.inflight.end()) {
                ready = it->second.done;
                fe.measured = false;
            } else if (!hx.ram.holds(f)) {
                fetch(h, f, t, false, std::nullopt);
                ready = hx.inflight.at(f).done;
                fe.measured = false;
            }
            const double xfer = size / cfg_.net_bandwidth;
            double start = std::max({ready, hx.net_out.free_at, x.net_in.free_at});
            hx.net_out.free_at = x.net_in.free_at = start + xfer;
            done = start + xfer + cfg_.net_latency_s + cfg_.peer_file_cost_s;
            fe.src = Src::peer;
            fe.home = h;
            links_[uint64_t{n} * nodes_ + h].begin();
            EpochResult& e = stats();
            e.peer_bytes += size;
            ++e.peer_files;
        } else {
            done = fs_read(n, size, t);
            x.backing_rate.begin();
        }
    }
    fe.done = done;
    if (prefetch) {
        ++x.prefetching;
        x.inflight_bytes += size;
    }
    x.inflight.emplace(f, std::move(fe));
    push(done, fetch_done, n, f);
}

void Run::on_fetch_done(uint32_t n, uint32_t f, double t) {
    Node& x = node_[n];
    auto it = x.inflight.find(f);
    Fetch fe = std::move(it->second);
    x.inflight.erase(it);
    const uint32_t size = size_[f];
    if (fe.prefetch) {
        --x.prefetching;
        x.inflight_bytes -= size;
    }
    if (fe.src == Src::peer)
        links_[uint64_t{n} * nodes_ + fe.home].end(t - fe.issued, fe.measured);
    else if (fe.src == Src::fs)
        x.backing_rate.end(t - fe.issued);
    admit(n, f, !fe.waiters.empty());
    // Every file read from the shared file system goes to the SSD tier too,
    // while it has room (the tier never evicts).
    if (fe.src == Src::fs && cfg_.ssd > 0 && !x.ssd.contains(f) && x.ssd_bytes + size <= cfg_.ssd) {
        x.ssd_dev.reserve(t, size / cfg_.ssd_write_bandwidth);
        x.ssd.insert(f, 1);
        x.ssd_bytes += size;
    }
    for (uint32_t w : fe.waiters) read_done(w, ram_read(size, t, false));
    pump(n, t);
}

// Engine::admit(): into RAM if there is room; with pinned homes a file
// homed elsewhere only into room the node's own homed files will not need.
void Run::admit(uint32_t n, uint32_t f, bool opened_on_arrival) {
    Node& x = node_[n];
    if (x.ram.holds(f)) return;
    const uint32_t size = size_[f];
    const bool here = peers() && home_[f] == static_cast<int>(n);
    if (x.ram.bytes() + size + (here ? 0 : reserved(x)) > cfg_.ram) return;
    x.ram.add(f, due(n, f), here && x.pinned, opened_on_arrival);
    if (here) x.homed_held += size;
}

uint64_t Run::reserved(const Node& x) const {
    if (!peers() || !x.pinned) return 0;
    return x.here_bytes - std::min(x.here_bytes, x.homed_held);
}

// Where f is next due at node n, in files of the node's future from its
// frontier, as the scheduler ranks it (prefetch::due_of): the node's own
// next open, or, for a file homed here when homes are not pinned, the
// group's next open (GroupUses: the node's frontier stands for every
// node's, the ranks moving in step). Only the current and next epochs'
// orders count, as in the daemon. Returned as an absolute key.
uint64_t Run::due(uint32_t n, uint32_t f) const {
    const Node& x = node_[n];
    const uint64_t front = x.front;
    const uint32_t e0 = q_epoch(front == never ? 0 : front);
    uint64_t own = never, group = never;
    for (uint32_t e = e0; e <= e0 + 1 && e < E_ && own == never; ++e) {
        uint32_t k = orders_.first(e, f);
        if (k == none) continue;
        uint32_t r = k % world_;
        if (r / R_ != n) continue;
        uint64_t q = q_of(e, k / world_, r % R_);
        // Opened already: behind the rank's frontier, or ahead of it by
        // another worker of its loader.
        if (q < rank_q(r) || (ranks_[r].epoch == e && ranks_[r].opened[k / world_])) continue;
        own = q;
    }
    if (peers() && !x.pinned && home_[f] == static_cast<int>(n))
        for (uint32_t e = e0; e <= e0 + 1 && e < E_ && group == never; ++e) {
            uint32_t k = orders_.first(e, f);
            if (k == none) continue;
            uint64_t q = q_of(e, k / world_, 0);
            if (q >= front) group = q;
        }
    const uint64_t rel = prefetch::due_of(false, 0, 0, own == never ? never : own - std::min(own, front),
                                          group == never ? never : group - front);
    return rel == never ? never : front + rel;
}

// Engine::schedule_round(): walk the future from the frontier while the
// window (the files due soonest, up to --mem) has room and a fetch thread
// is free; make room by evicting what is due later than the file fetched,
// within the lead only (beyond it only files never needed again).
void Run::pump(uint32_t n, double t) {
    Node& x = node_[n];
    const uint64_t front = x.front; // kept at node_front(n) by opened() and end_epoch()
    if (front == never) return;
    if (x.qp < front) {
        x.qp = front;
        x.window_bytes = 0;
    }
    // The daemon knows each rank's current epoch's order and the next one's.
    uint32_t horizon = UINT32_MAX;
    for (uint32_t j = 0; j < R_; ++j)
        if (!ranks_[n * R_ + j].done) horizon = std::min(horizon, ranks_[n * R_ + j].epoch + 1);
    while (x.prefetching < cfg_.fetch_threads) {
        const uint32_t e = q_epoch(x.qp);
        if (e >= E_ || e > horizon) return;
        const uint32_t j = static_cast<uint32_t>(x.qp % R_);
        if (x.qp < rank_q(n * R_ + j)) { // that rank opened it out of order already
            ++x.qp;
            continue;
        }
        const uint32_t f = future(n, x.qp);
        const uint32_t size = size_[f];
        if (!tiered(f)) { // not in the window: read through when opened
            ++x.qp;
            continue;
        }
        if (x.window_bytes + size > cfg_.ram) return;
        if (x.ram.holds(f) || x.inflight.count(f)) {
            x.window_bytes += size;
            ++x.qp;
            continue;
        }
        const bool here = peers() && home_[f] == static_cast<int>(n);
        const uint64_t need = size + (here ? 0 : reserved(x));
        auto room = [&] {
            uint64_t used = x.ram.bytes() + x.inflight_bytes;
            return used >= cfg_.ram ? 0 : cfg_.ram - used;
        };
        if (room() < need) {
            const uint64_t limit = prefetch::evict_beyond(x.qp - front, lead_);
            while (room() < need) {
                auto [key, v] = x.ram.victim([&](uint32_t g) { return due(n, g); });
                if (v == UINT32_MAX) break;
                const uint64_t rel = key == never ? never : key - std::min(key, front);
                if (rel <= limit) break;
                bool unopened = false;
                uint32_t freed = x.ram.evict(v, &unopened);
                ++stats().evictions;
                if (unopened) ++stats().evicted_unopened;
                if (peers() && home_[v] == static_cast<int>(n))
                    x.homed_held -= std::min<uint64_t>(x.homed_held, freed);
            }
            if (room() < need) return;
        }
        x.window_bytes += size;
        ++x.qp;
        fetch(n, f, t, true, std::nullopt);
    }
}

// Engine::plan_homes(): each file's home is the node whose rank opens it
// first in the job's first epoch; a file no rank opens then keeps its
// hash home. Then make_homes(): whether the homes pin their files.
void Run::place_homes() {
    const uint32_t n = static_cast<uint32_t>(size_.size());
    home_.assign(n, 0);
    uint64_t dataset = 0;
    for (uint32_t f = 0; f < n; ++f) {
        if (!tiered(f)) continue; // make_homes(): untiered files have no home
        uint32_t k = orders_.first(0, f);
        home_[f] = k == none ? peer::hash_home(f, static_cast<int>(nodes_))
                             : static_cast<int>((k % world_) / R_);
        node_[home_[f]].here_bytes += size_[f];
        dataset += size_[f];
    }
    const uint64_t group_mem = cfg_.ram * nodes_;
    for (Node& x : node_) {
        x.pinned = prefetch::homes_pinned(group_mem, dataset, cfg_.ram, x.here_bytes);
        result_.pinned_nodes += x.pinned;
        result_.max_here_bytes = std::max(result_.max_here_bytes, x.here_bytes);
    }
    for (uint32_t f = 0; f < n; ++f)
        if (tiered(f) && !node_[home_[f]].pinned) node_[home_[f]].homed.push_back(f);
    links_ = std::make_unique<peer::SourceRate[]>(uint64_t{nodes_} * nodes_);
}

ScenarioResult Run::run() {
    auto wall = std::chrono::steady_clock::now();
    result_.scenario = sc_;
    L_ = orders_.positions();
    max_file_ = cfg_.ram / 16; // EngineOptions::max_file's default
    if (L_ == 0) return result_; // check_job() refuses it
    E_ = cfg_.job.epochs;
    S_ = std::max<uint32_t>(cfg_.job.num_workers, 1);
    B_ = (L_ + cfg_.job.batch_size - 1) / cfg_.job.batch_size;
    result_.epochs.assign(E_, {});
    finished_.assign(E_, 0);
    boundary_.assign(E_, 0);
    opens_total_ = uint64_t{L_} * world_ * E_;
    lead_ = prefetch::lead_files(prefetch::loader_in_flight(cfg_.job.num_workers,
                                                            cfg_.job.prefetch_factor,
                                                            cfg_.job.batch_size, R_),
                                 cfg_.fetch_threads);
    node_ = std::vector<Node>(nodes_);
    for (Node& x : node_) x.ram.set_sizes(size_.data());
    if (sc_ == Scenario::direct && cfg_.page_cache > 0) {
        if (cfg_.page_cache_shared)
            shared_page_cache_ = std::make_unique<Lru>(cfg_.page_cache);
        else
            for (Node& x : node_) x.page_cache = std::make_unique<Lru>(cfg_.page_cache);
    }
    cores_.assign(cfg_.cores_shared ? 1 : nodes_, CorePool(cfg_.cores));
    ranks_.assign(world_, {});
    for (Rank& k : ranks_) {
        k.opened.assign(L_, 0);
        k.ready.assign(B_, 0);
    }
    workers_.assign(uint64_t{world_} * S_, {});
    orders_.build(1);
    if (peers()) place_homes();
    for (uint32_t r = 0; r < world_; ++r) start_epoch(r, cfg_.job_start_s);
    if (clairfs()) // clairfs prefetches from the registration on
        for (uint32_t n = 0; n < nodes_; ++n) pump(n, 0);
    if (cfg_.lockstep) ready_count_.assign(B_, 0);

    while (!events_.empty()) {
        Event ev = events_.top();
        events_.pop();
        // Progress a person can watch on a long run (a few million events
        // a second).
        if ((++result_.events & ((1u << 22) - 1)) == 0 && progress_)
            progress_(sc_, global_epoch_, double(opens_done_) / double(opens_total_));
        switch (ev.kind) {
        case worker_go: worker_next(ev.a, ev.t); break;
        case sample_done: on_sample_done(ev.a, ev.t); break;
        case fetch_done: on_fetch_done(ev.a, ev.b, ev.t); break;
        case step_done: on_step_done(ev.a, ev.t); break;
        case global_step_done:
            global_stepping_ = false;
            for (uint32_t r = 0; r < world_; ++r) on_step_done(r, ev.t);
            if (++global_step_ == B_) {
                global_step_ = 0;
                std::fill(ready_count_.begin(), ready_count_.end(), 0);
            } else {
                try_global_step(ev.t);
            }
            break;
        }
    }
    result_.wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    return result_;
}

} // namespace

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
