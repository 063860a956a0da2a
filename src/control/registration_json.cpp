// SPDX-License-Identifier: MIT
// registration_json: what reading .clairfs/control returns. Every key is
// written, defaults included, so a user sees exactly what clairfs assumes
// about the job; parse_control reads it back unchanged.
#include "clairfs/control/registration.hpp"

#include "clairfs/layout/framework_layout.hpp"

#include <nlohmann/json.hpp>

namespace clairfs::control {
namespace {

// The torch_version value that selects the same level again.
const char* torch_version_name(order::TorchVersion v) {
    switch (v) {
    case order::TorchVersion::v1_13:
        return "1.13";
    case order::TorchVersion::v2_6:
        return "2.6";
    case order::TorchVersion::v2_7:
        return "2.7";
    }
    return "1.13";
}

} // namespace

namespace {

nlohmann::ordered_json loader_json(const Registration& reg);

} // namespace

std::string registration_json(const Registration& reg) {
    return loader_json(reg).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
           "\n";
}

std::string job_json(const JobRegistration& job) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const Registration& reg : job.loaders) {
        nlohmann::ordered_json l;
        if (job.id != default_job) l["job"] = job.id;
        l.update(loader_json(reg));
        out.push_back(std::move(l));
    }
    if (!job.listed && out.size() == 1) out = out[0];
    return out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string agreed_keys(const JobRegistration& job) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const Registration& reg : job.loaders) {
        nlohmann::ordered_json l = loader_json(reg);
        l.erase("ranks");
        out.push_back(std::move(l));
    }
    return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

namespace {

nlohmann::ordered_json optional_json(const auto& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json seed_json(const order::Seed& s) {
    // A negative Python seed is kept as torch keeps it (two's complement);
    // written back as the negative number the job passed.
    return s.negative ? nlohmann::ordered_json(static_cast<int64_t>(s.value))
                      : nlohmann::ordered_json(s.value);
}

// framework tensorflow: the keys it takes (the torch-only ones are refused
// there, so writing their defaults would say nothing).
nlohmann::ordered_json tensorflow_json(const Registration& reg) {
    namespace tk = order;
    const order::JobSpec& s = reg.spec;
    nlohmann::ordered_json j;
    j["framework"] = tk::framework_name(s.framework);
    j["pipeline"] = tk::pipeline_name(s.pipeline);
    j["seed"] = s.seed_none ? nlohmann::ordered_json(nullptr)
                            : seed_json({s.seed, s.seed_negative});
    j["global_seed"] = s.global_seed ? seed_json(*s.global_seed) : nullptr;
    j["epochs"] = reg.epochs_given ? nlohmann::ordered_json(s.epochs) : nullptr;
    j["start_epoch"] = s.start_epoch;
    j["ranks"] = reg.ranks;
    j["shuffle"] = s.shuffle;
    j["batch_size"] = s.batch_size;
    j["shuffle_buffer"] = optional_json(s.shuffle_buffer);
    j["validation_split"] = optional_json(s.validation_split);
    j["subset"] = s.subset == order::TfSubset::none ? nlohmann::ordered_json(nullptr)
                                                    : tk::subset_name(s.subset);
    j["keras_version"] = tk::keras_version_name(s.keras_version);
    j["pattern"] = s.pattern.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s.pattern);
    j["root"] = reg.root;
    j["layout"] = layout::layout_name(reg.layout);
    j["n"] = optional_json(reg.n);
    j["resync_draws"] = reg.resync_draws;
    return j;
}

nlohmann::ordered_json loader_json(const Registration& reg) {
    if (reg.spec.framework == order::Framework::tensorflow) return tensorflow_json(reg);
    const order::JobSpec& s = reg.spec;
    // ordered_json: the keys in the order clairfs-control(5) documents them.
    nlohmann::ordered_json j;
    j["seed"] = seed_json({s.seed, s.seed_negative});
    j["sampler"] = order::sampler_name(s.sampler);
    j["generator"] = s.generator == order::GeneratorKind::global ? "global" : "explicit";
    j["epochs"] = reg.epochs_given ? nlohmann::ordered_json(s.epochs) : nullptr;
    j["start_epoch"] = s.start_epoch;
    j["world_size"] = s.world_size;
    j["ranks"] = reg.ranks;
    j["shuffle"] = s.shuffle;
    j["sampler_drop_last"] = s.sampler_drop_last;
    j["drop_last"] = s.drop_last;
    j["batch_size"] = s.batch_size;
    j["num_workers"] = s.num_workers;
    j["prefetch_factor"] = s.prefetch_factor;
    j["persistent_workers"] = s.persistent_workers;
    j["pre_draws"] = s.pre_draws;
    j["torch_version"] = torch_version_name(s.torch_version);
    j["replacement"] = s.replacement;
    j["num_samples"] = s.num_samples ? nlohmann::ordered_json(*s.num_samples) : nullptr;
    j["root"] = reg.root;
    j["layout"] = layout::layout_name(reg.layout);
    j["manifest"] = reg.manifest.empty() ? nullptr : nlohmann::ordered_json(reg.manifest);
    j["n"] = reg.n ? nlohmann::ordered_json(*reg.n) : nullptr;
    j["resync_draws"] = reg.resync_draws;
    j["pre_draws_max"] = reg.pre_draws_max;
    return j;
}

} // namespace

} // namespace clairfs::control
