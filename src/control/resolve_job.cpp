// SPDX-License-Identifier: MIT
// resolve_job: a parsed registration against the mount's index. Built
// from the index, the dataset is what the job sees through the mount.
#include "clairfs/control/registration.hpp"

namespace clairfs::control {

std::string resolve_job(const Registration& reg, const index::Index& idx, std::string manifest,
                        plan::Job& out) {
    layout::Dataset ds;
    // A glob layout lists by the job's pattern, a list or ranges layout by
    // its manifest, whose text goes once parsed (build_dataset_taking).
    std::string why =
        reg.layout == layout::LayoutKind::glob
            ? layout::build_dataset(idx, reg.root, reg.layout, reg.spec.pattern, ds)
            : layout::build_dataset_taking(idx, reg.root, reg.layout, std::move(manifest), ds);
    if (!why.empty()) return why;
    uint64_t n = ds.samples.size();
    std::string shown = reg.root.empty() ? "the mount root" : "'" + reg.root + "'";
    // A different count means the job numbers its samples differently from
    // the layout, and every prediction would be wrong.
    if (reg.n && *reg.n != n)
        return "the layout finds " + std::to_string(n) + " samples in " + shown + ", but n is " +
               std::to_string(*reg.n);
    order::JobSpec spec = reg.spec;
    for (uint32_t r : reg.ranks) {
        spec.rank = r;
        if (auto why = order::validate(spec, n); !why.empty()) return why;
    }
    spec.rank = reg.ranks.front();
    out = plan::Job{spec, reg.ranks, reg.root, std::move(ds), reg.resync_draws, reg.pre_draws_max};
    return "";
}

namespace {

// 32-bit words one pass of the loader draws from the global generator.
uint64_t global_words(const order::JobSpec& s) {
    if (s.framework != order::Framework::pytorch) return 0;
    if (s.generator != order::GeneratorKind::global) return 0;
    uint64_t words = 2; // _BaseDataLoaderIter's base_seed
    if (s.sampler == order::SamplerKind::random) words += 2; // RandomSampler's seed
    return words;
}

} // namespace

void chain_loaders(std::vector<plan::Job>& loaders) {
    if (loaders.size() < 2) return;
    for (const plan::Job& j : loaders)
        if (j.spec.persistent_workers) return;
    std::vector<uint64_t> words;
    uint64_t total = 0;
    for (const plan::Job& j : loaders) total += words.emplace_back(global_words(j.spec));
    uint64_t before = 0;
    for (size_t i = 0; i < loaders.size(); ++i) {
        order::JobSpec& s = loaders[i].spec;
        if (s.framework == order::Framework::pytorch && s.sampler == order::SamplerKind::random &&
            s.generator == order::GeneratorKind::global) {
            s.pre_draws += before;
            s.between_draws = total - words[i];
        }
        before += words[i];
    }
}

} // namespace clairfs::control
