// SPDX-License-Identifier: MIT
#include "clairfs/prefetch/engine.hpp"

#include "active_job.hpp"
#include "clairfs/cache/ssd_tier.hpp"
#include "clairfs/layout/dataset.hpp"
#include "clairfs/log.hpp"
#include "clairfs/peer/peers.hpp"
#include "clairfs/sys/contained.hpp"
#include "clairfs/sys/join_within.hpp"
#include "chunks/kernel_shards.hpp"
#include "job_table.hpp"
#include "kernel_files.hpp"
#include "page_cache.hpp"
#include "chunks/range_jobs.hpp"
#include "peer_homes.hpp"
#include "scheduler.hpp"
#include "stager.hpp"
#include "timeline.hpp"
#include "ssd_writer.hpp"

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <utility>

namespace clairfs::prefetch {
namespace {

// Enough queued prefetches to keep every fetch thread busy across a
// scheduler round, few enough that a withdrawn registration wastes little.
size_t queue_depth(unsigned threads) {
    return size_t{threads} * 4;
}

} // namespace

Engine::Engine(const index::Index& idx, int backing_fd, EngineOptions opt)
    : index_(idx), opt_(split_budget(idx, opt)), backing_(idx, backing_fd),
      // Room for every FUSE thread plus as many stuck in hung reads.
      backing_calls_(opt.io_timeout, 2 * std::max(opt.fuse_threads, 1u)), ram_(opt_.mem, idx.size()),
      table_(std::make_unique<JobTable>(idx)), tier_size_(idx.size(), not_tiered),
      page_(std::make_unique<PageCache>(idx, ram_, opt_)),
      kernel_(std::make_unique<KernelFiles>()),
      stager_(std::make_unique<Stager>(idx, [this] { return stage_order(); })) {
    if (opt_.chunk_mem > 0) {
        ChunkOptions c;
        c.ram = opt_.chunk_mem;
        c.io_timeout = opt_.io_timeout;
        c.readahead = opt_.readahead;
        chunks_ = std::make_unique<ChunkStore>(ChunkMap(idx, opt_.max_file, opt_.chunk_size),
                                               backing_, idx, c);
    }
    page_->set_chunks(chunks_.get());
    page_->set_kernel_files(kernel_.get());
    ranges_ = std::make_unique<RangeJobs>(idx, *table_, chunks_.get(), page_->slots(),
                                          [this] { sched_->matched_range_read(); });
    stager_->set_tiers(stage_tiers());
    group_ = std::make_unique<PeerHomes>(idx, tier_size_, ram_, opt_.mem, opt_.fetch_threads,
                                         *table_);
    sched_ = std::make_unique<Scheduler>(
        idx.size(), Scheduler::Parts{opt_, ram_, *table_, *page_, *group_, tier_size_, *kernel_},
        Scheduler::Calls{[this](const Jobs& jobs) { ranges_->round(jobs); },
                         [this](const std::vector<JobView>& views) {
                             if (chunks_) prefetch_shard_heads(*chunks_, views);
                         }});
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
    kernel_->attach(dynamic_cast<cache::SsdTier*>(ssd_.get()), index_.size());
    stager_->set_tiers(stage_tiers());
}

void Engine::serve_ssd_by_kernel(bool on, std::function<void(index::NodeId)> dropped) {
    if (KernelShards* k = chunks_ ? chunks_->kernel_shards() : nullptr) k->turn_on(on, dropped);
    auto* ssd = dynamic_cast<cache::SsdTier*>(ssd_.get());
    if (on && ssd) ssd->set_drop_listener(std::move(dropped));
    kernel_->turn_on(on);
}

bool Engine::ssd_by_kernel(ReadSource source) const {
    if (source == ReadSource::tiers) return kernel_->on();
    const KernelShards* k = chunks_ ? std::as_const(*chunks_).kernel_shards() : nullptr;
    return source == ReadSource::chunks && k && k->on();
}

int Engine::kernel_file(index::NodeId id) {
    if (chunked(id)) return chunks_->kernel_shards()->open(id);
    // Held in RAM, the daemon serves it from there: no check of the entry
    // just to hand it over.
    return kernel_->open(id, !ram_.contains(id));
}

void Engine::kernel_file_served(index::NodeId id, bool handed) {
    if (chunked(id))
        chunks_->kernel_shards()->count(id, handed);
    else
        kernel_->count(handed);
}

void Engine::attach_peers(std::unique_ptr<peer::Peers> peers) {
    if (!peers) return;
    page_->stop_handover(); // peers are served from the tier
    peers->set_server([this](index::NodeId id) { return serve_peer(id); });
    PeerHomes::Calls calls;
    calls.round_due = [this] { sched_->force_round(); };
    calls.summary = [this] { return summary_for_peers(); };
    group_->attach(std::move(peers), std::move(calls));
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
    group_->share_registrations(std::move(keys), std::move(ranks));
}

bool Engine::peers_settled() const {
    return group_->settled();
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
    // Automatic: off until the room is weighed (PageRoom).
    kernel_->set_drop_behind(opt_.drop_behind == EngineOptions::When::always);
    if (chunks_) {
        if (ranges_->dropper() && opt_.drop_behind != EngineOptions::When::never) {
            chunks_->set_dropper(ranges_->dropper());
            chunks_->set_drop_behind(opt_.drop_behind == EngineOptions::When::always);
        }
        chunks_->start();
    }
    sched_->start(*pool_);
    stager_->start(stage_tiers());
    group_->start();
    if (opt_.stage) stage();
}

Engine::~Engine() {
    stop();
}

void Engine::stop() {
    stop_within({});
}

bool Engine::stop_within(std::chrono::milliseconds bound) {
    stager_->stop();
    // The scheduler pushes into and drops from the kernel's page cache. The
    // session's loop has ended by now (the daemon stops the engine before
    // it unmounts), so a push or a drop waiting for a page that a READ in
    // flight has locked waits until the unmount aborts that READ: after
    // this. Bounded like the fetches, then left behind.
    if (!sched_->stop_within(bound)) {
        LOG_WARN("a page-cache push or drop still waits after %.1f s (for a READ the ended "
                 "session will not answer); exiting without it",
                 static_cast<double>(bound.count()) / 1000);
        return false;
    }
    // Before the pool: a fetch waiting on a peer ends now (it reads the
    // backing store instead), and the peers stop asking this daemon.
    group_->stop();
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
//
// A prefetch of a file the kernel will read from its SSD entry itself
// warms the entry instead: read through its page cache and checked, not
// promoted into the RAM tier (KernelFiles). So does an open the daemon
// serves from the entry, so that the file's next open is the kernel's.
FetchResult Engine::read_whole(index::NodeId id, bool demanded) {
    if (kernel_->warms(id)) {
        if (cache::BlobRef b = kernel_->warm(id, demanded))
            return {0, std::move(b), Source::ssd, false};
    }
    if (FetchResult r = read_ssd(id); r.blob) return r;
    // Its home's copy, when the home is another daemon that is alive and
    // the faster source.
    if (FetchResult p = group_->fetch(id, demanded); p.blob) return p;
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
    peer::SourceRate& rate = group_->backing_rate();
    rate.begin();
    auto t0 = std::chrono::steady_clock::now();
    r.error = backing_.read_whole(id, r.blob);
    rate.end(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                      r.error == 0);
    return r;
}

StageTiers Engine::stage_tiers() const {
    return {&ram_, ssd_.get(), writer_.get(), chunks_.get(), pool_.get(), opt_.mem};
}

void Engine::stage() {
    stager_->request();
}

// Registered: each local rank's future, ranks taking turns, then every file
// the prediction does not reach; unregistered: every file in index order.
std::vector<index::NodeId> Engine::stage_order() {
    std::vector<index::NodeId> out;
    std::vector<uint8_t> seen(index_.size(), 0);
    auto jobs = this->jobs();
    std::vector<std::vector<track::Snapshot>> snaps;
    std::vector<JobView> views;
    snapshot_jobs(*jobs, *pool_, snaps, views);
    Timeline future(views);
    for (index::NodeId id; future.next(id);) {
        if (seen[id]) continue;
        seen[id] = 1;
        // The future also names files the tiers do not take (too large).
        if (tiered(index_.node(id))) out.push_back(id);
    }
    for (index::NodeId id = 0; id < index_.size(); ++id) {
        const index::Node& n = index_.node(id);
        if (!seen[id] && S_ISREG(n.mode) && tiered(n)) out.push_back(id);
    }
    return out;
}

bool Engine::tiered(const index::Node& n) const {
    return tiered_size(opt_, n.size);
}

ReadSource Engine::source(const index::Node& n) const {
    if (tiered(n)) return ReadSource::tiers;
    // Not passed through from the backing store: a file held by chunk's
    // READs are what fill the tiers (once whole in the SSD tier it may be
    // passed through from there: kernel_file()).
    if (chunked(index_.id_of(n))) return ReadSource::chunks;
    return n.size > opt_.passthrough_above ? ReadSource::passthrough : ReadSource::backing;
}

void Engine::attach_chunk_ssd(std::unique_ptr<cache::Tier> ssd) {
    if (chunks_) chunks_->attach_ssd(std::move(ssd));
}

std::shared_ptr<const Engine::Jobs> Engine::jobs() const {
    return table_->jobs();
}

cache::BlobRef Engine::opened(index::NodeId id, uint32_t pid) {
    auto jobs = this->jobs();
    bool registered = !jobs->empty();
    if (!registered && observe_) {
        // Its process and parent, read while the thread is alive: a job
        // detected after its workers exited binds their loader process
        // through them (replay), and stays live while that runs.
        table_->process_of(pid);
        // Looked at again under the lock activate() replays the observer's
        // queue under: this open is either queued before that replay or
        // routed to the job after it.
        std::lock_guard lk(observe_mu_);
        jobs = this->jobs();
        registered = !jobs->empty();
        if (!registered) observe_(id, pid);
    }
    page_->opened(id, registered);
    if (registered) follow_open(jobs, id, pid);
    const index::Node& node = index_.node(id);
    if (!tiered(node)) return nullptr;
    page_->tiered_open(id, node.size);
    return ram_.get(id);
}

void Engine::follow_open(const std::shared_ptr<const Jobs>& jobs, index::NodeId id, uint32_t pid) {
    // Following the jobs is an optimisation: if it fails, the open still
    // succeeds and the jobs are no longer predicted.
    track::Observation o;
    if (auto why = sys::contained("following an open",
                                  [&] { o = table_->route_open(*jobs, id, pid); });
        !why.empty())
        for (const auto& j : *jobs)
            for (auto& l : j->loaders)
                l.tracker->abandon("following the job failed inside clairfs (" + why + ")");
    auto covered = [id](const Jobs& js) {
        return std::ranges::any_of(js, [&](const auto& j) { return j->covering(id); });
    };
    // A file no job covers (a validation loader beside a detected training
    // one): detection may want it. Looked at again under the lock
    // activate() replays under, as in opened(): a job that covers it may
    // have gone live meanwhile, and then the open is that job's.
    if (!o.matched && !o.deferred && observe_ && !covered(*jobs)) {
        std::lock_guard lk(observe_mu_);
        auto now = this->jobs();
        if (now == jobs || !covered(*now))
            observe_(id, pid);
        else
            sys::contained("following an open", [&] { o = table_->route_open(*now, id, pid); });
    }
    if (o.matched) sched_->matched_open(o.new_epoch);
}

int Engine::bytes_of(index::NodeId id, cache::BlobRef& out) {
    page_->reading(id);
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
    if (r.error == 0 && r.keep) {
        auto homes = group_->homes();
        if (homes && homes->pin && !homes->here[id]) {
            // With peers, while the group holds the dataset, a file from
            // elsewhere may not take the room the files homed here will
            // need: they are what the others ask for. (Short of that, the
            // scheduler's eviction by the group's next use decides.)
            cache::TierStats t = ram_.stats();
            uint64_t reserved = group_->reserved(*homes);
            if (t.bytes + r.blob->size + reserved <= t.capacity) ram_.put(id, r.blob);
        } else {
            bool had = ram_.contains(id);
            if (ram_.put(id, r.blob) && !had && homes && homes->here[id])
                group_->held(r.blob->size);
        }
        if (writer_ && r.from == Source::backing && !ssd_->contains(id))
            writer_->enqueue(id, r.blob);
    }
    sched_->landed(r.error == 0 && page_->landed(id, demanded));
}

void Engine::set_range_pusher(RangePusher push) {
    ranges_->set_pusher(std::move(push));
}

void Engine::set_range_dropper(RangeDropper drop) {
    ranges_->set_dropper(std::move(drop));
}

// One atomic load while no ranges job is registered.
void Engine::read_range(index::NodeId id, uint64_t off, uint64_t size, uint32_t tid) {
    if (table_->range_loaders() != 0) ranges_->follow_read(*jobs(), id, off, size, tid);
}

void Engine::set_pusher(Pusher push) {
    page_->set_pusher(std::move(push));
}

void Engine::set_dropper(Dropper drop) {
    page_->set_dropper(std::move(drop));
}

void Engine::set_invalidator(Dropper inval) {
    page_->set_invalidator(std::move(inval));
}

void Engine::set_room_probe(RoomProbe probe) {
    page_->set_room_probe(std::move(probe));
}

void Engine::released(index::NodeId id, uint64_t served, OpenPush how) {
    if (how == OpenPush::kernel) kernel_->closed(id, mode() == track::Mode::clairvoyant);
    page_->released(id, served, how);
}

OpenPush Engine::push_on_open(index::NodeId id, const cache::BlobRef& bytes) {
    return page_->push_on_open(id, bytes);
}

void Engine::watched_open(index::NodeId id, uint32_t pid) {
    page_->watched_open(id);
    // Nothing to pin: the bytes the job reads are the kernel's by now.
    (void)opened(id, pid);
}

bool Engine::watched_close(index::NodeId id) {
    return page_->watched_close(id);
}

void Engine::close_dropped(bool ok) {
    page_->close_dropped(ok);
}

void Engine::read_from_start(index::NodeId id) {
    page_->read_from_start(id);
}

void Engine::forgotten(index::NodeId id) {
    page_->forgotten(id);
}

std::shared_ptr<Engine::Active>
Engine::prepare(std::string id, std::vector<std::shared_ptr<const plan::Job>> loaders) const {
    return table_->prepare(std::move(id), std::move(loaders));
}

void Engine::set_prepare_hook(std::function<void()> hook) {
    table_->set_prepare_hook(std::move(hook));
}

void Engine::replay(const std::shared_ptr<Active>& prepared,
                    std::span<const std::pair<index::NodeId, uint32_t>> opens) {
    table_->replay(prepared, opens);
}

Engine::Jobs Engine::activate(std::shared_ptr<Active> prepared,
                              const std::function<Opens()>& late) {
    std::unique_lock observing(observe_mu_, std::defer_lock);
    if (late) {
        observing.lock();
        table_->replay(prepared, late());
    }
    // Before the job is visible to the scheduler: with peers, its first
    // round waits for the other nodes' registrations (share_registrations).
    group_->hold();
    Jobs replaced = table_->add(std::move(prepared));
    if (observing.owns_lock()) observing.unlock();
    if (pool_) pool_->drop_queued_prefetches();
    sched_->wake();
    return replaced;
}

Engine::Jobs Engine::deactivate(const std::string& id) {
    Jobs dropped = table_->remove(id);
    if (pool_) pool_->drop_queued_prefetches();
    return dropped;
}

size_t Engine::active_jobs() const {
    return table_->active();
}

bool Engine::is_active(const std::string& id) const {
    return table_->is_active(id);
}

std::vector<uint32_t> Engine::live_processes(const std::string& id) const {
    return table_->live_processes(id);
}

bool Engine::bind_loader(const std::string& id, uint32_t tid) {
    return table_->bind_loader(id, tid);
}

std::vector<std::string> Engine::job_ids() const {
    return table_->ids();
}

track::Mode Engine::mode() const {
    return table_->mode();
}

} // namespace clairfs::prefetch
