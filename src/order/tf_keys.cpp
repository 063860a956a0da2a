// SPDX-License-Identifier: MIT
// framework tensorflow's keys. Keras's image_dataset_from_directory and
// tf.data's list_files are followed (see tf_epochs.hpp); the torch keys that
// have no meaning there are refused rather than ignored, so a registration
// never says something clairfs does not act on.
#include "tf_keys.hpp"

#include "clairfs/config/value_parsers.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <span>
#include <utility>

namespace clairfs::order::tf_keys {
namespace {

// A dotted version: at least major.minor, each part decimal.
bool parse_version(std::string_view v, std::array<uint64_t, 3>& out, size_t& parts) {
    out = {0, 0, 0};
    parts = 0;
    while (parts < 3) {
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out[parts]);
        if (ec != std::errc{} || end == v.data()) return false;
        ++parts;
        v.remove_prefix(static_cast<size_t>(end - v.data()));
        if (v.empty()) return parts >= 2;
        if (v.front() != '.') return false;
        v.remove_prefix(1);
    }
    return false;
}

bool differs(const JobSpec& s, const JobSpec& d, std::string_view key) {
    if (key == "sampler") return s.sampler != d.sampler;
    if (key == "generator") return s.generator != d.generator;
    if (key == "world_size") return s.world_size != d.world_size;
    if (key == "rank") return s.rank != d.rank;
    if (key == "sampler_drop_last") return s.sampler_drop_last != d.sampler_drop_last;
    if (key == "drop_last") return s.drop_last != d.drop_last;
    if (key == "num_workers") return s.num_workers != d.num_workers;
    if (key == "prefetch_factor") return s.prefetch_factor != d.prefetch_factor;
    if (key == "persistent_workers") return s.persistent_workers != d.persistent_workers;
    if (key == "pre_draws") return s.pre_draws != d.pre_draws || s.between_draws != d.between_draws;
    if (key == "torch_version") return s.torch_version != d.torch_version;
    if (key == "replacement") return s.replacement != d.replacement;
    if (key == "num_samples") return s.num_samples != d.num_samples;
    if (key == "pipeline") return s.pipeline != d.pipeline;
    if (key == "global_seed") return s.global_seed.has_value();
    if (key == "shuffle_buffer") return s.shuffle_buffer.has_value();
    if (key == "validation_split") return s.validation_split.has_value();
    if (key == "subset") return s.subset != d.subset;
    if (key == "keras_version") return s.keras_version != d.keras_version;
    if (key == "pattern") return !s.pattern.empty();
    return false;
}

constexpr std::string_view torch_only[] = {
    "sampler",   "generator",       "world_size",         "rank",      "sampler_drop_last",
    "drop_last", "num_workers",     "prefetch_factor",    "persistent_workers",
    "pre_draws", "torch_version",   "replacement",        "num_samples"};
constexpr std::string_view tensorflow_only[] = {"pipeline",         "global_seed", "shuffle_buffer",
                                                "validation_split", "subset",      "keras_version",
                                                "pattern"};

std::string other_framework_keys(const JobSpec& s) {
    const JobSpec defaults;
    bool tf = s.framework == Framework::tensorflow;
    std::span<const std::string_view> others = tf ? std::span<const std::string_view>(torch_only)
                                                  : std::span<const std::string_view>(tensorflow_only);
    for (std::string_view key : others)
        if (differs(s, defaults, key))
            return std::string(key) + (tf ? " is a PyTorch key: framework tensorflow does not take it"
                                          : " needs framework tensorflow");
    if (!tf && s.seed_none) return "seed none needs framework tensorflow (torch needs a number)";
    return "";
}

bool below_2_32(const Seed& s) {
    return !s.negative && s.value <= UINT32_MAX;
}

// int(validation_split * n), the size of Keras's validation subset.
uint64_t validation_count(double split, uint64_t n) {
    return static_cast<uint64_t>(split * static_cast<double>(n));
}

std::string validate_directory(const JobSpec& s, uint64_t n) {
    if (!s.pattern.empty()) return "pattern belongs to pipeline list_files";
    if (s.validation_split.has_value() != (s.subset != TfSubset::none))
        return "validation_split and subset go together (Keras raises ValueError for one alone)";
    if (s.subset == TfSubset::both)
        return "subset both is two datasets: a registration follows both, one order is "
               "training or validation_of_both";
    if (s.shuffle && s.validation_split && s.seed_none)
        return "validation_split with shuffle needs a seed, not none (Keras raises ValueError)";
    if (s.shuffle && !s.seed_none && !below_2_32({s.seed, s.seed_negative}))
        return "seed must be from 0 to 2^32-1 here (numpy's RandomState(seed) refuses others)";
    if (s.shuffle && s.seed_none && !below_2_32(*s.global_seed))
        return "global_seed must be from 0 to 2^32-1 here (keras.utils.set_random_seed calls "
               "np.random.seed)";
    // int(v * n) == 0: paths[:-0] is empty, and subset="both" refuses an
    // empty validation side (subset="validation" alone then takes them all).
    bool training = s.subset == TfSubset::training;
    if ((training || s.subset == TfSubset::validation_of_both) && n > 0 &&
        validation_count(*s.validation_split, n) == 0)
        return "validation_split " + std::to_string(*s.validation_split) + " of " +
               std::to_string(n) + " files leaves Keras's " +
               (training ? "training" : "validation") + " subset empty (it raises ValueError)";
    return "";
}

std::string validate_list_files(const JobSpec& s) {
    if (s.pattern.empty()) return "pipeline list_files needs pattern (a glob relative to root)";
    if (s.validation_split || s.subset != TfSubset::none)
        return "validation_split and subset belong to pipeline image_dataset_from_directory";
    if (s.keras_version != KerasVersion::v3)
        return "keras_version belongs to pipeline image_dataset_from_directory";
    return "";
}

} // namespace

std::string set_framework(JobSpec& s, std::string_view v) {
    if (v == "pytorch")
        s.framework = Framework::pytorch;
    else if (v == "tensorflow")
        s.framework = Framework::tensorflow;
    else
        return "expected pytorch or tensorflow";
    return "";
}

std::string set_pipeline(JobSpec& s, std::string_view v) {
    if (v == "image_dataset_from_directory")
        s.pipeline = TfPipeline::image_dataset_from_directory;
    else if (v == "list_files")
        s.pipeline = TfPipeline::list_files;
    else
        return "expected image_dataset_from_directory or list_files";
    return "";
}

std::string set_global_seed(JobSpec& s, std::string_view v) {
    if (v == "none" || v == "null") {
        s.global_seed.reset();
        return "";
    }
    auto seed = parse_seed(v);
    if (!seed) return "expected none or an integer from -2^63 to 2^64-1";
    s.global_seed = *seed;
    return "";
}

std::string set_shuffle_buffer(JobSpec& s, std::string_view v) {
    if (v == "none" || v == "null") {
        s.shuffle_buffer.reset();
        return "";
    }
    uint64_t n;
    if (!config::parse_count(v, n) || n == 0 || n > (uint64_t{1} << 62))
        return "expected none or an integer from 1 to 2^62";
    s.shuffle_buffer = n;
    return "";
}

std::string set_validation_split(JobSpec& s, std::string_view v) {
    if (v == "none" || v == "null") {
        s.validation_split.reset();
        return "";
    }
    double x;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc{} || end != v.data() + v.size() || !std::isfinite(x) || x <= 0 || x >= 1)
        return "expected none or a number between 0 and 1, both excluded";
    s.validation_split = x;
    return "";
}

std::string set_subset(JobSpec& s, std::string_view v) {
    if (v == "none" || v == "null")
        s.subset = TfSubset::none;
    else if (v == "training")
        s.subset = TfSubset::training;
    else if (v == "validation")
        s.subset = TfSubset::validation;
    else if (v == "both")
        s.subset = TfSubset::both;
    else if (v == "validation_of_both")
        s.subset = TfSubset::validation_of_both;
    else
        return "expected training, validation, both, validation_of_both or none";
    return "";
}

// 3.3.0 to 3.3.2 shuffled the paths alone and read files in yet another
// order (fixed in 3.3.3): not followed.
std::string set_keras_version(JobSpec& s, std::string_view v) {
    std::array<uint64_t, 3> ver;
    size_t parts;
    const char* expected = "expected a Keras version such as 3.15 (3.3.3 and later) or 2.15 (tf_keras "
                           "2.x; also 3.0 to 3.2)";
    if (!parse_version(v, ver, parts) || ver[0] < 2) return expected;
    auto [major, minor, patch] = ver;
    if (major == 3 && minor == 3 && (parts < 3 || patch < 3))
        return "Keras 3.3.0 to 3.3.2 read files in an order clairfs does not follow; give 3.3.3 "
               "or later";
    s.keras_version = major == 2 || (major == 3 && minor < 3) ? KerasVersion::legacy : KerasVersion::v3;
    return "";
}

std::string set_pattern(JobSpec& s, std::string_view v) {
    if (v.starts_with('/')) return "expected a glob relative to root, not an absolute path";
    for (size_t at = 0; at <= v.size();) {
        size_t slash = v.find('/', at);
        std::string_view part = v.substr(at, slash == std::string_view::npos ? v.npos : slash - at);
        if (part.empty() || part == "." || part == "..")
            return "expected a glob relative to root without empty, '.' or '..' parts";
        if (slash == std::string_view::npos) break;
        at = slash + 1;
    }
    s.pattern = v;
    return "";
}

std::string validate(const JobSpec& s, uint64_t n) {
    if (auto why = other_framework_keys(s); !why.empty()) return why;
    if (s.framework != Framework::tensorflow) return "";
    if (s.shuffle && s.seed_none && !s.global_seed)
        return "seed none needs global_seed (without tf.random.set_seed or "
               "keras.utils.set_random_seed the order changes every run)";
    return s.pipeline == TfPipeline::list_files ? validate_list_files(s) : validate_directory(s, n);
}

} // namespace clairfs::order::tf_keys

namespace clairfs::order {

std::string_view framework_name(Framework f) {
    return f == Framework::tensorflow ? "tensorflow" : "pytorch";
}

std::string_view pipeline_name(TfPipeline p) {
    return p == TfPipeline::list_files ? "list_files" : "image_dataset_from_directory";
}

std::string_view subset_name(TfSubset s) {
    switch (s) {
    case TfSubset::training: return "training";
    case TfSubset::validation: return "validation";
    case TfSubset::both: return "both";
    case TfSubset::validation_of_both: return "validation_of_both";
    case TfSubset::none: break;
    }
    return "none";
}

std::string_view keras_version_name(KerasVersion v) {
    return v == KerasVersion::legacy ? "2.15" : "3.15";
}

} // namespace clairfs::order
