// SPDX-License-Identifier: MIT
#include "clairfs/order/samplers.hpp"

#include <algorithm>
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

uint64_t ranks_open(const JobSpec& s, uint32_t n) {
    const uint64_t world = std::max<uint32_t>(s.world_size, 1);
    uint64_t per_rank = s.sampler_drop_last ? n / world : (n + world - 1) / world;
    if (s.drop_last && s.batch_size > 0) per_rank -= per_rank % s.batch_size;
    return per_rank;
}

std::vector<uint32_t> distributed_first_opened(uint32_t n, const JobSpec& s,
                                               uint64_t seed_epoch, uint64_t ranks_open,
                                               std::vector<Sample>& perm) {
    const uint64_t world = std::max<uint32_t>(s.world_size, 1);
    std::vector<Sample> mine;
    JobSpec first = s;
    first.rank = 0;
    distributed_sampler_epoch(n, first, seed_epoch, perm, mine);
    // The padding (wrapped around without the sampler's drop_last)
    // repeats samples opened earlier in the epoch, so only first
    // occurrences count.
    const uint64_t used = std::min<uint64_t>(uint64_t{mine.size()} * world, ranks_open * world);
    std::vector<uint32_t> first_at(n, UINT32_MAX);
    for (uint64_t k = 0; k < used; ++k) {
        Sample x = perm[k % n];
        if (first_at[x] == UINT32_MAX) first_at[x] = static_cast<uint32_t>(k);
    }
    return first_at;
}

void apply_batching(std::vector<Sample>& order, uint32_t batch_size, bool drop_last) {
    if (drop_last) order.resize(order.size() - order.size() % batch_size);
}

} // namespace clairfs::order
