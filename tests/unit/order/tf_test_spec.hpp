// SPDX-License-Identifier: MIT
// A tensorflow JobSpec from key/value pairs, as the control file sets them:
// shared by the tf order and tf detection tests.
#pragma once

#include "clairfs/order/job_spec.hpp"

#include <doctest/doctest.h>
#include <initializer_list>
#include <utility>

inline clairfs::order::JobSpec
tf_spec(std::initializer_list<std::pair<const char*, const char*>> keys) {
    clairfs::order::JobSpec s;
    REQUIRE(clairfs::order::set_job_key(s, "framework", "tensorflow") == "");
    for (auto [k, v] : keys) REQUIRE(clairfs::order::set_job_key(s, k, v) == "");
    return s;
}
