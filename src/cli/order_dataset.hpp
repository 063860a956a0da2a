// SPDX-License-Identifier: MIT
#pragma once

#include "clairfs/index/index.hpp"
#include "clairfs/layout/dataset.hpp"
#include "clairfs/order/randperm.hpp"
#include "order_args.hpp"

#include <memory>
#include <string>

namespace clairfs::cli {

// The dataset `clairfs order` numbers: just a size (--n), or a scanned
// directory laid out as the framework would (--root, --layout).
class OrderDataset {
public:
    uint64_t size() const { return index_ ? dataset_.samples.size() : n_; }
    std::string path(order::Sample s) const;
    // The size of the file sample s opens; false if its path dangles (or
    // the dataset is just a size).
    bool file_size(order::Sample s, uint64_t& out) const;

private:
    uint64_t n_ = 0;
    std::unique_ptr<index::Index> index_;
    layout::Dataset dataset_;

    friend struct OrderDatasetLoader;
};

struct LoadFailure {
    std::string message; // empty on success
    bool usage = false;  // the arguments were wrong (exit 2), not the disk (exit 1)
};

LoadFailure load_order_dataset(const OrderArgs& args, OrderDataset& out);

} // namespace clairfs::cli
