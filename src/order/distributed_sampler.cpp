// SPDX-License-Identifier: MIT
#include "clairfs/order/samplers.hpp"

#include <numeric>

namespace clairfs::order {

void distributed_sampler_epoch(uint32_t n, const JobSpec& s, uint64_t epoch,
                               std::vector<Sample>& perm, std::vector<Sample>& out) {
    const uint64_t world = s.world_size;
    // num_samples per replica: floor with drop_last, else ceil (padding).
    const uint64_t per_rank = s.sampler_drop_last ? n / world : (n + world - 1) / world;
    if (s.shuffle) {
        CpuGenerator g(s.seed + epoch); // torch: manual_seed(self.seed + self.epoch)
        randperm(n, g, s.torch_version, perm);
    } else {
        perm.resize(n);
        std::iota(perm.begin(), perm.end(), Sample{0});
    }
    // Padded index k is perm[k % n]; rank r takes k = r, r + world, ...
    out.resize(per_rank);
    for (uint64_t i = 0; i < per_rank; ++i) out[i] = perm[(s.rank + world * i) % n];
}

void apply_batching(std::vector<Sample>& order, uint32_t batch_size, bool drop_last) {
    if (drop_last) order.resize(order.size() - order.size() % batch_size);
}

} // namespace clairfs::order
