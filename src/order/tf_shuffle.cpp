// SPDX-License-Identifier: MIT
#include "clairfs/order/tf_shuffle.hpp"

#include "clairfs/order/philox.hpp"

#include <algorithm>
#include <utility>

namespace clairfs::order {

// While the input is shorter than the buffer, positions never wrap, so a
// ring of min(buffer_size, n) slots indexes exactly as TF's does.
void TfShuffle::run(std::span<const Sample> input, uint64_t buffer_size, const TfSeeds& seeds,
                    size_t count, std::vector<Sample>& out) {
    const uint64_t n = input.size();
    const uint64_t size = std::max<uint64_t>(1, std::min(buffer_size, n));
    ring_.resize(size);
    PhiloxWords random(seeds.seed, seeds.seed2);
    uint64_t start = 0, end = 0, next = 0;
    auto refill = [&] {
        for (; end - start < size && next < n; ++end) ring_[end % size] = input[next++];
    };
    out.clear();
    out.reserve(std::min<uint64_t>(count, n));
    refill();
    while (start < end && out.size() < count) {
        uint64_t index = (start + random() % (end - start)) % size;
        out.push_back(ring_[index]);
        std::swap(ring_[index], ring_[start % size]);
        ++start;
        refill();
    }
}

} // namespace clairfs::order
