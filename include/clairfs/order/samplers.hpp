// SPDX-License-Identifier: MIT
// One epoch of each torch sampler (torch 1.13.1 semantics), as the list of
// indices its iterator yields, including the generator draws it makes even
// where nobody sees them.
#pragma once

#include "clairfs/order/job_spec.hpp"

namespace clairfs::order {

// RandomSampler.__iter__ run to StopIteration with generator `g`. Without
// replacement it draws num_samples / n full permutations plus one more, of
// which only num_samples % n items are used: torch computes it even when
// that is zero, so an explicit generator advances two permutations per
// epoch. With replacement: one 32-bit draw per sample, modulo n.
void random_sampler_epoch(uint32_t n, uint64_t num_samples, bool replacement, CpuGenerator& g,
                          TorchVersion version, std::vector<Sample>& out);

// DistributedSampler.__iter__ after set_epoch(epoch): a fresh generator
// seeded with seed + epoch, padding by wrapping around (or truncation with
// drop_last), then every world_size-th index from rank.
// `perm` is scratch space, kept by the caller so epochs reuse its memory.
void distributed_sampler_epoch(uint32_t n, const JobSpec& spec, uint64_t epoch,
                               std::vector<Sample>& perm, std::vector<Sample>& out);

// How many positions of its epoch each rank of a DistributedSampler job
// opens: the sampler's share, less the loader's short last batch with
// drop_last.
uint64_t ranks_open(const JobSpec& spec, uint32_t n);

// For each sample of a DistributedSampler epoch (set_epoch(seed_epoch)),
// the first index k of the padded order, before its split into ranks, at
// which some rank opens it: rank k % world_size, at its position
// k / world_size. Only the first `ranks_open` positions of each rank count
// (a loader's drop_last leaves the tail unread). UINT32_MAX for a sample no
// rank opens. `perm` is scratch space, as above. The daemon places each
// file's home by it and `clairfs simulate` computes the same placement.
std::vector<uint32_t> distributed_first_opened(uint32_t n, const JobSpec& spec,
                                               uint64_t seed_epoch, uint64_t ranks_open,
                                               std::vector<Sample>& perm);

// What BatchSampler(batch_size, drop_last) lets through, batches
// concatenated: only a short last batch can be dropped.
void apply_batching(std::vector<Sample>& order, uint32_t batch_size, bool drop_last);

} // namespace clairfs::order
