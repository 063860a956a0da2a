// SPDX-License-Identifier: MIT
#include "clairfs/control/detector.hpp"

#include "clairfs/layout/dataset.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/contained.hpp"
#include "clairfs/sys/normal_thread.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace clairfs::control {
namespace {

// The wait, in seconds, for work that is not due at all: a day.
constexpr double never_due_s = 86400;

// Far more than a node's loader processes at once (the least recent one
// makes room), and far more opens than a search or a confirmation needs
// of one: at most 2 MiB, however long a job nobody recognises runs (and
// max_replay_opens' 3 MiB below).
constexpr size_t max_processes = 512;
constexpr size_t max_opens_per_process = 1024;
// A process's opens past those are kept only to be told to the trackers of
// the job that claims it (register_detected), every one: a tracker told a
// loader's first 1024 opens and then its latest ones saw a jump, judged
// the opens after it as a next epoch that fit no seed and fell back (a job
// found only after one process had opened more: a loader without workers,
// persistent workers, tf.data's threads, a search that ran late). At most
// this many over all processes, 3 MiB; a process whose opens overflow it
// is told none (as one seen from the middle of its epoch).
constexpr size_t max_replay_opens = 1 << 18;
// A tf.data search judges at most this many of the first files opened:
// enough that a listed pipeline's odds of fitting by chance are far below
// its bound on any dataset of a few thousand files or more, few enough
// that each of its ~5,000 pipelines (8 iterators each) costs microseconds.
// A search that needs more (a pipeline fits, but too few opens tell it
// from chance on a small dataset) is judged on up to four times as many
// next time.
constexpr size_t tf_evidence_opens = 256;
constexpr size_t max_queue = 1 << 16;

// A job found is registered once every rank's loader opened `accept_opens`
// files where it predicts, and its opens showed the worker count itself
// (order::DetectedJob::layout_shown): until some worker reaches its second
// batch, one yet to start would be left out of the registration.
bool confirmed(const order::DetectedJob& j, uint32_t accept_opens) {
    return j.fewest >= accept_opens && j.layout_shown;
}

// Whether two datasets open the same files in the same order (an
// ImageFolder and a sorted listing of the same root often do).
bool same_files(const index::Index& idx, const layout::Dataset& a, const layout::Dataset& b) {
    if (a.samples.size() != b.samples.size()) return false;
    for (size_t i = 0; i < a.samples.size(); ++i)
        if (layout::opened_node(idx, a.samples[i]) != layout::opened_node(idx, b.samples[i]))
            return false;
    return true;
}

// A DistributedSampler shows only seed + epoch. A listed seed itself
// reads as that seed at epoch 0; else the first listed seed (most likely
// first: 0) it is a plausible epoch count above, as that seed resumed at
// that epoch (seed 0 at epoch 37); else the sum at epoch 0.
void seed_and_epoch(uint64_t sum, const order::DetectOptions& search, order::JobSpec& s) {
    const auto& seeds = search.seeds;
    s.seed = sum;
    if (std::find(seeds.begin(), seeds.end(), sum) != seeds.end()) return;
    for (uint64_t listed : seeds)
        if (listed <= sum && sum - listed < search.listed_epochs) {
            s.seed = listed;
            s.start_epoch = static_cast<uint32_t>(sum - listed);
            return;
        }
}

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double steady_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace

Detector::Detector(const index::Index& idx, DetectorOptions opt, Apply apply,
                   DropFinished drop_finished)
    : idx_(idx), opt_(std::move(opt)), apply_(std::move(apply)),
      drop_finished_(std::move(drop_finished)),
      budget_(opt_.cpu_share, opt_.cpu_window_s, now_s()) {
    chain_.burst_left_s = opt_.cpu_share * opt_.chain_burst_window_s;
    opt_.search.cancel = &cancel_;
}

Detector::~Detector() { stop(); }

double Detector::now_s() const { return opt_.clock ? opt_.clock() : steady_seconds(); }

void Detector::start() {
    if (!thread_.joinable()) thread_ = sys::normal_thread([this] { run(); });
}

void Detector::stop() {
    {
        std::lock_guard lk(mu_);
        stop_ = true;
    }
    cancel_ = true;
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void Detector::opened(index::NodeId id, uint32_t pid) {
    bool first;
    {
        std::lock_guard lk(mu_);
        if (queue_.size() >= max_queue) {
            ++dropped_;
            return;
        }
        first = queue_.empty();
        queue_.emplace_back(id, pid);
    }
    // Only the first open of a batch wakes the thread; the rest are taken
    // with it (a wake-up per open cost more daemon CPU than the open).
    if (first) cv_.notify_one();
}

void Detector::reset() {
    {
        std::lock_guard lk(mu_);
        reset_ = true;
        queue_.clear();
    }
    cancel_ = true;
    cv_.notify_one();
}

void Detector::run() {
    // Searches are an optimisation: the job's own processes go first where
    // the scheduler compares threads (the chain search runs for seconds).
    // Failing that, the CPU share still bounds them.
    setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
    std::deque<std::pair<index::NodeId, uint32_t>> batch;
    uint64_t judged_at = 0;
    for (;;) {
        bool was_reset = false;
        if (!next_batch(batch, was_reset)) return;
        if (was_reset) {
            start_over();
            judged_at = 0;
        }
        if (broken_) {
            batch.clear();
            continue;
        }
        if (registered_ && detected_job_over()) {
            batch.clear();
            reset();
            continue;
        }
        take(batch);
        // A hypothesis is rechecked every few opens (each recheck computes
        // its permutation as far as the opens reach).
        // A search the budget deferred runs once the budget allows it,
        // whether or not more opens came: a tf.data job gated at its
        // epoch's end opens nothing until it is detected (prefetch_keras
        // failed in CI on a search deferred 4 s and then never run).
        if (opens_ < judged_at + (pending_ ? 8 : 1) && work_due_in_s() > 0) continue;
        judged_at = opens_;
        judge();
    }
}

// Waits for opens and takes them into `batch`; false once stopped.
bool Detector::next_batch(std::deque<std::pair<index::NodeId, uint32_t>>& batch,
                          bool& was_reset) {
    std::unique_lock lk(mu_);
    // Woken by opens; once a second regardless, to notice a detected job
    // that fell back; at once while a chain search has a slice due, or
    // when a deferred search may run.
    cv_.wait_for(lk, std::chrono::duration<double>(std::min(1.0, work_due_in_s())),
                 [&] { return stop_ || reset_ || !queue_.empty(); });
    // Let the batch gather: the opens that follow within a few
    // milliseconds come with this one.
    if (!queue_.empty() && !stop_ && !reset_)
        cv_.wait_for(lk, std::chrono::duration<double>(opt_.gather_s),
                     [&] { return stop_ || reset_; });
    if (stop_) return false;
    was_reset = std::exchange(reset_, false);
    batch.swap(queue_);
    if (was_reset && !broken_) st_.state = "watching";
    return true;
}

// After reset(): every process, candidate and search forgotten.
void Detector::start_over() {
    procs_.clear();
    replay_opens_ = 0;
    candidates_.clear();
    pending_.reset();
    chain_.search.reset();
    chain_.over = false;
    chain_.burst_left_s = opt_.cpu_share * opt_.chain_burst_window_s;
    taken_roots_.clear();
    detected_jobs_ = 0;
    {
        std::lock_guard lk(mu_);
        st_.chain_state.clear();
    }
    end_deferral(); // what was due is forgotten with its processes
    registered_ = false;
    opens_ = opens_at_search_ = epoch_worth_ = 0;
    tf_evidence_ = tf_evidence_opens;
    tf_due_at_ = 0;
    searched_pids_.clear();
}

// The registered detected job is the trackers' now; once that is over (it
// fell back, or the job exited), detection starts over: the next job may
// be another. Meanwhile the opens of files no detected job covers still
// come (a validation loader beside a training one).
bool Detector::detected_job_over() {
    if (!drop_finished_ || !drop_finished_()) return false;
    LOG_INFO("the detected job is over (it exited or stopped matching its opens) "
             "and was dropped; watching for a job again");
    return true;
}

// A failure in here must not take the mount with it: detection is an
// optimisation, and the mount serves on without it.
void Detector::judge() {
    auto why = sys::contained("detecting the job", [&] { round(); });
    if (why.empty()) return;
    LOG_WARN("job detection stopped: %s", why.c_str());
    broken_ = true; // never again this mount
    std::lock_guard lk(mu_);
    st_.state = "off";
    st_.last_result = "stopped by an internal error: " + why;
}

void Detector::forget(std::map<uint32_t, Process>::iterator it) {
    replay_opens_ -= it->second.later.size();
    procs_.erase(it);
}

void Detector::take(std::deque<std::pair<index::NodeId, uint32_t>>& batch) {
    for (auto [id, pid] : batch) {
        auto it = procs_.find(pid);
        if (it == procs_.end()) {
            if (procs_.size() >= max_processes)
                forget(std::min_element(procs_.begin(), procs_.end(),
                                        [](const auto& a, const auto& b) {
                                            return a.second.last < b.second.last;
                                        }));
            it = procs_.emplace(pid, Process{}).first;
        }
        Process& p = it->second;
        if (p.opens.size() < max_opens_per_process) {
            p.opens.push_back(id);
            p.seq.push_back(opens_);
        } else if (!p.overflowed && replay_opens_ < max_replay_opens) {
            p.later.emplace_back(opens_, id);
            ++replay_opens_;
        } else if (!p.overflowed) {
            p.overflowed = true;
            replay_opens_ -= p.later.size();
            p.later = {};
        }
        p.last = opens_++;
    }
    batch.clear();
}

namespace {

// The deepest directory above every one of `dirs` (not empty).
index::NodeId common_dir(const index::Index& idx, const std::set<index::NodeId>& dirs) {
    auto chain = [&](index::NodeId d) {
        std::vector<index::NodeId> up{d};
        while (d != index::root_id) up.push_back(d = idx.node(d).parent);
        std::reverse(up.begin(), up.end()); // root first
        return up;
    };
    std::vector<index::NodeId> common = chain(*dirs.begin());
    for (index::NodeId d : dirs) {
        std::vector<index::NodeId> c = chain(d);
        size_t k = 0;
        while (k < common.size() && k < c.size() && common[k] == c[k]) ++k;
        common.resize(k);
    }
    return common.back();
}

// The directories a job whose files are in `parents` may have taken as
// its dataset: ImageFolder's root is the deepest directory above the class
// directories; a flat directory is a sorted listing.
void roots_of(const index::Index& idx, const std::set<index::NodeId>& parents,
              std::vector<std::pair<std::string, layout::LayoutKind>>& out) {
    const index::NodeId deepest = common_dir(idx, parents);
    auto path = [&](index::NodeId d) {
        std::string s;
        idx.relative_path(d, s);
        return s;
    };
    auto up = [&](index::NodeId d) { return idx.node(d).parent; };
    using K = layout::LayoutKind;
    std::vector<std::pair<std::string, K>> mine;
    if (parents.size() == 1) {
        // Every open in one directory: a class directory of a job that has
        // not left it yet (sequential), or a flat dataset.
        if (deepest != index::root_id) mine.emplace_back(path(up(deepest)), K::imagefolder);
        mine.emplace_back(path(deepest), K::sorted);
    } else {
        mine.emplace_back(path(deepest), K::imagefolder);
        if (deepest != index::root_id) mine.emplace_back(path(up(deepest)), K::imagefolder);
        mine.emplace_back(path(deepest), K::sorted);
    }
    for (auto& r : mine)
        if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(std::move(r));
}

} // namespace

// Loaders that read apart (a training loader over train/, a validation
// loader over val/ beside it) are told apart first: each process goes with
// the directory, just below the one common to every open, that its own
// opens stay in, and each such group's roots are found as one, the group
// with the most opens first. Without that, train/ and val/ read together
// made only their parent a candidate, in whose numbering neither fits.
std::vector<std::pair<std::string, layout::LayoutKind>> Detector::roots() const {
    std::set<index::NodeId> all;
    for (const auto& [pid, p] : procs_)
        for (index::NodeId id : p.opens) all.insert(idx_.node(id).parent);
    if (all.empty()) return {};
    const index::NodeId top = common_dir(idx_, all);
    struct Group {
        std::set<index::NodeId> parents;
        size_t opens = 0;
    };
    std::map<index::NodeId, Group> groups;
    for (const auto& [pid, p] : procs_) {
        if (p.opens.empty()) continue;
        std::set<index::NodeId> mine;
        for (index::NodeId id : p.opens) mine.insert(idx_.node(id).parent);
        // The child of `top` on the way down to this process's directory.
        index::NodeId key = common_dir(idx_, mine);
        while (key != top && idx_.node(key).parent != top) key = idx_.node(key).parent;
        Group& g = groups[key];
        g.parents.insert(mine.begin(), mine.end());
        g.opens += p.opens.size();
    }
    std::vector<const Group*> order;
    for (const auto& [key, g] : groups) order.push_back(&g);
    std::stable_sort(order.begin(), order.end(),
                     [](const Group* a, const Group* b) { return a->opens > b->opens; });
    std::vector<std::pair<std::string, layout::LayoutKind>> out;
    for (const Group* g : order) roots_of(idx_, g->parents, out);
    // And the whole: one loader may read both (an ImageFolder over the
    // parent of train/ and val/).
    if (groups.size() > 1) roots_of(idx_, all, out);
    std::erase_if(out, [this](const auto& r) { return overlaps_taken(r.first); });
    return out;
}

namespace {

// Whether path a is b or below it ("" is the top).
bool under(const std::string& a, const std::string& b) {
    return b.empty() || a == b || (a.size() > b.size() && a.starts_with(b) && a[b.size()] == '/');
}

} // namespace

bool Detector::overlaps_taken(const std::string& root) const {
    return std::ranges::any_of(taken_roots_, [&](const std::string& t) {
        return under(root, t) || under(t, root);
    });
}

// Whether every open of `p` lies below one of `roots` (a detected job's:
// its trackers have them, and no search is owed to them).
bool Detector::only_under(const Process& p, const std::vector<std::string>& roots) const {
    std::string path;
    return std::ranges::all_of(p.opens, [&](index::NodeId id) {
        path.clear();
        idx_.relative_path(id, path);
        return std::ranges::any_of(roots, [&](const std::string& t) { return under(path, t); });
    });
}

const Detector::Candidate& Detector::candidate(const std::string& root, layout::LayoutKind kind) {
    for (const Candidate& c : candidates_)
        if (c.root == root && c.kind == kind) return c;
    auto ds = std::make_shared<layout::Dataset>();
    std::shared_ptr<std::vector<order::Sample>> sample_of;
    if (auto why = layout::build_dataset(idx_, root, kind, "", *ds);
        !why.empty() || ds->samples.empty() || ds->samples.size() >= order::not_a_sample) {
        ds.reset();
    } else if (std::ranges::any_of(candidates_, [&](const Candidate& c) {
                   return c.dataset && same_files(idx_, *c.dataset, *ds);
               })) {
        ds.reset(); // another layout numbers the same files alike: searched already
    } else {
        sample_of = std::make_shared<std::vector<order::Sample>>(idx_.size(), order::not_a_sample);
        for (size_t i = 0; i < ds->samples.size(); ++i) {
            index::NodeId node = layout::opened_node(idx_, ds->samples[i]);
            // A file opened under two names counts as its first sample.
            if (idx_.contains(node) && (*sample_of)[node] == order::not_a_sample)
                (*sample_of)[node] = static_cast<order::Sample>(i);
        }
    }
    candidates_.push_back({root, kind, std::move(ds), std::move(sample_of)});
    return candidates_.back();
}

std::vector<order::ProcessOpens> Detector::opens_in(const std::vector<order::Sample>& sample_of) const {
    std::vector<order::ProcessOpens> out;
    for (const auto& [pid, p] : procs_) {
        order::ProcessOpens po{pid, {}};
        // Files outside the candidate dataset are not the loader's samples.
        for (index::NodeId id : p.opens)
            if (order::Sample s = sample_of[id]; s != order::not_a_sample) po.samples.push_back(s);
        if (!po.samples.empty()) out.push_back(std::move(po));
    }
    return out;
}

void Detector::round() {
    if (pending_) {
        auto procs = opens_in(*pending_->sample_of);
        auto n = static_cast<uint32_t>(pending_->dataset->samples.size());
        auto now = order::recheck_job(n, pending_->job, procs);
        if (!now) {
            LOG_DEBUG("the job found stopped explaining the opens; searching again");
            pending_.reset();
            std::lock_guard lk(mu_);
            st_.state = "watching";
            st_.last_result = "a job was found but the next opens did not follow it";
        } else {
            pending_->job = *now;
            LOG_DEBUG("job detection: confirming, %llu opens of the fewest rank predicted",
                      static_cast<unsigned long long>(now->fewest));
            if (confirmed(*now, opt_.accept_opens)) accept(*now);
            return;
        }
    }
    // Due, and paid for by the budget, or deferred until it is (the same
    // evidence and more is searched then). Short of a search that ran and
    // found its job, the chain search takes its slice: its burst is its own.
    if (search_due()) {
        if (!deferred() && search()) return;
    } else {
        // Nothing is due any more (its processes were forgotten for newer
        // ones): no deferred search to wake for.
        end_deferral();
    }
    if (chain_wait_s() == 0) chain_slice();
}

void Detector::end_deferral() {
    if (!deferring_) return;
    std::lock_guard lk(mu_);
    deferring_ = false;
    st_.deferred_until = 0;
}

// Whether the search due waits for the budget; said once per deferral.
bool Detector::deferred() {
    const double now = now_s();
    if (budget_.allows(now)) {
        end_deferral();
        return false;
    }
    const double wait = budget_.wait_s(now);
    bool first;
    {
        std::lock_guard lk(mu_);
        first = !deferring_;
        if (first) ++st_.deferred;
        deferring_ = true;
        st_.deferred_until = now + wait;
    }
    if (first)
        LOG_DEBUG("job detection: a search is due but waits %.0f s: searches used their "
                  "share of the CPU (%g%% of one core)", std::ceil(wait), opt_.cpu_share * 100);
    return true;
}

// Once per generation of loader processes, or per epoch's worth of opens
// (a persistent or single loader process goes on into its next epoch): a
// search that failed is not repeated on the same evidence. A search needs
// a process with as many opens as a hypothesis must place
// (DetectOptions::min_evidence).
bool Detector::search_due() const {
    const size_t needed = opt_.search.min_evidence;
    bool fresh = false, enough = false;
    for (const auto& [pid, p] : procs_) {
        if (p.opens.size() >= needed) enough = true;
        if (p.opens.size() >= needed &&
            !std::binary_search(searched_pids_.begin(), searched_pids_.end(), pid))
            fresh = true;
    }
    const uint64_t epoch_worth = epoch_worth_ ? epoch_worth_ : 1 << 20;
    if (!enough || opens_ < 16) return false;
    return fresh || opens_ - opens_at_search_ >= epoch_worth || (tf_due_at_ && opens_ >= tf_due_at_);
}

// Seconds until a chain slice may run: 0 now; a day if none is running.
double Detector::chain_wait_s() const {
    if (!chain_.search || pending_ || broken_) return never_due_s;
    if (chain_.burst_left_s > 0) return 0;
    // Paid from the searches' share once the burst is spent, and only from
    // the top half of the account: a search due (new processes, a new
    // epoch) finds room at once, and costs milliseconds when it finds a
    // job the chain would have taken hours more to. The account refills in
    // time, so only a copy of it is read here.
    SearchBudget b = budget_;
    return b.wait_until_s(0.5, now_s());
}

double Detector::deferred_wait_s() const {
    if (!deferring_ || pending_ || broken_) return never_due_s;
    SearchBudget b = budget_; // refilling is the search's to do; a copy is read
    return b.wait_s(now_s());
}

double Detector::work_due_in_s() const {
    return std::min(chain_wait_s(), deferred_wait_s());
}

void Detector::chain_slice() {
    const bool burst = chain_.burst_left_s > 0;
    std::vector<const Candidate*> used;
    std::vector<std::vector<order::ProcessOpens>> opens;
    std::vector<order::ChainTarget> targets = chain_targets(used, opens);
    cancel_ = false;
    const double cpu0 = thread_cpu_seconds();
    order::DetectStats stats;
    auto found =
        chain_.search->step(targets, opt_.chain_slice, opt_.search.min_evidence, stats, &cancel_);
    pay_for_slice(burst, thread_cpu_seconds() - cpu0);
    if (found) return chain_found(*found, *used[found->target]);
    if (chain_.search->done()) {
        end_chain("no job along the global chains of " + std::to_string(chain_.search->seeds()) +
                  " seeds (" + std::to_string(chain_.search->words()) +
                  " words each) explains the opens");
    }
}

// Every candidate dataset with the opens in it: `used[i]` and `opens[i]`
// are what target i points into.
std::vector<order::ChainTarget>
Detector::chain_targets(std::vector<const Candidate*>& used,
                        std::vector<std::vector<order::ProcessOpens>>& opens) {
    // Every candidate built first: building one may move the others.
    const auto rs = roots();
    for (const auto& [r, k] : rs) candidate(r, k);
    for (const auto& [r, k] : rs) {
        const Candidate& c = candidate(r, k);
        if (!c.dataset) continue;
        used.push_back(&c);
        opens.push_back(opens_in(*c.sample_of));
    }
    std::vector<order::ChainTarget> targets;
    for (size_t i = 0; i < used.size(); ++i)
        targets.push_back({static_cast<uint32_t>(used[i]->dataset->samples.size()), opens[i]});
    return targets;
}

// A slice's CPU, from the burst while it lasts, else from the budget.
void Detector::pay_for_slice(bool burst, double cpu) {
    if (burst) {
        chain_.burst_left_s -= cpu;
        chain_.burst_spent_s += cpu;
    } else
        budget_.spend(cpu, now_s());
    std::lock_guard lk(mu_);
    st_.chain_scanned = chain_.search->scanned();
    st_.chain_cpu_s += cpu;
    st_.search_cpu_total_s = budget_.spent_s() + chain_.burst_spent_s;
    st_.chain_state = "searching";
    // Searching while its burst lasts; then it goes on at the share of
    // the CPU searches keep to, while detection watches for new evidence.
    if (st_.state == "searching" || st_.state == "watching")
        st_.state = chain_.burst_left_s > 0 ? "searching" : "watching";
}

void Detector::chain_found(const order::ChainFound& found, const Candidate& c) {
    char what[200];
    std::snprintf(what, sizeof what,
                  "found a %s job: manual_seed(%llu), the sampler's seed %llu words down "
                  "its chain; confirming",
                  order::detected_sampler_name(found.job.sampler),
                  static_cast<unsigned long long>(found.job.seed),
                  static_cast<unsigned long long>(found.job.draw_offset));
    {
        std::lock_guard lk(mu_);
        st_.state = "confirming";
        st_.chain_state = "found";
        st_.last_result = what;
    }
    LOG_DEBUG("job detection: %s", what);
    pending_ = std::make_unique<Pending>(
        Pending{found.job, c.root, c.kind, c.dataset, c.sample_of, true});
    if (confirmed(found.job, opt_.accept_opens)) accept(found.job);
}

void Detector::end_chain(const std::string& why) {
    chain_.search.reset();
    chain_.over = true;
    candidates_.clear();
    {
        std::lock_guard lk(mu_);
        st_.chain_state = "not found";
        if (!why.empty() && st_.state == "watching") st_.last_result = why;
    }
    if (!why.empty()) LOG_DEBUG("job detection: %s", why.c_str());
}

bool Detector::search() {
    const auto rs = roots();
    if (rs.empty()) {
        // Every open lies below a detected job's root: nothing to search.
        note_searched();
        opens_at_search_ = opens_;
        return false;
    }
    {
        std::lock_guard lk(mu_);
        st_.state = "searching";
    }
    cancel_ = false;
    double cpu0 = thread_cpu_seconds();
    order::DetectStats stats;
    std::unique_ptr<Pending> found = search_torch(rs, stats);
    // No torch loader explains the opens: perhaps a tf.data pipeline
    // (control/tf_detection.hpp), paid from the same budget.
    TfAttempt tf;
    if (!found) tf = search_tf(rs);
    double cpu = thread_cpu_seconds() - cpu0;
    budget_.spend(cpu, now_s());
    for (const Candidate& c : candidates_)
        if (c.dataset) epoch_worth_ = std::max<uint64_t>(epoch_worth_, c.dataset->samples.size());
    // A found job's dataset lives on in pending_; a chain search (begun
    // below) reads the same ones slice after slice.
    if (found || chain_.over) candidates_.clear();
    note_searched();
    report_search(found ? &found->job : nullptr, stats, tf, cpu);
    if (!found) return found_none(tf);
    const order::DetectedJob job = found->job; // accept() lets pending_ go
    pending_ = std::move(found);
    // The opens seen while the search ran may confirm it already (a fast
    // epoch ends before a slow search does, and no later open may come).
    if (confirmed(job, opt_.accept_opens)) accept(job);
    return true;
}

// The first candidate whose opens a torch loader explains, as the job to
// confirm; null if none.
std::unique_ptr<Detector::Pending>
Detector::search_torch(std::span<const std::pair<std::string, layout::LayoutKind>> roots,
                       order::DetectStats& stats) {
    for (const auto& [r, k] : roots) {
        const Candidate& c = candidate(r, k);
        if (!c.dataset) continue;
        auto procs = opens_in(*c.sample_of);
        if (auto found = order::detect_job(static_cast<uint32_t>(c.dataset->samples.size()),
                                           procs, opt_.search, stats))
            return std::make_unique<Pending>(
                Pending{*found, r, k, c.dataset, c.sample_of, false});
    }
    return nullptr;
}

// A search failed is not repeated on the same processes (search_due).
void Detector::note_searched() {
    searched_pids_.clear();
    for (const auto& [pid, p] : procs_) searched_pids_.push_back(pid); // std::map: sorted
}

// The search's outcome, for status and the log.
void Detector::report_search(const order::DetectedJob* found, const order::DetectStats& stats,
                             const TfAttempt& tf, double cpu) {
    std::string said; // logged after the lock: no lock is held across I/O
    {
        std::lock_guard lk(mu_);
        ++st_.searches;
        st_.search_cpu_s = cpu;
        st_.search_cpu_total_s = budget_.spent_s() + chain_.burst_spent_s;
        if (!found) {
            st_.state = "watching";
            st_.last_result = "no job explains the opens of " + std::to_string(procs_.size()) +
                           " processes (" + std::to_string(stats.candidates + tf.candidates) +
                           " candidates)";
            if (tf.opens_needed)
                st_.last_result += "; a tf.data pipeline fits so far, judged again at " +
                                std::to_string(tf.opens_needed) + " files opened";
        } else {
            st_.state = "confirming";
            st_.last_result = std::string("found a ") +
                              order::detected_sampler_name(found->sampler) + " job after " +
                              std::to_string(stats.candidates) + " candidates; confirming";
        }
        said = st_.last_result;
    }
    LOG_DEBUG("job detection: %s in %.3f s", said.c_str(), cpu);
}

// No torch job found: a tf.data job registered if one was, else the next
// search planned, and perhaps the chain search begun. True if a job went live.
bool Detector::found_none(const TfAttempt& tf) {
    opens_at_search_ = opens_;
    if (tf.found) return accept_tf(*tf.found);
    // A tf.data pipeline fits but its opens are still too few to tell
    // it from chance: search again once they may suffice, not an
    // epoch's worth of opens later.
    // (opens_at_search_ cannot say so: a search is due an epoch's
    // worth after it, and opens_ + needed may be less than that.)
    tf_due_at_ = tf.opens_needed ? std::max<uint64_t>(opens_ + 1, tf.opens_needed) : 0;
    // ... on that many of the first opens.
    if (tf.opens_needed)
        tf_evidence_ = std::clamp<size_t>(tf.opens_needed, tf_evidence_opens, 4 * tf_evidence_opens);
    // A shuffle=True loader without a generator of its own: its seed
    // is somewhere down a global chain; searched deep, slice by slice.
    // Not while a tf.data pipeline fits (most likely no torch loader;
    // if the fit was chance, the search at those opens says so, and the
    // chain starts then).
    if (!chain_.search && !chain_.over && !opt_.search.seeds.empty() && !tf.opens_needed)
        begin_chain();
    return false;
}

void Detector::begin_chain() {
    // Word 3 at the least: a DataLoader's iterator draws its base
    // seed (two words) and the seed's high word before it.
    chain_.search = std::make_unique<order::ChainDetect>(opt_.search.seeds, 3, opt_.chain_words);
    std::lock_guard lk(mu_);
    st_.chain_state = "searching";
    st_.chain_words = chain_.search->words();
    st_.chain_seeds = chain_.search->seeds();
    if (chain_.burst_left_s > 0) st_.state = "searching";
    st_.last_result +=
        "; searching the global chains of " + std::to_string(st_.chain_seeds) + " seeds";
}

TfAttempt Detector::search_tf(std::span<const std::pair<std::string, layout::LayoutKind>> roots) {
    OpenedNodes opened;
    for (const auto& [pid, p] : procs_) opened.emplace_back(pid, p.opens);
    // The files opened first, in the order they were, across processes
    // (tf.data's threads are shared: which one opens a file says nothing
    // of which iterator it serves).
    std::vector<std::pair<uint64_t, index::NodeId>> all;
    for (const auto& [pid, p] : procs_)
        for (size_t i = 0; i < p.opens.size(); ++i) all.emplace_back(p.seq[i], p.opens[i]);
    std::sort(all.begin(), all.end());
    std::vector<index::NodeId> first;
    for (const auto& [seq, id] : all) {
        if (first.size() >= tf_evidence_) break;
        first.push_back(id);
    }
    std::vector<std::string> dirs;
    for (const auto& [r, k] : roots) dirs.push_back(r);
    return detect_tf_pipeline(idx_, dirs, opened, first, opt_.search);
}

// As accept(), for the registration a tf.data search built: its evidence
// bound stands in for the confirmation a torch job waits for.
bool Detector::accept_tf(const TfDetection& tf) {
    // Its evidence bound stands in for the confirmation a torch job waits for.
    const bool ok = register_detected(tf.job, tf.pids, "a tensorflow job",
                                      "detected a tensorflow job, " + tf.what +
                                          ": its threads opened " + std::to_string(tf.opens) +
                                          " files where it predicts");
    return ok;
}

// Registers a job found (a torch loader confirmed, a tf.data pipeline),
// telling its trackers the opens of the processes it claims, each
// process's in its order (a tracker follows every worker's stream on its
// own), then the opens queued while this thread searched and confirmed:
// taken by the engine as the job goes live, so none falls between
// detection and the job's trackers (a worker that skipped 16 opens would
// not be followed again before its next epoch). They stay queued for this
// thread too: other processes' opens among them may be another loader's.
bool Detector::register_detected(JobRegistration job, std::span<const uint32_t> pids,
                                 const std::string& what, const std::string& said_ok) {
    // A job beside one detected already is one of its own; the first keeps
    // the default name a written registration would have.
    if (detected_jobs_ > 0) job.id = "detected-" + std::to_string(detected_jobs_ + 1);
    std::string why = apply_(job, claimed_opens(job, pids), [this] {
        Opens late;
        std::lock_guard lk(mu_);
        late.assign(queue_.begin(), queue_.end());
        return late;
    });
    const bool ok = why.empty();
    if (ok)
        went_live(job, pids);
    else
        opens_at_search_ = opens_;
    const std::string said = ok ? said_ok : "found " + what + " but could not register it: " + why;
    {
        std::lock_guard lk(mu_);
        st_.state = ok ? "detected" : "watching";
        st_.last_result = said;
        if (ok) st_.opens_at_detection = opens_;
    }
    if (ok)
        LOG_INFO("job detection: %s", said.c_str());
    else
        LOG_WARN("job detection: %s", said.c_str());
    return ok;
}

// The opens to tell `job`'s trackers, in the order they came: each
// process's own order, and tf.data's threads' opens interleaved as its
// iterators made them. With them the opens of processes the job covers but
// did not need as evidence: a next epoch's workers that began while the
// search and confirmation ran (their opens taken from the queue, in no
// other list: lost, the job's trackers would miss that epoch's start and
// fall back).
Detector::Opens Detector::claimed_opens(const JobRegistration& job,
                                        std::span<const uint32_t> pids) const {
    std::vector<std::string> roots;
    for (const Registration& r : job.loaders) roots.push_back(r.root);
    // Not those that began before the job's evidence did: an earlier
    // epoch's workers, seen from the middle of their epoch (detection
    // started over there, after a job was dropped) and searched in vain.
    // The job begins at the epoch its evidence is, so told first, their
    // opens read as a next epoch that fits no seed, and the job fell back
    // as it went live (tests/unit/control/test_late_detection.cpp).
    uint64_t begun = UINT64_MAX;
    for (uint32_t pid : pids)
        if (auto it = procs_.find(pid); it != procs_.end() && !it->second.seq.empty())
            begun = std::min(begun, it->second.seq.front());
    std::vector<uint32_t> claimed(pids.begin(), pids.end());
    for (const auto& [pid, p] : procs_)
        if (std::ranges::find(pids, pid) == pids.end() && !p.opens.empty() &&
            p.seq.front() > begun && only_under(p, roots))
            claimed.push_back(pid);
    std::vector<std::tuple<uint64_t, index::NodeId, uint32_t>> timed;
    for (uint32_t pid : claimed) {
        auto it = procs_.find(pid);
        if (it == procs_.end() || it->second.overflowed) continue;
        const Process& p = it->second;
        for (size_t i = 0; i < p.opens.size(); ++i) timed.emplace_back(p.seq[i], p.opens[i], pid);
        for (auto [seq, id] : p.later) timed.emplace_back(seq, id, pid);
    }
    std::sort(timed.begin(), timed.end());
    Opens mine;
    for (const auto& [seq, id, pid] : timed) mine.emplace_back(id, pid);
    return mine;
}

// `job` is registered: its processes' opens are its trackers' now, and so
// are those of the processes whose opens it covers without having needed
// them as evidence (tf.data threads that began the next iterator):
// searched again, they would find nothing and say so.
void Detector::went_live(const JobRegistration& job, std::span<const uint32_t> pids) {
    registered_ = true;
    ++detected_jobs_;
    for (const Registration& r : job.loaders) taken_roots_.push_back(r.root);
    for (uint32_t pid : pids)
        if (auto it = procs_.find(pid); it != procs_.end()) forget(it);
    for (auto it = procs_.begin(); it != procs_.end();) {
        auto at = it++;
        if (only_under(at->second, taken_roots_)) forget(at);
    }
    searched_pids_.clear();
    candidates_.clear();
}

JobRegistration Detector::registration(const order::DetectedJob& j) const {
    Registration reg;
    reg.root = pending_->root;
    reg.layout = pending_->kind;
    reg.layout_given = true;
    reg.ranks = j.ranks;
    order::JobSpec& s = reg.spec;
    s.epochs = unlimited_epochs;
    s.world_size = j.world;
    s.batch_size = j.batch;
    s.num_workers = j.workers;
    switch (j.sampler) {
    case order::DetectedSampler::distributed:
        s.sampler = order::SamplerKind::distributed;
        seed_and_epoch(j.seed, opt_.search, s);
        break;
    case order::DetectedSampler::random_explicit:
        s.sampler = order::SamplerKind::random;
        s.generator = order::GeneratorKind::explicit_;
        s.seed = j.seed;
        break;
    case order::DetectedSampler::random_global:
        // Epoch 0's seed word follows the words drawn before the loop, the
        // iterator's base_seed (two) and the seed's high word.
        s.sampler = order::SamplerKind::random;
        s.generator = order::GeneratorKind::global;
        s.seed = j.seed;
        s.pre_draws = j.draw_offset >= 3 ? j.draw_offset - 3 : 0;
        break;
    case order::DetectedSampler::sequential:
        if (j.world > 1) {
            s.sampler = order::SamplerKind::distributed;
            s.shuffle = false;
        } else {
            s.sampler = order::SamplerKind::sequential;
        }
        break;
    }
    JobRegistration job;
    job.loaders.push_back(std::move(reg));
    return job;
}

void Detector::accept(const order::DetectedJob& j) {
    JobRegistration job = registration(j);
    const bool from_chain = pending_->from_chain;
    pending_.reset();
    const bool ok = register_detected(
        std::move(job), j.pids, "a job",
        std::string("detected a ") + order::detected_sampler_name(j.sampler) +
            " job: its loaders opened " + std::to_string(j.opens) + " files where it predicts");
    // The chain search found it: nothing is left for it to find.
    if (ok && from_chain) {
        chain_.search.reset();
        chain_.over = true;
    }
}

void Detector::status(nlohmann::json& out) const {
    std::lock_guard lk(mu_);
    nlohmann::json d;
    d["state"] = st_.state;
    d["searches"] = st_.searches;
    d["search_cpu_seconds"] = st_.search_cpu_s;
    d["search_cpu_total_seconds"] = st_.search_cpu_total_s;
    d["cpu_share"] = opt_.cpu_share;
    d["searches_deferred"] = st_.deferred;
    // A search due but waiting for the budget: how long it still waits.
    d["next_search_in_seconds"] =
        deferring_ ? nlohmann::json(std::max(0.0, std::ceil(st_.deferred_until - now_s())))
                   : nlohmann::json(nullptr);
    d["result"] =
        st_.last_result.empty() ? nlohmann::json(nullptr) : nlohmann::json(st_.last_result);
    d["opens_dropped"] = dropped_;
    // The deep search along the listed seeds' global chains, once begun.
    if (!st_.chain_state.empty())
        d["chain_search"] = {{"state", st_.chain_state},       {"seeds", st_.chain_seeds},
                             {"scanned", st_.chain_scanned},   {"words", st_.chain_words},
                             {"cpu_seconds", st_.chain_cpu_s}};
    d["opens_at_detection"] = st_.state == "detected" ? nlohmann::json(st_.opens_at_detection)
                                                   : nlohmann::json(nullptr);
    out["detection"] = std::move(d);
}

} // namespace clairfs::control
