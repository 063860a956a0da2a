// SPDX-License-Identifier: MIT
#include "peer_homes.hpp"

#include "clairfs/log.hpp"
#include "clairfs/order/samplers.hpp"
#include "clairfs/peer/peers.hpp"
#include "clairfs/prefetch/cache_rules.hpp"
#include "group_uses.hpp"
#include "job_table.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <xxhash.h>

namespace clairfs::prefetch {

PeerHomes::PeerHomes(const index::Index& idx, const std::vector<uint32_t>& tier_size,
                     const cache::RamTier& ram, uint64_t mem, unsigned fetch_threads,
                     const JobTable& jobs)
    : index_(idx), tier_size_(tier_size), ram_(ram), mem_(mem), fetch_threads_(fetch_threads),
      jobs_(jobs) {}

PeerHomes::~PeerHomes() = default;

void PeerHomes::attach(std::unique_ptr<peer::Peers> peers, Calls calls) {
    peers_ = std::move(peers);
    if (!peers_) return;
    calls_ = std::move(calls);
    std::vector<int16_t> of(index_.size(), -1);
    for (index::NodeId id = 0; id < index_.size(); ++id)
        if (tier_size_[id] != not_tiered) of[id] = static_cast<int16_t>(peers_->home_of(id));
    homes_.store(std::make_shared<const Homes>(make_homes(std::move(of), HomePlacement::hash)));
    peers_->set_note_handler([this] { check_agreement(); });
    peers_->set_summary([this] { return calls_.summary(); });
}

void PeerHomes::start() {
    if (peers_) peers_->start();
}

void PeerHomes::stop() {
    if (peers_) peers_->stop();
}

bool PeerHomes::settled() const {
    return !peers_ || peers_->settled();
}

void PeerHomes::hold() {
    if (!peers_) return;
    hold_until_.store(std::chrono::steady_clock::now() + agreement_grace);
    pending_.store(true);
}

// The file from its home. A home that fails, dies or sends bytes that fail
// their checksum costs this one fetch its wait; the file then comes from
// the backing store.
FetchResult PeerHomes::fetch(index::NodeId id, bool demanded) {
    FetchResult none{0, nullptr, Source::peer};
    if (!peers_) return none;
    int home = home_of(id);
    if (home == peers_->self() || !peers_->usable(home)) return none;
    const peer::SourceRate& link = peers_->rate(home);
    peer::Choice c = peer::choose_source(
        {link.seconds_per_file(), link.inflight(), peers_->server_threads()},
        {backing_rate_.seconds_per_file(), backing_rate_.inflight(), fetch_threads_});
    if (c != peer::Choice::peer) {
        chose_backing_.fetch_add(1, std::memory_order_relaxed);
        return none;
    }
    peer::PeerReply p = peers_->fetch(home, id, index_.node(id).size, demanded);
    if (p.error != 0) return none;
    return {0, std::move(p.blob), Source::peer};
}

uint64_t PeerHomes::reserved(const Homes& homes) const {
    if (!homes.pin) return 0;
    return homes.here_bytes - std::min(homes.here_bytes, homed_held_.load());
}

Homes PeerHomes::make_homes(std::vector<int16_t> of, HomePlacement by) const {
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
    h.pin = homes_pinned(group_mem, dataset, mem_, h.here_bytes);
    return h;
}

// A DistributedSampler job that every member registered alike, with ranks
// that are each on one node: each file's home becomes the node whose rank
// opens it first, in the job's first epoch, so that epoch reads every file
// from the shared file system where it is needed anyway, and no node asks
// another for anything until the second.
void PeerHomes::plan_homes(const std::string& job_id,
                        const std::map<int, std::vector<uint32_t>>& ranks) {
    auto cur = homes_.load();
    if (!cur || cur->by == HomePlacement::schedule) return;
    std::shared_ptr<const ActiveJob> job;
    for (const auto& j : *jobs_.jobs())
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
void PeerHomes::place_due_homes() {
    std::map<std::string, std::map<int, std::vector<uint32_t>>> due;
    {
        std::lock_guard lk(mu_);
        due.swap(homes_due_);
    }
    for (const auto& [id, by_node] : due) plan_homes(id, by_node);
}

int PeerHomes::home_of(index::NodeId id) const {
    auto h = homes_.load();
    return h && id < h->of.size() && h->of[id] >= 0 ? h->of[id] : peers_->home_of(id);
}

void PeerHomes::share_registrations(std::map<std::string, std::string> keys,
                                    std::map<std::string, std::vector<uint32_t>> ranks) {
    if (!peers_) return;
    nlohmann::json note;
    note["jobs"] = nlohmann::json::object();
    for (const auto& [id, k] : keys) note["jobs"][id] = k;
    note["ranks"] = ranks;
    {
        std::lock_guard lk(mu_);
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

using NodeRanks = std::map<int, std::vector<uint32_t>>;

struct PeerHomes::Judged {
    std::map<std::string, std::string> broken; // job id -> why
    // Per job: each node's ranks, for the nodes that registered it alike.
    std::map<std::string, NodeRanks> placed;
    size_t agreeing = 0; // peers that registered every job of ours alike
};

// One peer's note (`rank`, its JSON text) against this node's keys.
void PeerHomes::judge_note(int rank, const std::string& text,
                           const std::map<std::string, std::string>& own, Judged& out) {
    nlohmann::json theirs, their_ranks;
    try {
        auto j = nlohmann::json::parse(text);
        theirs = j.at("jobs");
        their_ranks = j.value("ranks", nlohmann::json::object());
    } catch (const nlohmann::json::exception&) {
        return;
    }
    for (const auto& [id, keys] : own) {
        if (theirs.contains(id) && theirs[id] == keys && their_ranks.contains(id)) {
            try {
                out.placed[id][rank] = their_ranks[id].get<std::vector<uint32_t>>();
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
        if (!out.broken.contains(id))
            out.broken[id] = "node " + std::to_string(rank) + " registered job '" + id +
                             "' with other keys (" + key_differences(other, keys) + ")";
    }
    out.agreeing += all_same;
}

void PeerHomes::check_agreement() {
    if (!peers_) return;
    std::map<std::string, std::string> own;
    Judged judged;
    {
        std::lock_guard lk(mu_);
        own = own_keys_;
        for (const auto& [id, r] : own_ranks_) judged.placed[id][peers_->self()] = r;
    }
    for (const auto& [rank, text] : peers_->notes()) judge_note(rank, text, own, judged);
    const bool queued = queue_placements(judged, own);
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
    const auto active = jobs_.jobs();
    const bool unshared = std::ranges::any_of(
        *active, [&](const std::shared_ptr<ActiveJob>& j) { return !own.contains(j->id); });
    bool pending =
        unshared || (!own.empty() && judged.broken.empty() && judged.agreeing < live);
    if ((pending_.exchange(pending) && !pending) || queued) calls_.round_due();
    abandon(judged.broken);
}

// Every member alive registered the job alike: its files are placed, on the
// scheduler thread (plan_homes draws the whole epoch's order, ~0.5 s at 14M
// samples, which would delay this links thread's pings). Queued before the
// hold is lifted, so the round it lets run places the homes first; once
// placed, later notes queue nothing. Also writes the line status shows.
bool PeerHomes::queue_placements(Judged& judged, const std::map<std::string, std::string>& own) {
    std::map<std::string, NodeRanks> due;
    auto cur = homes_.load();
    if (judged.broken.empty() && cur && cur->by != HomePlacement::schedule)
        for (auto& [id, by_node] : judged.placed)
            if (by_node.size() == static_cast<size_t>(peers_->size()))
                due.emplace(id, std::move(by_node));
    std::string line;
    if (!judged.broken.empty())
        line = judged.broken.begin()->second;
    else if (!own.empty())
        line = "agreed with " + std::to_string(judged.agreeing) + " of " +
               std::to_string(peers_->size() - 1) + " peers";
    std::lock_guard lk(mu_);
    agreement_ = line;
    for (auto& [id, by_node] : due) homes_due_[id] = std::move(by_node);
    return !due.empty();
}

// Every node sees the same notes, so each puts its own copy of a job whose
// keys differ in fallback: the group never prefetches by two different orders.
void PeerHomes::abandon(const std::map<std::string, std::string>& broken) {
    if (broken.empty()) return;
    for (const auto& j : *jobs_.jobs()) {
        auto it = broken.find(j->id);
        if (it == broken.end()) continue;
        for (auto& l : j->loaders)
            if (l.tracker->mode() == track::Mode::clairvoyant) l.tracker->abandon(it->second);
    }
}


GroupDue PeerHomes::group_next_use(const Homes& homes,
                                   const std::vector<std::shared_ptr<ActiveJob>>& jobs,
                                   const std::vector<std::vector<track::Snapshot>>& snaps) {
    if (homes.job.empty()) return {};
    for (size_t i = 0; i < jobs.size(); ++i) {
        if (jobs[i]->id != homes.job || snaps[i].size() != 1 || jobs[i]->loaders.front().ranges)
            continue;
        const track::Snapshot& snap = snaps[i].front();
        if (snap.mode != track::Mode::clairvoyant) return {};
        // The slowest local rank stands for the group's step.
        const track::RankProgress* slow = nullptr;
        for (const auto& r : snap.ranks)
            if (r.current && (!slow || std::pair(r.current->epoch, r.frontier) <
                                           std::pair(slow->current->epoch, slow->frontier)))
                slow = &r;
        if (!slow || !slow->current->seed_epoch) return {};
        std::optional<uint64_t> next;
        if (slow->next) next = slow->next->seed_epoch;
        if (!group_uses_) group_uses_ = std::make_unique<GroupUses>();
        group_uses_->set(*jobs[i]->loaders.front().job, index_, *slow->current->seed_epoch,
                        slow->current->size(), slow->frontier, next);
        // In the window's units: this node's timeline interleaves its ranks,
        // so one position of every rank is that many files of it.
        const uint64_t per_position = std::max<size_t>(snap.ranks.size(), 1);
        const Homes* h = &homes; // outlives the round: the caller holds it
        return [this, h, per_position](index::NodeId id) {
            uint64_t d = h->here[id] ? group_uses_->next_use(id) : UINT64_MAX;
            return d == UINT64_MAX ? d : d * per_position;
        };
    }
    return {};
}

void PeerHomes::status(nlohmann::json& out) const {
    if (!peers_) {
        out["peers"] = nullptr;
        return;
    }
    peers_->status(out);
    auto h = homes();
    out["peers"]["homes"] = home_placement_name(h->by);
    char digest[17];
    snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(h->digest));
    out["peers"]["homes_digest"] = digest;
    out["peers"]["homed_files"] = h->here_files;
    out["peers"]["homed_bytes"] = h->here_bytes;
    out["peers"]["homed_held_bytes"] = homed_held_.load();
    out["peers"]["pinned"] = h->pin;
    double b = backing_rate_.seconds_per_file();
    out["peers"]["backing_seconds_per_file"] = b < 0 ? nlohmann::json(nullptr) : nlohmann::json(b);
    out["peers"]["chose_backing"] = chose_backing_.load();
    std::lock_guard lk(mu_);
    out["peers"]["agreement"] = agreement_.empty() ? nlohmann::json(nullptr)
                                                   : nlohmann::json(agreement_);
}

} // namespace clairfs::prefetch
