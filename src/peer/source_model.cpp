// SPDX-License-Identifier: MIT
#include "clairfs/peer/source_model.hpp"

#include <algorithm>

namespace clairfs::peer {

void SourceRate::end(double seconds, bool measured) {
    inflight_.fetch_sub(1, std::memory_order_relaxed);
    if (!measured) return;
    double old = mean_.load(std::memory_order_relaxed);
    // Racing updates may lose one sample's weight; the mean is a guide.
    double next = old < 0 ? seconds : old + (seconds - old) / 8;
    mean_.store(next, std::memory_order_relaxed);
    samples_.fetch_add(1, std::memory_order_relaxed);
}

namespace {

// Expected seconds until one more file from this source is done.
double finish(const SourceView& s) {
    double waves = 1.0 + static_cast<double>(s.inflight) / std::max(1u, s.parallel);
    return s.seconds_per_file * waves;
}

} // namespace

Choice choose_source(const SourceView& peer, const SourceView& backing) {
    if (peer.seconds_per_file < 0) return Choice::peer;
    if (backing.seconds_per_file < 0) return Choice::peer; // spare the shared file system
    return finish(backing) < finish(peer) ? Choice::backing : Choice::peer;
}

} // namespace clairfs::peer
