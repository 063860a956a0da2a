// SPDX-License-Identifier: MIT
#include "range_follow.hpp"

#include <algorithm>
#include <type_traits>
#include <xxhash.h>

namespace clairfs::prefetch {
namespace {

// The samples of a READ's first page: dozens only if they are tiny.
constexpr size_t max_candidates = 64;
constexpr size_t max_remembered = 4096; // processes
constexpr uint64_t page = 4096; // the kernel's READs start on page boundaries

} // namespace

RangeFollow::RangeFollow(const layout::Dataset& dataset)
    : dropped(dataset.ranges.size(), 0), dataset_(dataset),
      pushed_(std::make_unique<std::atomic<uint32_t>[]>(dataset.ranges.size())) {
    const auto n = static_cast<uint32_t>(dataset.ranges.size());
    static_assert(std::has_unique_object_representations_v<layout::ByteRange>,
                  "hashed as bytes: no padding");
    ranges_hash_ = XXH3_64bits(dataset.ranges.data(), n * sizeof(layout::ByteRange));
    for (uint32_t s = 0; s < n; ++s) by_file_[dataset.ranges[s].node].push_back(s);
    for (auto& [node, samples] : by_file_) {
        std::sort(samples.begin(), samples.end(), [&](uint32_t a, uint32_t b) {
            return dataset.ranges[a].offset < dataset.ranges[b].offset;
        });
        samples.shrink_to_fit();
    }
}

size_t RangeFollow::overlapping(index::NodeId node, uint64_t off, uint64_t size, uint32_t* out,
                                size_t max) const {
    auto it = by_file_.find(node);
    if (it == by_file_.end() || size == 0) return 0;
    const std::vector<uint32_t>& samples = it->second;
    // Ranges do not overlap (layout::build_ranges), so sorted by offset
    // they are sorted by end too: the first that ends after `off`.
    auto at = std::partition_point(samples.begin(), samples.end(), [&](uint32_t s) {
        const layout::ByteRange& r = dataset_.ranges[s];
        return r.offset + r.length <= off;
    });
    size_t k = 0;
    for (; at != samples.end() && k < max; ++at) {
        if (dataset_.ranges[*at].offset >= off + size) break;
        out[k++] = *at;
    }
    return k;
}

bool RangeFollow::all_dropped(index::NodeId node, uint64_t off, uint64_t size,
                              uint32_t tag) const {
    uint32_t in[max_candidates];
    size_t k = overlapping(node, off, size, in, max_candidates);
    // More samples in a page than looked at: keep the page.
    if (k == max_candidates) return false;
    for (size_t i = 0; i < k; ++i)
        if (dropped[in[i]] != tag) return false;
    return true;
}

bool RangeFollow::ended_at(index::NodeId node, uint64_t off) const {
    return std::find(ends_.begin(), ends_.end(), std::pair{node, off}) != ends_.end();
}

bool RangeFollow::continues(index::NodeId node, uint64_t off, uint64_t size) {
    std::lock_guard lk(last_mu_);
    bool found = ended_at(node, off);
    ends_[next_end_++ % ends_.size()] = {node, off + size};
    return found;
}

size_t RangeFollow::starts(index::NodeId node, uint64_t off, uint64_t size, uint32_t* out) const {
    size_t k = overlapping(node, off, std::min<uint64_t>(size, page - off % page), out,
                           max_candidates);
    size_t n = 0;
    for (size_t i = 0; i < k; ++i)
        if (range(out[i]).offset >= off) out[n++] = out[i];
    return n;
}

uint64_t RangeFollow::fit(const track::Tracker& tracker, index::NodeId node, uint64_t off,
                          uint64_t size, uint32_t pid, uint32_t ppid, Fit* where) {
    {
        std::lock_guard lk(last_mu_);
        if (ended_at(node, off)) return UINT64_MAX;
    }
    if (off < page) return UINT64_MAX;
    uint32_t cand[max_candidates];
    size_t k = starts(node, off, size, cand);
    uint64_t nearest = UINT64_MAX;
    for (size_t i = 0; i < k; ++i) {
        track::Tracker::Place at;
        if (uint64_t d = tracker.match_distance(cand[i], pid, ppid, false, &at); d < nearest) {
            nearest = d;
            if (where) *where = {cand[i], at};
        }
    }
    return nearest;
}

void RangeFollow::note(index::NodeId node, uint64_t off, uint64_t size) {
    continues(node, off, size);
}

track::Observation RangeFollow::observe(track::Tracker& tracker, index::NodeId node,
                                        uint64_t off, uint64_t size, uint32_t pid,
                                        uint32_t ppid, uint32_t* told, track::ObserveMode mode) {
    // The kernel's asynchronous readahead goes on where a READ of the file
    // ended, and so does a reader within its sample (an mmap's next page):
    // neither begins a sample that a reader wanted.
    if (continues(node, off, size)) return {};
    // A file's first page is where formats keep their headers (an LMDB's
    // meta pages, an HDF5 superblock, a .npy header), read at every open
    // of the file: a READ from offset 0 stands for no sample.
    if (off < page) return {};
    // A reader begins a sample at its first byte, and the kernel reads from
    // the page holding it: the samples that begin in the READ's first page
    // are what it may stand for. The kernel reads ahead after that page (a
    // 200-byte pread comes as a 16 KiB READ, over the next values).
    uint32_t cand[max_candidates];
    size_t k = starts(node, off, size, cand);
    if (k == 0) return {};
    // The match nearest its worker's cursor.
    uint32_t pick = UINT32_MAX;
    uint64_t nearest = UINT64_MAX;
    for (size_t i = 0; i < k; ++i)
        if (uint64_t d = tracker.match_distance(cand[i], pid, ppid,
                                                mode != track::ObserveMode::this_epoch);
            d < nearest) {
            nearest = d;
            pick = cand[i];
        }
    {
        std::lock_guard lk(last_mu_);
        auto it = last_.find(pid);
        uint32_t last = it == last_.end() ? UINT32_MAX : it->second;
        // Nothing fits: the READ is more of the process's last sample (not
        // told again), else a sample out of order (told: it counts against
        // the match rate, as an open would).
        if (pick == UINT32_MAX) {
            if (std::find(cand, cand + k, last) != cand + k) return {};
            pick = cand[0];
        } else if (pick == last) {
            return {};
        }
        if (last_.size() >= max_remembered) last_.clear();
        last_[pid] = pick;
    }
    if (told) *told = pick;
    (size <= page ? page_reads_ : other_reads_).fetch_add(1, std::memory_order_relaxed);
    return tracker.observe(pick, track::Clock::now(), pid, ppid, mode);
}

} // namespace clairfs::prefetch
