// SPDX-License-Identifier: MIT
#include "clairfs/prefetch/engine.hpp"

#include "active_job.hpp"
#include "clairfs/cache/ssd_tier.hpp"
#include "clairfs/config/memory_budget.hpp"
#include "clairfs/layout/dataset.hpp"
#include "clairfs/log.hpp"
#include "clairfs/order/samplers.hpp"
#include "clairfs/peer/peers.hpp"
#include "clairfs/prefetch/cache_rules.hpp"
#include "clairfs/sys/contained.hpp"
#include "clairfs/sys/join_within.hpp"
#include "group_uses.hpp"
#include "ssd_writer.hpp"

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include <sys/stat.h>

namespace clairfs::prefetch {
namespace {

// Enough queued prefetches to keep every fetch thread busy across a
// scheduler round, few enough that a withdrawn registration wastes little.
size_t queue_depth(unsigned threads) {
    return size_t{threads} * 4;
}

} // namespace

EngineOptions Engine::split_budget(const index::Index& idx, EngineOptions opt) {
    if (opt.max_file == 0) opt.max_file = opt.mem / 16;
    opt.chunk_mem = 0;
    if (opt.mem == 0 || opt.chunk_size == 0) return opt;
    uint64_t whole = 0, large = 0;
    for (index::NodeId id = 0; id < idx.size(); ++id) {
        const index::Node& n = idx.node(id);
        if (!S_ISREG(n.mode)) continue;
        (n.size > opt.max_file ? large : whole) += n.size;
    }
    if (large == 0) return opt;
    auto share = static_cast<uint64_t>(static_cast<double>(opt.mem) * static_cast<double>(large) /
                                       static_cast<double>(large + whole));
    // At least room to read one file ahead (8 chunks, or the large files
    // whole if less), but never more than half for that floor: one stray
    // archive beside a million JPEGs must not halve the JPEGs' RAM.
    uint64_t floor = std::min({large, uint64_t{8} * opt.chunk_size, opt.mem / 2});
    uint64_t chunk_mem = whole == 0 ? opt.mem : std::max(share, floor);
    if (chunk_mem < uint64_t{4} * opt.chunk_size) return opt; // too small to read ahead into
    opt.chunk_mem = chunk_mem;
    opt.mem -= chunk_mem;
    return opt;
}

Engine::Engine(const index::Index& idx, int backing_fd, EngineOptions opt)
    : index_(idx), opt_(split_budget(idx, opt)), backing_(idx, backing_fd),
      // Room for every FUSE thread plus as many stuck in hung reads.
      backing_calls_(opt.io_timeout, 2 * std::max(opt.fuse_threads, 1u)), ram_(opt_.mem, idx.size()),
      in_window_(idx.size(), 0), window_index_(idx.size(), 0), tier_size_(idx.size(), not_tiered),
      last_open_(std::make_unique<std::atomic<uint64_t>[]>(idx.size())),
      pushed_at_(std::make_unique<uint64_t[]>(idx.size())) {
    if (opt_.chunk_mem > 0) {
        ChunkOptions c;
        c.ram = opt_.chunk_mem;
        c.io_timeout = opt_.io_timeout;
        chunks_ = std::make_unique<ChunkStore>(ChunkMap(idx, opt_.max_file, opt_.chunk_size),
                                               backing_, idx, c);
    }
    handover_.store(opt_.handover && opt_.mem > 0, std::memory_order_relaxed);
    if ((opt_.open_push || opt_.watch_opens) && opt_.mem > 0)
        open_seen_ = std::make_unique<std::atomic<bool>[]>(idx.size()); // all false
    if (opt_.watch_opens && opt_.mem > 0) {
        watch_state_ = std::make_unique<std::atomic<uint8_t>[]>(idx.size());   // all 0
        push_on_land_ = std::make_unique<std::atomic<bool>[]>(idx.size()); // all false
    }
    if (opt_.one_copy != EngineOptions::OneCopy::never && opt_.mem > 0 && !opt_.handover) {
        open_count_ = std::make_unique<std::atomic<uint32_t>[]>(idx.size()); // all 0
        dropping_.store(opt_.one_copy == EngineOptions::OneCopy::always);
    }
    for (index::NodeId id = 0; id < idx.size(); ++id) {
        const index::Node& n = idx.node(id);
        if (S_ISREG(n.mode) && tiered(n) && n.size < not_tiered)
            tier_size_[id] = static_cast<uint32_t>(n.size);
    }
}

void Engine::attach_ssd(std::unique_ptr<cache::Tier> ssd) {
    ssd_ = std::move(ssd);
    // A few hundred files' worth in flight covers a burst of fetches
    // without pinning much beyond what the RAM tier holds anyway.
    if (ssd_)
        writer_ = std::make_unique<SsdWriter>(*ssd_, std::max<uint64_t>(opt_.mem / 8, 64 << 20));
}

void Engine::attach_peers(std::unique_ptr<peer::Peers> peers) {
    peers_ = std::move(peers);
    if (!peers_) return;
    handover_.store(false, std::memory_order_relaxed); // peers are served from the tier
    std::vector<int16_t> of(index_.size(), -1);
    for (index::NodeId id = 0; id < index_.size(); ++id)
        if (tier_size_[id] != not_tiered) of[id] = static_cast<int16_t>(peers_->home_of(id));
    homes_.store(std::make_shared<const Homes>(make_homes(std::move(of), HomePlacement::hash)));
    peers_->set_server([this](index::NodeId id) { return serve_peer(id); });
    peers_->set_note_handler([this] { check_agreement(); });
    peers_->set_summary([this] { return summary_for_peers(); });
}

Engine::Homes Engine::make_homes(std::vector<int16_t> of, HomePlacement by) const {
    Homes h;
    h.by = by;
    h.here.assign(index_.size(), 0);
    uint64_t dataset = 0;
    for (index::NodeId id = 0; id < index_.size(); ++id) {
        if (tier_size_[id] == not_tiered) continue;
        dataset += tier_size_[id];
        if (of[id] == peers_->self()) {
            h.here[id] = 1;
            h.here_bytes += tier_size_[id];
            ++h.here_files;
        }
    }
    h.digest = XXH3_64bits(of.data(), of.size() * sizeof(of[0]));
    h.of = std::move(of);
    uint64_t group_mem = 0;
    for (const auto& m : peers_->members()) group_mem += m.mem;
    h.pin = homes_pinned(group_mem, dataset, opt_.mem, h.here_bytes);
    return h;
}

// A DistributedSampler job that every member registered alike, with ranks
// that are each on one node: each file's home becomes the node whose rank
// opens it first, in the job's first epoch, so that epoch reads every file
// from the shared file system where it is needed anyway, and no node asks
// another for anything until the second.
void Engine::plan_homes(const std::string& job_id,
                        const std::map<int, std::vector<uint32_t>>& ranks) {
    auto cur = homes_.load();
    if (!cur || cur->by == HomePlacement::schedule) return;
    std::shared_ptr<const Active> job;
    for (const auto& j : *jobs())
        if (j->id == job_id) job = j;
    // A job over byte ranges has its files held by chunk, which peers do not fetch.
    if (!job || job->loaders.size() != 1 || job->loaders.front().ranges) return;
    const plan::Job& pj = *job->loaders.front().job;
    const order::JobSpec& spec = pj.spec;
    if (spec.framework != order::Framework::pytorch ||
        spec.sampler != order::SamplerKind::distributed || spec.world_size == 0 ||
        spec.world_size > 32768)
        return;
    std::vector<int16_t> node_of_rank(spec.world_size, -1);
    for (const auto& [node, rs] : ranks)
        for (uint32_t r : rs) {
            if (r >= spec.world_size || node_of_rank[r] >= 0) return; // out of range, or twice
            node_of_rank[r] = static_cast<int16_t>(node);
        }
    if (std::ranges::any_of(node_of_rank, [](int16_t n) { return n < 0; })) return;
    std::vector<int16_t> of = cur->of; // files outside the job keep their hash home
    const std::vector<uint32_t> first = first_opened(pj, index_, spec.start_epoch);
    for (index::NodeId id = 0; id < of.size(); ++id)
        if (of[id] >= 0 && first[id] != UINT32_MAX) // tiered, and opened that epoch
            of[id] = node_of_rank[first[id] % spec.world_size];
    auto placed = make_homes(std::move(of), HomePlacement::schedule);
    placed.job = job_id;
    auto next = std::make_shared<const Homes>(std::move(placed));
    // Every node switches on the same notes, so the homes stay the same on
    // all of them; a file read before the switch may have to be read again
    // by its new home (the scheduler holds prefetches until the nodes agree,
    // so normally none was).
    homes_.store(next);
    std::vector<index::NodeId> held;
    ram_.held(held);
    uint64_t here_held = 0;
    for (index::NodeId h : held)
        if (next->here[h]) here_held += tier_size_[h];
    homed_held_.store(here_held);
    LOG_INFO("job %s: each file's home is now the node that reads it first (%llu files here)",
             job_id.c_str(), static_cast<unsigned long long>(next->here_files));
}

// On the scheduler thread: the placements check_agreement() queued.
void Engine::place_due_homes() {
    std::map<std::string, std::map<int, std::vector<uint32_t>>> due;
    {
        std::lock_guard lk(agree_mu_);
        due.swap(homes_due_);
    }
    for (const auto& [id, by_node] : due) plan_homes(id, by_node);
}

int Engine::home_of(index::NodeId id) const {
    auto h = homes_.load();
    return h && id < h->of.size() && h->of[id] >= 0 ? h->of[id] : peers_->home_of(id);
}

// What `clairfs status --cluster` shows of this node, from its status.
std::string Engine::summary_for_peers() const {
    nlohmann::json st;
    status(st);
    nlohmann::json s;
    for (const char* k : {"mode", "match_rate", "stall_seconds"})
        if (st.contains(k)) s[k] = st[k];
    const uint64_t zero = 0;
    s["backing_files"] = st["backing"].value("files", zero);
    s["backing_bytes"] = st["backing"].value("bytes", zero);
    s["ram_hits"] = st["ram"].value("hits", zero);
    s["ram_misses"] = st["ram"].value("misses", zero);
    s["ram_bytes"] = st["ram"].value("bytes", zero);
    const auto& p = st["peers"];
    for (const char* k : {"files_in", "bytes_in", "files_out", "bytes_out", "errors", "alive"})
        s[std::string("peer_") + k] = p.value(k, zero);
    return s.dump();
}

void Engine::share_registrations(std::map<std::string, std::string> keys,
                                 std::map<std::string, std::vector<uint32_t>> ranks) {
    if (!peers_) return;
    nlohmann::json note;
    note["jobs"] = nlohmann::json::object();
    for (const auto& [id, k] : keys) note["jobs"][id] = k;
    note["ranks"] = ranks;
    {
        std::lock_guard lk(agree_mu_);
        own_keys_ = std::move(keys);
        own_ranks_ = std::move(ranks);
    }
    hold_until_.store(std::chrono::steady_clock::now() + agreement_grace);
    peers_->share_note(note.dump());
    check_agreement();
}

namespace {

// The keys two registrations of one job differ in, as "seed 43 there, 42
// here"; at most three, then "...".
std::string key_differences(const std::string& theirs, const std::string& ours) {
    nlohmann::json a, b;
    try {
        a = nlohmann::json::parse(theirs);
        b = nlohmann::json::parse(ours);
    } catch (const nlohmann::json::exception&) {
        return "unreadable keys";
    }
    if (!a.is_array() || !b.is_array() || a.size() != b.size())
        return std::to_string(a.size()) + " loaders there, " + std::to_string(b.size()) + " here";
    std::string out;
    int n = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        for (auto it = b[i].begin(); it != b[i].end(); ++it) {
            const auto& mine = it.value();
            auto there = a[i].contains(it.key()) ? a[i][it.key()] : nlohmann::json();
            if (there == mine) continue;
            if (++n > 3) return out + ", ...";
            if (!out.empty()) out += ", ";
            out += it.key() + " " + there.dump() + " there, " + mine.dump() + " here";
        }
    }
    return out.empty() ? "keys differ" : out;
}

} // namespace

void Engine::check_agreement() {
    if (!peers_) return;
    std::map<std::string, std::string> own;
    std::map<std::string, std::vector<uint32_t>> own_ranks;
    {
        std::lock_guard lk(agree_mu_);
        own = own_keys_;
        own_ranks = own_ranks_;
    }
    std::map<int, std::string> notes = peers_->notes();
    std::map<std::string, std::string> broken; // job id -> why
    // Per job: each node's ranks, for the nodes that registered it alike.
    std::map<std::string, std::map<int, std::vector<uint32_t>>> placed;
    for (const auto& [id, r] : own_ranks) placed[id][peers_->self()] = r;
    size_t agreeing = 0;
    for (const auto& [rank, text] : notes) {
        nlohmann::json theirs, their_ranks;
        try {
            auto j = nlohmann::json::parse(text);
            theirs = j.at("jobs");
            their_ranks = j.value("ranks", nlohmann::json::object());
        } catch (const nlohmann::json::exception&) {
            continue;
        }
        for (const auto& [id, keys] : own) {
            if (theirs.contains(id) && theirs[id] == keys && their_ranks.contains(id)) {
                try {
                    placed[id][rank] = their_ranks[id].get<std::vector<uint32_t>>();
                } catch (const nlohmann::json::exception&) {
                }
            }
        }
        bool all_same = !own.empty();
        for (const auto& [id, keys] : own) {
            if (!theirs.contains(id) || !theirs[id].is_string()) {
                all_same = false;
                continue;
            }
            const std::string& other = theirs[id].get_ref<const std::string&>();
            if (other == keys) continue;
            all_same = false;
            if (!broken.contains(id))
                broken[id] = "node " + std::to_string(rank) + " registered job '" + id +
                             "' with other keys (" + key_differences(other, keys) + ")";
        }
        agreeing += all_same;
    }
    // Every member alive registered the job alike: its files are placed,
    // on the scheduler thread (plan_homes draws the whole epoch's order,
    // ~0.5 s at 14M samples, which would delay this links thread's pings).
    // Queued before the hold below is lifted, so the round it lets run
    // places the homes first; once placed, later notes queue nothing.
    std::map<std::string, std::map<int, std::vector<uint32_t>>> due;
    auto cur = homes_.load();
    if (broken.empty() && cur && cur->by != HomePlacement::schedule)
        for (auto& [id, by_node] : placed)
            if (by_node.size() == static_cast<size_t>(peers_->size()))
                due.emplace(id, std::move(by_node));
    std::string line;
    if (!broken.empty())
        line = broken.begin()->second;
    else if (!own.empty())
        line = "agreed with " + std::to_string(agreeing) + " of " +
               std::to_string(peers_->size() - 1) + " peers";
    {
        std::lock_guard lk(agree_mu_);
        agreement_ = line;
        for (auto& [id, by_node] : due) homes_due_[id] = std::move(by_node);
    }
    // Prefetching waits (agreement_grace at most) until every live peer has
    // registered this node's jobs alike: until then the homes may move.
    size_t live = 0;
    for (const auto& m : peers_->members()) live += peers_->usable(m.rank);
    // A job the scheduler already sees but this node has not shared yet
    // (the controller activates a job, then shares it) is not agreed on:
    // a peer's note judged in that moment against the older registrations
    // once lifted the hold, and a round prefetched by the hash homes, whose
    // nodes read from the backing store files the schedule gives others
    // (tests/prefetch/test_peers_mpi.py: a node read 162 files, not 160).
    const auto active = jobs();
    const bool unshared = std::ranges::any_of(
        *active, [&](const std::shared_ptr<Active>& j) { return !own.contains(j->id); });
    bool pending = unshared || (!own.empty() && broken.empty() && agreeing < live);
    if ((agreement_pending_.exchange(pending) && !pending) || !due.empty()) {
        {
            std::lock_guard lk(wake_mu_);
            force_round_ = true;
            wake_ = true;
        }
        wake_cv_.notify_one();
    }
    if (broken.empty()) return;
    // Every node sees the same notes, so each puts its own copy of the job
    // in fallback: the group never prefetches by two different orders.
    for (const auto& j : *jobs()) {
        auto it = broken.find(j->id);
        if (it == broken.end()) continue;
        for (auto& l : j->loaders)
            if (l.tracker->mode() == track::Mode::clairvoyant) l.tracker->abandon(it->second);
    }
}

bool Engine::peers_settled() const {
    return !peers_ || peers_->settled();
}

peer::ServeResult Engine::serve_peer(index::NodeId id) {
    if (!index_.contains(id) || tier_size_[id] == not_tiered) return {-EINVAL, nullptr};
    if (cache::BlobRef b = ram_.peek(id)) return {0, std::move(b), true};
    // Read on this server thread, never by asking another peer: a pool
    // thread may be waiting on the very peer this request came from, and
    // two daemons whose fetch threads all wait on each other would stall
    // until --io-timeout (measured: 60 s stalls at an epoch boundary).
    FetchResult r = pool_->run_here(id, [this](index::NodeId f, bool) { return read_local(f); });
    return {r.error, std::move(r.blob), r.from != Source::backing};
}

void Engine::start() {
    if (writer_) writer_->start();
    pool_ = std::make_unique<FetchPool>(
        [this](index::NodeId id, bool demanded) { return read_whole(id, demanded); },
        opt_.fetch_threads,
        queue_depth(opt_.fetch_threads),
        [this](index::NodeId id, const FetchResult& r, bool demanded) { admit(id, r, demanded); },
        opt_.io_timeout);
    if (chunks_) {
        if (drop_range_ && opt_.drop_behind != EngineOptions::When::never) {
            chunks_->set_dropper(drop_range_);
            chunks_->set_drop_behind(opt_.drop_behind == EngineOptions::When::always);
        }
        chunks_->start();
    }
    scheduler_ = std::thread([this] {
        schedule_loop();
        scheduler_done_.store(true, std::memory_order_release);
    });
    stager_ = std::thread([this] { stage_loop(); });
    if (peers_) peers_->start();
    if (opt_.stage) stage();
}

Engine::~Engine() {
    stop();
}

void Engine::stop() {
    stop_within({});
}

bool Engine::stop_within(std::chrono::milliseconds bound) {
    {
        std::lock_guard lk(stage_mu_);
        stage_stopping_ = true;
    }
    stage_cv_.notify_all();
    if (stager_.joinable()) stager_.join();
    {
        std::lock_guard lk(wake_mu_);
        stopping_ = true;
    }
    wake_cv_.notify_all();
    // The scheduler pushes into and drops from the kernel's page cache. The
    // session's loop has ended by now (the daemon stops the engine before
    // it unmounts), so a push or a drop waiting for a page that a READ in
    // flight has locked waits until the unmount aborts that READ: after
    // this. Bounded like the fetches, then left behind.
    if (!sys::join_within(scheduler_, scheduler_done_, bound)) {
        LOG_WARN("a page-cache push or drop still waits after %.1f s (for a READ the ended "
                 "session will not answer); exiting without it",
                 static_cast<double>(bound.count()) / 1000);
        return false;
    }
    // Before the pool: a fetch waiting on a peer ends now (it reads the
    // backing store instead), and the peers stop asking this daemon.
    if (peers_) peers_->stop();
    // Joins the fetch threads before the tiers they admit into go; a fetch
    // hung in the backing store would hold the unmount for ever.
    if (pool_ && !pool_->stop(bound)) {
        LOG_WARN("fetches still hang in the backing store after %.1f s; exiting without them",
                 static_cast<double>(bound.count()) / 1000);
        return false;
    }
    pool_.reset();
    if (chunks_ && !chunks_->stop(bound)) {
        LOG_WARN("chunk fetches, SSD writes or page-cache drops still hang after %.1f s; "
                 "exiting without them",
                 static_cast<double>(bound.count()) / 1000);
        return false;
    }
    // Finishes the SSD writes queued, before the SSD tier goes.
    if (writer_ && !writer_->stop(bound)) {
        LOG_WARN("SSD writes still hang after %.1f s; exiting without them",
                 static_cast<double>(bound.count()) / 1000);
        return false;
    }
    writer_.reset();
    return true;
}

void Engine::release_for_exit() {
    if (auto* ssd = dynamic_cast<cache::SsdTier*>(ssd_.get())) ssd->release_lock();
}

void Engine::note_io_timeout(const index::Node& n) {
    std::string path;
    index_.relative_path(index_.id_of(n), path);
    LOG_ERROR("%s: a backing-store read has not completed in %.1f s (--io-timeout); answered EIO",
              path.c_str(), static_cast<double>(opt_.io_timeout.count()) / 1000);
}

// On a fetch thread: the SSD tier when it holds the file (a promotion to
// RAM), else the backing store. A copy the SSD fails to return (an I/O
// error, a checksum mismatch) is dropped by the tier and read again from
// the backing store: a bad SSD costs time, never bytes.
FetchResult Engine::read_whole(index::NodeId id, bool demanded) {
    if (FetchResult r = read_ssd(id); r.blob) return r;
    // Its home's copy, when the home is another daemon that is alive. A
    // home that fails, dies or sends bytes that fail their checksum costs
    // this one fetch its wait; the file then comes from the backing store.
    if (peers_) {
        int home = home_of(id);
        if (home != peers_->self() && peers_->usable(home)) {
            const peer::SourceRate& link = peers_->rate(home);
            peer::Choice c = peer::choose_source(
                {link.seconds_per_file(), link.inflight(), peers_->server_threads()},
                {backing_rate_.seconds_per_file(), backing_rate_.inflight(), opt_.fetch_threads});
            if (c == peer::Choice::peer) {
                peer::PeerReply p = peers_->fetch(home, id, index_.node(id).size, demanded);
                if (p.error == 0) return {0, std::move(p.blob), Source::peer};
            } else {
                chose_backing_.fetch_add(1, std::memory_order_relaxed);
            }
        }
    }
    return read_backing(id);
}

// Read from the backing store a moment ago and still on its way to the SSD,
// or held by the SSD tier; an empty result otherwise. The writer is asked
// before the tier: it publishes there before it lets go, so one of the two
// looks finds it.
FetchResult Engine::read_ssd(index::NodeId id) {
    if (writer_) {
        if (cache::BlobRef b = writer_->peek(id)) return {0, std::move(b), Source::ssd};
    }
    if (ssd_ && ssd_->contains(id)) {
        if (cache::BlobRef b = ssd_->get(id)) return {0, std::move(b), Source::ssd};
    }
    return {0, nullptr, Source::ssd};
}

FetchResult Engine::read_local(index::NodeId id) {
    if (FetchResult r = read_ssd(id); r.blob) return r;
    return read_backing(id);
}

FetchResult Engine::read_backing(index::NodeId id) {
    FetchResult r;
    backing_rate_.begin();
    auto t0 = std::chrono::steady_clock::now();
    r.error = backing_.read_whole(id, r.blob);
    backing_rate_.end(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                      r.error == 0);
    return r;
}

bool Engine::tiered(const index::Node& n) const {
    return opt_.mem > 0 && n.size <= opt_.max_file;
}

std::shared_ptr<const Engine::Jobs> Engine::jobs() const {
    std::lock_guard lk(job_mu_);
    return jobs_;
}

cache::BlobRef Engine::opened(index::NodeId id, uint32_t pid) {
    auto jobs = this->jobs();
    bool registered = !jobs->empty();
    if (!registered && observe_) {
        // Its process and parent, read while the thread is alive: a job
        // detected after its workers exited binds their loader process
        // through them (replay), and stays live while that runs.
        process_of(pid);
        // Looked at again under the lock activate() replays the observer's
        // queue under: this open is either queued before that replay or
        // routed to the job after it.
        std::lock_guard lk(observe_mu_);
        jobs = this->jobs();
        registered = !jobs->empty();
        if (!registered) observe_(id, pid);
    }
    if (drop_) {
        if (!read_any_.load(std::memory_order_relaxed))
            read_any_.store(true, std::memory_order_relaxed);
        // Unregistered, pages the kernel keeps are reads saved: nothing to log.
        if (registered) {
            std::lock_guard lk(drop_mu_);
            read_log_.emplace_back(id, std::chrono::steady_clock::now());
        }
    }
    if (registered) {
        // Following the jobs is an optimisation: if it fails, the open
        // still succeeds and the jobs are no longer predicted.
        track::Observation o;
        if (auto why = sys::contained("following an open",
                                      [&] { o = route_open(*jobs, id, pid); });
            !why.empty())
            for (const auto& j : *jobs)
                for (auto& l : j->loaders)
                    l.tracker->abandon("following the job failed inside clairfs (" + why + ")");
        // A file no job covers (a validation loader beside a detected
        // training one): detection may want it. Looked at again under the
        // lock activate() replays under, as above: a job that covers it may
        // have gone live meanwhile, and then the open is that job's.
        if (!o.matched && !o.deferred && observe_ &&
            std::ranges::none_of(*jobs, [&](const auto& j) { return j->covering(id); })) {
            std::lock_guard lk(observe_mu_);
            auto now = this->jobs();
            if (now == jobs || std::ranges::none_of(*now, [&](const auto& j) {
                    return j->covering(id);
                }))
                observe_(id, pid);
            else
                sys::contained("following an open", [&] { o = route_open(*now, id, pid); });
        }
        if (o.matched) {
            uint64_t n = matched_opens_.fetch_add(1, std::memory_order_relaxed) + 1;
            // Only when a round is due (Engine::round_due): woken by every
            // open, the scheduler cost the daemon a context switch per file
            // for rounds it then skipped.
            if (o.new_epoch || n >= round_at_.load(std::memory_order_relaxed)) wake_scheduler();
        }
    }
    const index::Node& node = index_.node(id);
    if (!tiered(node)) return nullptr;
    open_bytes_.fetch_add(node.size, std::memory_order_relaxed);
    last_open_[id].store(opens_.fetch_add(1, std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
    return ram_.get(id);
}

int Engine::bytes_of(index::NodeId id, cache::BlobRef& out) {
    if (ram_.kernel_lost(id, index_.node(id).size)) note_kernel_miss();
    if (cache::BlobRef b = ram_.peek(id)) {
        out = std::move(b);
        return 0;
    }
    FetchResult r = pool_->demand(id, [&] { return ram_.peek(id); });
    if (r.error) return r.error;
    out = std::move(r.blob);
    return 0;
}

// Runs on a fetch thread. A tier never evicts by itself, so this only keeps
// what fits: in clairvoyant mode the scheduler made room for what it
// prefetches by dropping what falls outside the window; otherwise the first
// files touched stay and later ones pass through (for a fresh random order
// every epoch, keeping a fixed set beats LRU, which would keep nothing).
//
// The SSD tier keeps every file read from the backing store while it has
// room, and never evicts: each epoch opens every file once, in a fresh
// order, so a fixed set of files is as good as any (N - C backing reads per
// epoch for a dataset of N bytes and C bytes of SSD), and it is the set a
// restarted job finds again.
void Engine::admit(index::NodeId id, const FetchResult& r, bool demanded) {
    if (r.error == 0) {
        auto homes = this->homes();
        if (homes && homes->pin && !homes->here[id]) {
            // With peers, while the group holds the dataset, a file from
            // elsewhere may not take the room the files homed here will
            // need: they are what the others ask for. (Short of that, the
            // scheduler's eviction by the group's next use decides.)
            cache::TierStats t = ram_.stats();
            uint64_t reserved = homes->here_bytes - std::min(homes->here_bytes, homed_held_.load());
            if (t.bytes + r.blob->size + reserved <= t.capacity) ram_.put(id, r.blob);
        } else {
            bool had = ram_.contains(id);
            if (ram_.put(id, r.blob) && !had && homes && homes->here[id])
                homed_held_.fetch_add(r.blob->size);
        }
        if (writer_ && r.from == Source::backing && !ssd_->contains(id))
            writer_->enqueue(id, r.blob);
        if (push_on_land_ && push_on_land_[id].exchange(false, std::memory_order_relaxed) &&
            !demanded) {
            {
                std::lock_guard lk(landed_mu_);
                to_push_.push_back(id);
            }
            wake_to_push();
        }
    }
    landed_.fetch_add(1, std::memory_order_release);
    // The last round found the prefetch queue full: room now.
    if (refill_wanted_.exchange(false, std::memory_order_relaxed)) wake_scheduler();
}

void Engine::wake_to_push() {
    {
        std::lock_guard lk(wake_mu_);
        wake_ = true;
        push_waiting_ = true;
    }
    wake_cv_.notify_one();
}

void Engine::wake_scheduler() {
    {
        std::lock_guard lk(wake_mu_);
        wake_ = true;
    }
    wake_cv_.notify_one();
}

// Hand-over (cache/ram_tier.hpp): a file read whole through the mount is
// in the kernel's page cache, which keeps it across opens (keep_cache), so
// the RAM tier's copy would be a second one, charged to the same memory.
// Released, not at the last READ: a READ's reply has not reached the page
// cache when the daemon sends it, and a concurrent READ of the same open
// still needs the bytes (it holds its own reference anyway).
void Engine::released(index::NodeId id, uint64_t served, OpenPush how) {
    // A READ: the kernel no longer held the file. None: it did.
    if (how == OpenPush::watched) learn_kept(served == 0);
    if (open_count_) {
        drop_if_last(id);
        return; // no hand-over beside it (EngineOptions::one_copy)
    }
    if (!handover_.load(std::memory_order_relaxed)) return;
    const index::Node& n = index_.node(id);
    if (!tiered(n) || served < n.size) return;
    ram_.hand_over(id, n.size);
}

void Engine::learn_kept(bool kept) {
    if (kept) open_kept_.fetch_add(1, std::memory_order_relaxed);
    kept_learnt_.fetch_add(1, std::memory_order_relaxed);
    // A moving average over the last few dozen watched opens; racing
    // updates lose one observation, which is harmless.
    int64_t r = kept_rate_.load(std::memory_order_relaxed);
    r += ((kept ? int64_t{rate_one} : 0) - r) / rate_span;
    kept_rate_.store(static_cast<uint32_t>(r), std::memory_order_relaxed);
}

// Whether the next file the kernel may still hold is watched rather than
// pushed: every one while 3 in 4 watched files were kept lately, else 1 in
// 16, so that the rate keeps being learnt; 1 in 64 once the kernel is
// known to drop nearly all of them (in a tight memory cgroup, 6% of an
// epoch's files were watched and each needed a READ: bench/RESULTS.md,
// SSD-640 under fanotify). Coming back from there to watching every file
// then takes about 2,800 opens instead of 700: pushes the kernel did not
// need, which cost CPU, not round trips.
bool Engine::watch_next() {
    const uint32_t rate = kept_rate_.load(std::memory_order_relaxed);
    const bool keeping = rate >= rate_one * 3 / 4;
    const uint64_t every = watch_every_now();
    const bool sample = open_probe_.fetch_add(1, std::memory_order_relaxed) % every == 0;
    return keeping || sample;
}

uint64_t Engine::watch_every_now() const {
    const bool dropping = kept_rate_.load(std::memory_order_relaxed) < rate_one / 4 &&
                          kept_learnt_.load(std::memory_order_relaxed) >= 2 * rate_span;
    return dropping ? watch_every_dropping : watch_every;
}

void Engine::watched_open(index::NodeId id, uint32_t pid) {
    if (open_count_) open_count_[id].fetch_add(1, std::memory_order_acq_rel);
    if (open_seen_) open_seen_[id].store(true, std::memory_order_relaxed);
    // Nothing to pin: the bytes the job reads are the kernel's by now.
    (void)opened(id, pid);
}

bool Engine::watched_close(index::NodeId id) {
    if (watch_state_) {
        // Left unpushed for this use: a READ at 0 since says the kernel had
        // dropped it.
        if (uint8_t w = watch_state_[id].exchange(0, std::memory_order_relaxed)) learn_kept(w == 1);
    }
    if (!open_count_) return false;
    // Opens made before the watch began were told by OPEN and end with a
    // RELEASE as well as this close: never below zero.
    uint32_t c = open_count_[id].load(std::memory_order_relaxed);
    do {
        if (c == 0) return false;
    } while (!open_count_[id].compare_exchange_weak(c, c - 1, std::memory_order_acq_rel));
    return c == 1 && dropping_.load(std::memory_order_relaxed) && ram_.contains(id);
}

void Engine::close_dropped(bool ok) {
    (ok ? close_drops_ : close_drop_errors_).fetch_add(1, std::memory_order_relaxed);
}

void Engine::read_from_start(index::NodeId id) {
    if (!watch_state_) return;
    uint8_t watched = 1;
    watch_state_[id].compare_exchange_strong(watched, 2, std::memory_order_relaxed);
}

// One copy (--one-copy): a file the RAM tier holds and the kernel's page
// cache of the mount holds too is in memory twice, charged to the same
// memory cgroup when the job and the daemon share one; with the dataset in
// the tier the page cache then crowds out the job's own memory and the job
// spends its CPU in reclaim (bench/RESULTS.md, "One copy"). So the pages
// go when the file's last open is released, and the next open pushes them
// again. A file the tier lacks keeps its pages: there they are the only
// copy, and the kernel keeps them while it has room. The drop also makes
// the next fstat ask for the attributes again (FUSE_NOTIFY_INVAL_INODE
// invalidates both, and no notification drops pages alone): a GETATTR
// round trip, and the push at every open is a copy; where the page cache
// has room for both copies they buy nothing, so by default (automatic)
// pages are dropped only while the tier's bytes would take more than half
// of that room (weigh_room).
void Engine::drop_if_last(index::NodeId id) {
    // An open racing this release may push before the drop lands: its
    // reads then make READs, which the tier answers.
    if (open_count_[id].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (!dropping_.load(std::memory_order_relaxed)) return;
    if (!inval_ || !ram_.contains(id) || ram_.in_kernel(id)) return;
    int rv = inval_(id);
    // ENOENT: the kernel has no inode for it, so no pages either.
    (rv == 0 || rv == -ENOENT ? close_drops_ : close_drop_errors_)
        .fetch_add(1, std::memory_order_relaxed);
}

// Automatic one copy: the room the page cache has (the memory this
// process may use less what reclaim cannot free, config/memory_budget.hpp)
// against the bytes the RAM tier holds, which the page cache would hold a
// second time. Pages are dropped while those bytes exceed half the room,
// and kept again once they fit in a third: the tier's bytes count in the
// anonymous memory, so the room does not move with the choice, and the
// gap keeps a budget near the line from switching at every look. Weighed
// once a second, from files in /proc and /sys.
// The same room decides whether a sequential reader's pages of chunked
// files are dropped behind it (weigh_chunk_room).
void Engine::weigh_room() {
    const bool one_copy = open_count_ && opt_.one_copy == EngineOptions::OneCopy::automatic;
    const bool chunked = chunks_ && chunks_->can_drop_behind() &&
                         opt_.drop_behind == EngineOptions::When::automatic;
    if (!one_copy && !chunked) return;
    auto now = std::chrono::steady_clock::now();
    if (now - room_at_ < std::chrono::seconds(1)) return;
    room_at_ = now;
    const uint64_t room = room_probe_ ? room_probe_() : config::page_cache_room();
    room_.store(room, std::memory_order_relaxed);
    if (room == UINT64_MAX) return; // unknown: as it was
    if (chunked) weigh_chunk_room(room);
    if (!one_copy) return;
    const uint64_t held = ram_.stats().bytes;
    const bool was = dropping_.load(std::memory_order_relaxed);
    const bool now_dropping = was ? held > room / 3 : held > room / 2;
    if (now_dropping == was) return;
    dropping_.store(now_dropping, std::memory_order_relaxed);
    one_copy_switches_.fetch_add(1, std::memory_order_relaxed);
    LOG_INFO("one copy %s: the RAM tier holds %.0f MiB, the page cache has room for %.0f MiB%s",
             now_dropping ? "on" : "off", held / 1048576.0, room / 1048576.0,
             now_dropping ? "; files leave the page cache at their last close"
                          : "; the page cache keeps a second copy");
}

// Drop-behind for chunked files: a file read from start to end (a shard)
// leaves its pages in the page cache, and where the chunked files do not
// fit in its room they only push out one another, and the job's memory,
// before the next epoch reads them (the shards' order is new each epoch).
// The kernel reclaims them then by the reader's own allocations, at a CPU
// cost the job pays, which dropping them once passed saves
// (bench/RESULTS.md, 20261127-1204-tfrecord-drop-behind). Where they fit,
// they stay: the next epoch then reads them from the page cache. On above
// half the room, off below a third, as for one copy.
void Engine::weigh_chunk_room(uint64_t room) {
    const uint64_t bytes = chunks_->map().bytes();
    const bool was = chunks_->drop_behind();
    const bool now_on = was ? bytes > room / 3 : bytes > room / 2;
    if (now_on == was) return;
    chunks_->set_drop_behind(now_on);
    LOG_INFO("drop-behind %s: files held by chunk take %.0f MiB, the page cache has room for "
             "%.0f MiB%s",
             now_on ? "on" : "off", bytes / 1048576.0, room / 1048576.0,
             now_on ? "; a sequential reader's pages leave it once passed" : "");
}

// Pushes at open (Engine::push_on_open). A file's first open since the
// mount pushes what the RAM tier holds: the kernel cannot have it yet.
// Later opens push unless the kernel has lately been keeping the files it
// had: watched opens (not pushed) show that, one in 16 of them and every
// open while the kernel keeps them. A push the kernel did not need costs a
// copy into pages it still held; a READ it did need costs two round trips
// (the READ, and the GETATTR the epoch after: each READ invalidates the
// atime). So it pushes unless 3 in 4 watched files were kept.
OpenPush Engine::push_on_open(index::NodeId id, const cache::BlobRef& bytes) {
    if (open_count_) open_count_[id].fetch_add(1, std::memory_order_acq_rel);
    if (!open_seen_ || !push_) return OpenPush::none;
    // Nothing to push, ever: its opens say nothing about the others.
    const uint64_t size = index_.node(id).size;
    if (size == 0 || size > max_push) return OpenPush::none;
    const bool have = static_cast<bool>(bytes);
    // A push waits for any page of the file a READ in flight has locked,
    // and that READ for a FUSE thread to answer it: so pushes never take
    // more than half the threads, and a push that would is not made.
    auto push = [&] {
        const unsigned most = std::max(1u, opt_.fuse_threads / 2);
        if (pushing_.fetch_add(1, std::memory_order_relaxed) >= most) {
            pushing_.fetch_sub(1, std::memory_order_relaxed);
            open_busy_.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        int rv = push_(id, *bytes);
        pushing_.fetch_sub(1, std::memory_order_relaxed);
        // EAGAIN: the FUSE layer could not push on this thread (a thread
        // answering an io_uring ring alone must not wait for a READ).
        (rv == 0 ? open_pushes_ : rv == -EAGAIN ? open_busy_ : push_errors_)
            .fetch_add(1, std::memory_order_relaxed);
        return rv == 0;
    };
    if (open_count_ && dropping_.load(std::memory_order_relaxed)) {
        if (have) push();
        return OpenPush::none; // nothing to learn: the kernel was made to drop it
    }
    if (!open_seen_[id].exchange(true, std::memory_order_relaxed)) {
        if (have) push();
        return OpenPush::none; // its READs (if any) only fill the kernel's cache
    }
    if (have && !watch_next() && push()) return OpenPush::pushed;
    open_watched_.fetch_add(1, std::memory_order_relaxed);
    return OpenPush::watched;
}

uint64_t Engine::evict_file(index::NodeId id) {
    if (!ram_.in_kernel(id)) return ram_.evict(id);
    // The kernel's pages first, then the mark: a READ in between finds the
    // file still marked, counts a miss and fetches it, which is harmless.
    // -ENOENT: the kernel has no inode for it, so no pages either.
    if (inval_) inval_(id);
    uint64_t size = index_.node(id).size;
    if (!ram_.kernel_lost(id, size)) return 0;
    evictions_from_kernel_.fetch_add(1, std::memory_order_relaxed);
    return size;
}

void Engine::forgotten(index::NodeId id) {
    if (ram_.kernel_lost(id, index_.node(id).size))
        kernel_forgets_.fetch_add(1, std::memory_order_relaxed);
}

// The kernel asked again for a file it was handed: under memory pressure
// it reclaims page cache, and the RAM tier no longer holds the bytes. Each
// such read is one demand fetch, from the SSD tier or the backing store; a
// kernel that keeps dropping what it is handed would make them a share of
// every later epoch, unseen by the prefetcher. So at the 64th, however many
// files were handed over, hand-over stops for the mount: files are no
// longer handed over, and each one the kernel drops comes back into the
// tier when it is next read and stays. The marks stay: clearing them would
// have the prefetcher read again every file the kernel still holds (543 MB
// of a 1.1 GB dataset in one epoch of bench/RESULTS.md's run).
constexpr uint64_t max_kernel_misses = 64;

void Engine::note_kernel_miss() {
    uint64_t misses = kernel_misses_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (misses < max_kernel_misses || !handover_.exchange(false)) return; // or stopped already
    std::string why = "the kernel dropped " + std::to_string(misses) + " of the " +
                      std::to_string(ram_.kernel_stats().handed_over) +
                      " files it was handed (memory pressure on its page cache)";
    {
        std::lock_guard lk(handover_mu_);
        handover_stopped_ = why;
    }
    LOG_WARN("hand-over stopped: %s; the RAM tier keeps its own copy of every file it reads "
             "from now on, as without --handover", why.c_str());
}

std::shared_ptr<Engine::Active>
Engine::prepare(std::string id, std::vector<std::shared_ptr<const plan::Job>> loaders) const {
    if (prepare_hook_) prepare_hook_();
    return std::make_shared<Active>(std::move(id), loaders, index_);
}

// Under job_mu_: moves the jobs of `id` (all if empty) out of the lists.
static Engine::Jobs take_jobs(std::shared_ptr<const Engine::Jobs>& jobs, Engine::Jobs& retired,
                              const std::string& id) {
    Engine::Jobs taken, kept;
    for (const auto& j : *jobs) (id.empty() || j->id == id ? taken : kept).push_back(j);
    std::erase_if(retired, [&](const auto& j) {
        if (!id.empty() && j->id != id) return false;
        taken.push_back(j);
        return true;
    });
    jobs = std::make_shared<const Engine::Jobs>(std::move(kept));
    return taken;
}

Engine::Jobs Engine::activate(std::shared_ptr<Active> prepared,
                              const std::function<Opens()>& late) {
    std::unique_lock observing(observe_mu_, std::defer_lock);
    if (late) {
        observing.lock();
        replay(prepared, late());
    }
    if (peers_) {
        // Before the job is visible to the scheduler: its first round waits
        // for the other nodes' registrations (share_registrations).
        hold_until_.store(std::chrono::steady_clock::now() + agreement_grace);
        agreement_pending_.store(true);
    }
    Jobs replaced;
    {
        std::lock_guard lk(job_mu_);
        replaced = take_jobs(jobs_, retired_, prepared->id);
        Jobs next = *jobs_;
        next.push_back(std::move(prepared));
        jobs_ = std::make_shared<const Jobs>(std::move(next));
        count_range_loaders();
    }
    if (observing.owns_lock()) observing.unlock();
    if (pool_) pool_->drop_queued_prefetches();
    wake_scheduler();
    return replaced;
}

Engine::Jobs Engine::deactivate(const std::string& id) {
    Jobs dropped;
    {
        std::lock_guard lk(job_mu_);
        dropped = take_jobs(jobs_, retired_, id);
        count_range_loaders();
    }
    if (pool_) pool_->drop_queued_prefetches();
    return dropped;
}

size_t Engine::active_jobs() const {
    std::lock_guard lk(job_mu_);
    return jobs_->size();
}

bool Engine::is_active(const std::string& id) const {
    std::lock_guard lk(job_mu_);
    return std::ranges::any_of(*jobs_, [&](const auto& j) { return j->id == id; });
}

std::vector<uint32_t> Engine::live_processes(const std::string& id) const {
    std::shared_ptr<Active> job;
    {
        std::lock_guard lk(job_mu_);
        for (const auto& j : *jobs_)
            if (j->id == id) job = j;
    }
    return job ? job->live_pids() : std::vector<uint32_t>{};
}

std::vector<std::string> Engine::job_ids() const {
    std::lock_guard lk(job_mu_);
    std::vector<std::string> ids;
    for (const auto& j : *jobs_) ids.push_back(j->id);
    for (const auto& j : retired_) ids.push_back(j->id);
    return ids;
}

// Clairvoyant while every loader of every job is; fallback once any is not.
track::Mode Engine::mode() const {
    Jobs all;
    {
        std::lock_guard lk(job_mu_);
        all = *jobs_;
        all.insert(all.end(), retired_.begin(), retired_.end());
    }
    if (all.empty()) return track::Mode::unregistered;
    for (const auto& j : all)
        for (const auto& l : j->loaders)
            if (l.tracker->mode() != track::Mode::clairvoyant) return track::Mode::fallback;
    return track::Mode::clairvoyant;
}

} // namespace clairfs::prefetch
