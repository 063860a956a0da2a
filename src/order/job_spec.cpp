// SPDX-License-Identifier: MIT
#include "clairfs/config/value_parsers.hpp"
#include "clairfs/order/job_spec.hpp"

#include "clairfs/config/field_setters.hpp"
#include "clairfs/config/utf8_text.hpp"
#include "tf_keys.hpp"

#include <array>
#include <charconv>

namespace clairfs::order {
namespace {

using Setter = std::string (*)(JobSpec&, std::string_view);

std::string set_seed(JobSpec& s, std::string_view v) {
    if (v == "none" || v == "null") { // framework tensorflow: seed=None
        s.seed = 0;
        s.seed_negative = false;
        s.seed_none = true;
        return "";
    }
    auto seed = parse_seed(v);
    if (!seed)
        return "expected an integer from -2^63 to 2^64-1 (what torch.manual_seed accepts), or "
               "none (tensorflow)";
    s.seed_none = false;
    s.seed = seed->value;
    s.seed_negative = seed->negative;
    return "";
}

std::string set_sampler(JobSpec& s, std::string_view v) {
    if (v == "random")
        s.sampler = SamplerKind::random;
    else if (v == "distributed")
        s.sampler = SamplerKind::distributed;
    else if (v == "sequential")
        s.sampler = SamplerKind::sequential;
    else
        return "expected random, distributed or sequential";
    return "";
}

std::string set_generator(JobSpec& s, std::string_view v) {
    if (v == "global")
        s.generator = GeneratorKind::global;
    else if (v == "explicit")
        s.generator = GeneratorKind::explicit_;
    else
        return "expected global or explicit";
    return "";
}

// The torch version the job runs, as "MAJOR.MINOR" with anything after a
// further '.' or a '+' ignored ("2.13.0+cpu" is 2.13; a string, since 2.10
// is not 2.1). The levels (see randperm.hpp), from PyTorch's sources and
// history and from running torch 1.13, 2.6.0 (Debian 13) and 2.13:
// - 2.6: randperm_cpu (aten/src/ATen/native/TensorFactories.cpp) keeps the
//   1.13 loop only for n < UINT32_MAX / 20; above, inside-out with
//   random64(). pytorch#143682 landed on main in Dec 2024 and went into
//   release/2.6 (#143875, reverted and relanded there as #144730/#144735);
//   Debian's 2.6.0 takes 2n draws at n = 214,748,364 (n - 1 below).
// - 2.7: uniform_int_from_to_distribution (aten/src/ATen/core/
//   DistributionsHelper.h) takes random64() for ranges >= 2^28 (was
//   >= 2^32): RandomSampler(replacement=True) for 2^28 <= n < 2^32.
//   pytorch#143787 landed on main after the 2.6 branch; 2.6.0 still draws
//   32 bits there, 2.13 draws 64 (tests/order/test_large_n.py). 2.7.0 as
//   the first release with it is inferred from the dates, not read at the tag.
std::string set_torch_version(JobSpec& s, std::string_view v) {
    auto number = [&v](unsigned& out) {
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
        if (ec != std::errc{} || end == v.data()) return false;
        v.remove_prefix(static_cast<size_t>(end - v.data()));
        return true;
    };
    unsigned major = 0, minor = 0;
    bool ok = !v.empty() && v[0] != '+' && number(major);
    bool has_minor = ok && v.starts_with('.');
    if (has_minor) {
        v.remove_prefix(1);
        ok = !v.empty() && v[0] != '+' && number(minor);
    }
    ok = ok && (v.empty() || v[0] == '.' || v[0] == '+') && (major == 1 || (major == 2 && has_minor));
    if (!ok) return "expected a torch version such as 1.13, 2.6 or 2.7";
    if (major == 1 || minor <= 5)
        s.torch_version = TorchVersion::v1_13;
    else if (minor == 6)
        s.torch_version = TorchVersion::v2_6;
    else
        s.torch_version = TorchVersion::v2_7;
    return "";
}

std::string set_num_samples(JobSpec& s, std::string_view v) {
    uint64_t n;
    if (!config::parse_count(v, n) || n == 0 || n > max_samples)
        return "expected an integer from 1 to " + std::to_string(max_samples);
    s.num_samples = n;
    return "";
}

constexpr uint64_t u32 = UINT32_MAX;

struct Key {
    JobKeyInfo info;
    Setter set;
};

const Key keys[] = {
    {{"framework", "NAME",
      "pytorch (a DataLoader) or tensorflow (a tf.data pipeline: Keras's "
      "image_dataset_from_directory or list_files) [pytorch]"},
     tf_keys::set_framework},
    {{"seed", "INT",
      "torch.manual_seed / Generator / DistributedSampler seed, -2^63..2^64-1; tensorflow: the "
      "seed= argument, or none for seed=None (needs global_seed) [0]"},
     set_seed},
    {{"sampler", "KIND",
      "random (shuffle=True), distributed (DistributedSampler, set_epoch each "
      "epoch) or sequential (shuffle=False) [random]"},
     set_sampler},
    {{"generator", "KIND",
      "random sampler only: global (torch.manual_seed(seed), no generator "
      "argument) or explicit (DataLoader(generator=Generator().manual_seed(seed))) [global]"},
     set_generator},
    {{"epochs", "N", "how many epochs to predict [1]"},
     config::set_count_field<&JobSpec::epochs, 1, 100000>},
    {{"start_epoch", "N",
      "first epoch this process runs; distributed seeds with seed + epoch, "
      "random samplers start from a freshly seeded generator [0]"},
     config::set_count_field<&JobSpec::start_epoch, 0, u32>},
    {{"world_size", "N", "DistributedSampler num_replicas [1]"},
     config::set_count_field<&JobSpec::world_size, 1, 1u << 24>},
    {{"rank", "N", "the rank whose order is wanted [0]"},
     config::set_count_field<&JobSpec::rank, 0, u32>},
    {{"shuffle", "BOOL", "DistributedSampler shuffle [true]"},
     config::set_bool_field<&JobSpec::shuffle>},
    {{"sampler_drop_last", "BOOL",
      "DistributedSampler drop_last: drop the tail instead of "
      "padding [false]"},
     config::set_bool_field<&JobSpec::sampler_drop_last>},
    {{"drop_last", "BOOL", "DataLoader drop_last: drop a short last batch [false]"},
     config::set_bool_field<&JobSpec::drop_last>},
    {{"batch_size", "N", "DataLoader batch_size [1]"},
     config::set_count_field<&JobSpec::batch_size, 1, u32>},
    {{"num_workers", "N", "DataLoader num_workers [0]"},
     config::set_count_field<&JobSpec::num_workers, 0, 4096>},
    {{"prefetch_factor", "N", "DataLoader prefetch_factor [2]"},
     config::set_count_field<&JobSpec::prefetch_factor, 1, 1u << 16>},
    {{"persistent_workers", "BOOL",
      "DataLoader persistent_workers (needs num_workers > 0) [false]"},
     config::set_bool_field<&JobSpec::persistent_workers>},
    {{"pre_draws", "N",
      "32-bit draws the job makes from the global generator between "
      "manual_seed and the first epoch (nn.Linear(10,10) on CPU: 110) [0]"},
     config::set_count_field<&JobSpec::pre_draws, 0, UINT64_MAX>},
    {{"torch_version", "VER",
      "the job's torch, e.g. 1.13, 2.6 or 2.13.0; 1.x to 2.5 share 1.13's "
      "sampling, 2.6 changed randperm for huge n, 2.7 also randint [1.13]"},
     set_torch_version},
    {{"replacement", "BOOL", "RandomSampler replacement [false]"},
     config::set_bool_field<&JobSpec::replacement>},
    {{"num_samples", "N", "RandomSampler num_samples [the dataset size]"}, set_num_samples},
    {{"pipeline", "NAME",
      "tensorflow: image_dataset_from_directory (keras.utils, labels inferred) or list_files "
      "(tf.data.Dataset.list_files(root/pattern), then shuffled) [image_dataset_from_directory]"},
     tf_keys::set_pipeline},
    {{"global_seed", "INT",
      "tensorflow: the tf.random.set_seed / keras.utils.set_random_seed value set before the "
      "dataset is made, or none [none]"},
     tf_keys::set_global_seed},
    {{"shuffle_buffer", "N",
      "tensorflow: the shuffle's buffer_size [8 * batch_size; list_files: the file count]"},
     tf_keys::set_shuffle_buffer},
    {{"validation_split", "FLOAT",
      "tensorflow, image_dataset_from_directory: validation_split, between 0 and 1 [none]"},
     tf_keys::set_validation_split},
    {{"subset", "NAME",
      "tensorflow, image_dataset_from_directory: training, validation, both (a registration "
      "follows the two datasets returned) or validation_of_both (the second of them, which "
      "Keras does not shuffle with tf.data), with validation_split [none]"},
     tf_keys::set_subset},
    {{"keras_version", "VER",
      "tensorflow, image_dataset_from_directory: 3.3.3 or later, such as 3.15 (files read in "
      "the tf.data shuffle's order, new every epoch), or 2.15 for tf_keras 2.x and Keras 3.0 "
      "to 3.2 (files read in numpy's order, the same every epoch) [3.15]"},
     tf_keys::set_keras_version},
    {{"pattern", "GLOB",
      "tensorflow, list_files: the glob after root/ ('*' stays within one directory), "
      "matches sorted bytewise [none]"},
     tf_keys::set_pattern},
};

} // namespace

const std::vector<JobKeyInfo>& job_keys() {
    static const std::vector<JobKeyInfo> infos = [] {
        std::vector<JobKeyInfo> v;
        for (const auto& k : keys) v.push_back(k.info);
        return v;
    }();
    return infos;
}

std::string set_job_key(JobSpec& spec, std::string_view key, std::string_view value) {
    std::string name = config::canonical_key(key);
    for (const auto& k : keys) {
        if (k.info.name != name) continue;
        std::string why = k.set(spec, value);
        return why.empty()
                   ? ""
                   : "invalid value for " + config::message_text(name) + ": " +
                         config::message_text(value) + " (" + why + ")";
    }
    return "unknown key '" + config::message_text(key) + "'";
}

std::string validate(const JobSpec& s, uint64_t n) {
    if (auto why = tf_keys::validate(s, n); !why.empty()) return why;
    if (n == 0)
        return s.framework == Framework::tensorflow
                   ? "the dataset has no files (n = 0): Keras and list_files raise an error"
                   : "the dataset has no samples (n = 0): torch cannot sample from it";
    if (n > max_samples) return "more than 2^32-1 samples are not supported";
    if (s.rank >= s.world_size)
        return "rank " + std::to_string(s.rank) + " is not below world_size " +
               std::to_string(s.world_size);
    if (s.persistent_workers && s.num_workers == 0)
        return "persistent_workers needs num_workers > 0 (torch raises ValueError)";
    if (s.sampler != SamplerKind::random && (s.replacement || s.num_samples))
        return "replacement and num_samples belong to sampler random";
    uint64_t last_epoch = uint64_t{s.start_epoch} + s.epochs - 1;
    // Only a shuffling DistributedSampler seeds a generator with seed + epoch.
    bool seeds = s.sampler == SamplerKind::distributed && s.shuffle;
    if (seeds && !s.seed_negative && s.seed > UINT64_MAX - last_epoch)
        return "seed + epoch exceeds 2^64-1 (torch.manual_seed overflows)";
    return "";
}

} // namespace clairfs::order
