// SPDX-License-Identifier: MIT
#include "clairfs/order/worker_split.hpp"

#include <algorithm>

namespace clairfs::order {

void worker_stream(const std::vector<Sample>& epoch, uint32_t batch_size, uint32_t workers,
                   uint32_t w, std::vector<Sample>& out) {
    out.clear();
    uint32_t stride = std::max(workers, 1u);
    for (uint64_t start = uint64_t{w} * batch_size; start < epoch.size();
         start += uint64_t{stride} * batch_size) {
        uint64_t end = std::min<uint64_t>(start + batch_size, epoch.size());
        out.insert(out.end(), epoch.begin() + static_cast<ptrdiff_t>(start),
                   epoch.begin() + static_cast<ptrdiff_t>(end));
    }
}

} // namespace clairfs::order
