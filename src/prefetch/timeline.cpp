// SPDX-License-Identifier: MIT
#include "timeline.hpp"

#include <algorithm>

namespace clairfs::prefetch {
namespace {

// A loader has begun its current epoch once any rank opened a file of it.
bool started(const track::Snapshot& s) {
    return std::ranges::any_of(s.ranks, [](const auto& r) { return r.opened > 0; });
}

// The positions one rank of the loader has left of its current epoch.
uint64_t rest(const track::Snapshot& s) {
    uint64_t most = 0;
    for (const auto& r : s.ranks)
        if (r.current) most = std::max<uint64_t>(most, r.current->size() - r.frontier);
    return most;
}

// A pass of the loader that has not begun: its current epoch if nothing of
// it was opened yet, else the next one.
const plan::EpochPlan* upcoming(const track::Snapshot& s, const track::RankProgress& r) {
    return started(s) ? r.next.get() : r.current.get();
}

uint64_t pass_length(const track::Snapshot& s) {
    uint64_t most = 0;
    for (const auto& r : s.ranks)
        if (const plan::EpochPlan* p = upcoming(s, r)) most = std::max<uint64_t>(most, p->size());
    return most;
}

} // namespace

Timeline::Timeline(const std::vector<JobView>& jobs) {
    for (const JobView& job : jobs) add_job(job);
    at_.resize(segments_.size());
    for (size_t i = 0; i < segments_.size(); ++i) {
        at_[i] = segments_[i].from;
        heap_.emplace(segments_[i].base, i);
    }
}

Timeline::Timeline(const track::Snapshot& snap) : Timeline(std::vector<JobView>{{&snap}}) {}

// The loader opened last runs now: the rest of its epoch first, then each
// other loader's next pass in turn (in listed order, wrapping around), then
// its own next epoch.
void Timeline::add_job(const JobView& job) {
    if (job.empty()) return;
    size_t active = 0;
    for (size_t i = 1; i < job.size(); ++i)
        if (job[i]->last_match > job[active]->last_match) active = i;
    const track::Snapshot& a = *job[active];
    uint64_t t = rest(a);
    for (const auto& r : a.ranks)
        if (r.current) add_segment(r, r.current.get(), r.frontier, true, 0);
    uint64_t others = 0;
    for (size_t k = 1; k < job.size(); ++k) {
        const track::Snapshot& s = *job[(active + k) % job.size()];
        for (const auto& r : s.ranks) add_segment(r, upcoming(s, r), 0, false, t + others);
        others += pass_length(s);
    }
    // Then the running loader's next epoch, each rank's after its own rest
    // (a loader alone wraps onto itself).
    for (const auto& r : a.ranks)
        if (r.current) add_segment(r, r.next.get(), 0, false, r.current->size() - r.frontier + others);
}

void Timeline::add_segment(const track::RankProgress& r, const plan::EpochPlan* plan,
                           uint64_t from, bool skip_opened, uint64_t base) {
    if (plan && from < plan->size()) segments_.push_back({&r, plan, from, skip_opened, base});
}

bool Timeline::usable(const Segment& s, uint64_t p) const {
    if (s.skip_opened && s.rank->opened_at(p)) return false; // its open came already
    return s.plan->nodes[p] != layout::no_node;
}

bool Timeline::next(index::NodeId& out) {
    while (!heap_.empty()) {
        auto [time, i] = heap_.top();
        heap_.pop();
        const Segment& s = segments_[i];
        uint64_t p = at_[i]++;
        if (at_[i] < s.plan->size()) heap_.emplace(time + 1, i);
        if (!usable(s, p)) continue;
        out = s.plan->nodes[p];
        return true;
    }
    return false;
}

uint64_t Timeline::next_use(index::NodeId id) const {
    uint64_t best = UINT64_MAX;
    for (const Segment& s : segments_) {
        const plan::EpochPlan& e = *s.plan;
        if (id >= e.first_position.size()) continue;
        for (uint32_t p = e.position_at_or_after(id, static_cast<uint32_t>(s.from));
             p != plan::no_position; p = e.position_at_or_after(id, p + 1)) {
            if (s.skip_opened && s.rank->opened_at(p)) continue;
            best = std::min(best, s.base + (p - s.from));
            break;
        }
    }
    return best;
}

} // namespace clairfs::prefetch
