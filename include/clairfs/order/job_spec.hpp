// SPDX-License-Identifier: MIT
// What a job tells clairfs about its sampling: the keys of `clairfs order`,
// of its --config JSON, and (issue 5) of the control file. Defaults are
// PyTorch's defaults.
#pragma once

#include "clairfs/order/randperm.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clairfs::order {

enum class SamplerKind {
    random,      // DataLoader(shuffle=True) or RandomSampler
    distributed, // DistributedSampler, set_epoch(epoch) every epoch
    sequential,  // DataLoader(shuffle=False)
};

// The word the "sampler" key takes for `k` (set_job_key reads it back), as
// registrations and status write it.
inline const char* sampler_name(SamplerKind k) {
    switch (k) {
    case SamplerKind::random:
        return "random";
    case SamplerKind::distributed:
        return "distributed";
    case SamplerKind::sequential:
        return "sequential";
    }
    return "random";
}

enum class GeneratorKind {
    global,   // torch.manual_seed(seed); DataLoader without a generator
    explicit_ // DataLoader(generator=torch.Generator().manual_seed(seed))
};

enum class Framework {
    pytorch,    // a torch DataLoader
    tensorflow, // a tf.data pipeline (Keras or plain TensorFlow)
};

enum class TfPipeline {
    image_dataset_from_directory, // keras.utils.image_dataset_from_directory
    list_files,                   // tf.data.Dataset.list_files(pattern), then a shuffle
};

enum class KerasVersion {
    v3,     // Keras 3.3.3 and later: files read in the tf.data shuffle's order
    legacy, // tf_keras 2.x and Keras 3.0-3.2: files read in numpy's order, every epoch
};

// image_dataset_from_directory(subset=...). `both` returns the training
// dataset, shuffled by tf.data, and a validation dataset that Keras 3.15
// does not shuffle with tf.data (its files come in the numpy order every
// epoch): a registration turns `both` into two loaders, training and
// validation_of_both.
enum class TfSubset { none, training, validation, both, validation_of_both };

struct JobSpec {
    uint64_t seed = 0;          // as torch keeps it (see parse_seed)
    bool seed_negative = false; // the Python int was < 0 (for seed + epoch range)
    SamplerKind sampler = SamplerKind::random;
    GeneratorKind generator = GeneratorKind::global;
    uint32_t epochs = 1;            // how many epochs to predict
    uint32_t start_epoch = 0;       // the first epoch this process runs
    uint32_t world_size = 1;        // DistributedSampler num_replicas
    uint32_t rank = 0;              // the rank whose order is wanted
    bool shuffle = true;            // DistributedSampler(shuffle=)
    bool sampler_drop_last = false; // DistributedSampler(drop_last=)
    bool drop_last = false;         // DataLoader(drop_last=): short last batch
    uint32_t batch_size = 1;        // DataLoader(batch_size=)
    uint32_t num_workers = 0;
    uint32_t prefetch_factor = 2;
    bool persistent_workers = false;
    uint64_t pre_draws = 0; // 32-bit global draws the job makes before the loop
    // 32-bit global draws other loaders of the job make between two epochs
    // of this one (a validation loader's base_seed); not a key: clairfs
    // derives it from a registration's list of loaders.
    uint64_t between_draws = 0;
    TorchVersion torch_version = TorchVersion::v1_13;
    bool replacement = false;            // RandomSampler(replacement=)
    std::optional<uint64_t> num_samples; // RandomSampler(num_samples=)

    // framework tensorflow (tf_keys.cpp says what each means to Keras/TF).
    Framework framework = Framework::pytorch;
    TfPipeline pipeline = TfPipeline::image_dataset_from_directory;
    bool seed_none = false;             // seed=None: Keras or TF picks the seed
    std::optional<Seed> global_seed;    // tf.random.set_seed / keras.utils.set_random_seed
    std::optional<uint64_t> shuffle_buffer; // unset: 8 * batch_size, or n for list_files
    std::optional<double> validation_split;
    TfSubset subset = TfSubset::none;
    KerasVersion keras_version = KerasVersion::v3;
    std::string pattern; // list_files: a glob relative to the dataset root

    bool operator==(const JobSpec&) const = default;
};

// Sets one key from its text ("true", "42", "distributed", "2.7", ...).
// Returns "" or a one-line reason naming the key.
std::string set_job_key(JobSpec& spec, std::string_view key, std::string_view value);

struct JobKeyInfo {
    std::string_view name;       // with underscores, as in JSON
    std::string_view value_name; // for --help: N, BOOL, INT
    std::string_view help;
};

// Every key, in documentation order.
const std::vector<JobKeyInfo>& job_keys();

// framework tensorflow's choices as set_job_key reads them back.
std::string_view framework_name(Framework f);
std::string_view pipeline_name(TfPipeline p);
std::string_view subset_name(TfSubset s);
std::string_view keras_version_name(KerasVersion v);

// Checks the spec against a dataset of n samples: "" or the reason.
std::string validate(const JobSpec& spec, uint64_t n);

} // namespace clairfs::order
