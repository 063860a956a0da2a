// SPDX-License-Identifier: MIT
// clairfs on each node in `clairfs simulate`: the daemon's scheduler with
// its window, fetches, admission, eviction and homes.
#include "clairfs/peer/group.hpp"
#include "clairfs/prefetch/cache_rules.hpp"
#include "run.hpp"

namespace clairfs::sim {

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
    const int h = peers() ? home_[f] : -1;
    if (x.ssd.contains(f)) {
        fe.src = Src::ssd;
        done = x.ssd_dev.reserve(t, size / cfg_.node.ssd_read_bandwidth) + cfg_.node.ssd_latency_s;
    } else if (h >= 0 && h != static_cast<int>(n) && peer_first(n, h)) {
        done = fetch_from_peer(n, h, f, t, fe);
    } else {
        done = fs_read(n, size, t);
        x.backing_rate.begin();
    }
    fe.done = done;
    if (prefetch) {
        ++x.prefetching;
        x.inflight_bytes += size;
    }
    x.inflight.emplace(f, std::move(fe));
    push(done, fetch_done, n, f);
}

// choose_source(): whether the file's home is expected to answer before
// the shared file system.
bool Run::peer_first(uint32_t n, int home) const {
    const Node& x = node_[n];
    const peer::SourceRate& link = links_[uint64_t{n} * nodes_ + home];
    return peer::choose_source({link.seconds_per_file(), link.inflight(),
                                cfg_.network.server_threads},
                               {x.backing_rate.seconds_per_file(), x.backing_rate.inflight(),
                                cfg_.node.fetch_threads}) == peer::Choice::peer;
}

// The home answers from RAM, from a fetch of its own already on the way,
// or reads the file itself (SSD, else the shared file system: serve_peer
// never asks a third node). Returns when the bytes are here.
double Run::fetch_from_peer(uint32_t n, int h, uint32_t f, double t, Fetch& fe) {
    Node& x = node_[n];
    Node& hx = node_[h];
    const uint32_t size = size_[f];
    double ready = t;
    if (auto it = hx.inflight.find(f); it != hx.inflight.end()) {
        ready = it->second.done;
        fe.measured = false;
    } else if (!hx.ram.holds(f)) {
        fetch(h, f, t, false, std::nullopt);
        ready = hx.inflight.at(f).done;
        fe.measured = false;
    }
    const double xfer = size / cfg_.network.bandwidth;
    double start = std::max({ready, hx.net_out.free_at, x.net_in.free_at});
    hx.net_out.free_at = x.net_in.free_at = start + xfer;
    fe.src = Src::peer;
    fe.home = h;
    links_[uint64_t{n} * nodes_ + h].begin();
    EpochResult& e = stats();
    e.peer_bytes += size;
    ++e.peer_files;
    return start + xfer + cfg_.network.latency_s + cfg_.network.peer_file_cost_s;
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
    if (fe.src == Src::fs && cfg_.node.ssd > 0 && !x.ssd.contains(f) &&
        x.ssd_bytes + size <= cfg_.node.ssd) {
        x.ssd_dev.reserve(t, size / cfg_.node.ssd_write_bandwidth);
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
    if (x.ram.bytes() + size + (here ? 0 : reserved(x)) > cfg_.node.ram) return;
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

// Scheduler::round(): walk the future from the frontier while the
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
    const uint32_t horizon = known_epochs(n);
    while (x.prefetching < cfg_.node.fetch_threads) {
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
        if (x.window_bytes + size > cfg_.node.ram) return;
        if (x.ram.holds(f) || x.inflight.count(f)) {
            x.window_bytes += size;
            ++x.qp;
            continue;
        }
        const bool here = peers() && home_[f] == static_cast<int>(n);
        if (!make_room(n, size + (here ? 0 : reserved(x)))) return;
        x.window_bytes += size;
        ++x.qp;
        fetch(n, f, t, true, std::nullopt);
    }
}

// The daemon knows each rank's current epoch's order and the next one's:
// the last epoch all of the node's ranks still at work have.
uint32_t Run::known_epochs(uint32_t n) const {
    uint32_t horizon = UINT32_MAX;
    for (uint32_t j = 0; j < R_; ++j)
        if (!ranks_[n * R_ + j].done) horizon = std::min(horizon, ranks_[n * R_ + j].epoch + 1);
    return horizon;
}

// RAM neither held nor spoken for by a prefetch in flight.
uint64_t Run::free_ram(const Node& x) const {
    uint64_t used = x.ram.bytes() + x.inflight_bytes;
    return used >= cfg_.node.ram ? 0 : cfg_.node.ram - used;
}

// Room for `need` bytes for the file at the node's position qp: evicts
// what is due later than it, within the lead only (beyond it only files
// never needed again). False if there is not room enough.
bool Run::make_room(uint32_t n, uint64_t need) {
    Node& x = node_[n];
    if (free_ram(x) >= need) return true;
    const uint64_t front = x.front;
    const uint64_t limit = prefetch::evict_beyond(x.qp - front, lead_);
    while (free_ram(x) < need) {
        auto [key, v] = x.ram.victim([&](uint32_t g) { return due(n, g); });
        if (v == UINT32_MAX) break;
        const uint64_t rel = key == never ? never : key - std::min(key, front);
        if (rel <= limit) break;
        evict(n, v);
    }
    return free_ram(x) >= need;
}

void Run::evict(uint32_t n, uint32_t f) {
    Node& x = node_[n];
    bool unopened = false;
    uint32_t freed = x.ram.evict(f, &unopened);
    ++stats().evictions;
    if (unopened) ++stats().evicted_unopened;
    if (peers() && home_[f] == static_cast<int>(n))
        x.homed_held -= std::min<uint64_t>(x.homed_held, freed);
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
    const uint64_t group_mem = cfg_.node.ram * nodes_;
    for (Node& x : node_) {
        x.pinned = prefetch::homes_pinned(group_mem, dataset, cfg_.node.ram, x.here_bytes);
        result_.pinned_nodes += x.pinned;
        result_.max_here_bytes = std::max(result_.max_here_bytes, x.here_bytes);
    }
    for (uint32_t f = 0; f < n; ++f)
        if (tiered(f) && !node_[home_[f]].pinned) node_[home_[f]].homed.push_back(f);
    links_ = std::make_unique<peer::SourceRate[]>(uint64_t{nodes_} * nodes_);
}

} // namespace clairfs::sim
