// SPDX-License-Identifier: MIT
// The modelled parts: resources as queues. A request reserves each
// resource it needs from the moment it is issued, first come first
// served, for its bytes over the resource's bandwidth; events are handled
// in time order, so reservations are made in the order requests arrive.
// Throughput is capped exactly at each bandwidth; a request's latency is
// the queue ahead of it plus its own transfer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace clairfs::sim {

// One FIFO server: the time it is next free.
struct Server {
    double free_at = 0;
    // Occupies the server for `busy` seconds from `t` or when it is free;
    // returns when that ends.
    double reserve(double t, double busy) {
        double start = std::max(t, free_at);
        free_at = start + busy;
        return free_at;
    }
};

// `cores` servers side by side (CPU cores): each job goes to the one free
// first.
class CorePool {
public:
    explicit CorePool(uint32_t cores) {
        for (uint32_t i = 0; i < cores; ++i) free_.push(0.0);
    }
    double reserve(double t, double busy) {
        double f = free_.top();
        free_.pop();
        double end = std::max(t, f) + busy;
        free_.push(end);
        return end;
    }

private:
    std::priority_queue<double, std::vector<double>, std::greater<>> free_;
};

} // namespace clairfs::sim
