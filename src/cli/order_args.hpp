// SPDX-License-Identifier: MIT
#pragma once

#include "clairfs/order/job_spec.hpp"

#include <optional>
#include <string>
#include <vector>

namespace clairfs::cli {

struct OrderArgs {
    order::JobSpec spec;
    std::optional<uint64_t> n;
    std::string root;
    std::optional<std::string> layout; // unset: imagefolder, or the tensorflow pipeline's
    std::string manifest;
    bool paths = false;
    // Each epoch as a little-endian uint64 count and that many little-endian
    // uint32 indices: 0.9 GB for 2^28 samples instead of 2.6 GB of JSON that
    // a reader then parses for minutes.
    bool binary = false;
    // tensorflow: epoch e runs the dataset's iterator e * iterator_step
    // (2 for Keras 3.15's fit, which makes an extra iterator per epoch).
    uint64_t iterator_step = 1;
    std::optional<uint32_t> worker; // print what this DataLoader worker opens
    bool help = false;
};

// Precedence, low to high: defaults, --config files, the command line.
// Returns "" or a one-line usage error.
std::string parse_order_args(const std::vector<std::string>& args, OrderArgs& out);

} // namespace clairfs::cli
