// SPDX-License-Identifier: MIT
// The job keys of framework tensorflow and how they fit together; the key
// table itself is in job_spec.cpp, shared with the torch keys.
#pragma once

#include "clairfs/order/job_spec.hpp"

#include <string>
#include <string_view>

namespace clairfs::order::tf_keys {

std::string set_framework(JobSpec& s, std::string_view v);
std::string set_pipeline(JobSpec& s, std::string_view v);
std::string set_global_seed(JobSpec& s, std::string_view v);
std::string set_shuffle_buffer(JobSpec& s, std::string_view v);
std::string set_validation_split(JobSpec& s, std::string_view v);
std::string set_subset(JobSpec& s, std::string_view v);
std::string set_keras_version(JobSpec& s, std::string_view v);
std::string set_pattern(JobSpec& s, std::string_view v);

// validate()'s part for the framework: a key of the other framework at a
// value other than its default, and the combinations Keras or TF refuse.
std::string validate(const JobSpec& s, uint64_t n);

} // namespace clairfs::order::tf_keys
