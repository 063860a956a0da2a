// SPDX-License-Identifier: MIT
#include "sim_orders.hpp"

#include "clairfs/order/samplers.hpp"

#include <stdexcept>

namespace clairfs::sim {

SimOrders::SimOrders(const order::JobSpec& spec, uint32_t n)
    : spec_(spec), n_(n), world_(std::max<uint32_t>(spec.world_size, 1)) {
    if (spec_.sampler == order::SamplerKind::distributed) {
        positions_ = static_cast<uint32_t>(order::ranks_open(spec_, n_));
    } else {
        // One rank, any sampler: the loader's whole epoch, as the daemon
        // predicts it (replacement and num_samples included).
        single_ = std::make_unique<order::EpochOrders>(spec_, n_);
        world_ = 1;
    }
    build(0); // a single rank's length is known only from its first epoch
}

void SimOrders::build(uint32_t e) {
    while (built_ <= e && built_ < spec_.epochs) {
        auto x = std::make_unique<Epoch>();
        if (single_) {
            single_->next(x->order);
            if (built_ == 0) positions_ = static_cast<uint32_t>(x->order.size());
            if (x->order.size() != positions_)
                throw std::logic_error("an epoch of another length"); // fixed by the spec
            x->first.assign(n_, none);
            for (uint32_t k = 0; k < x->order.size(); ++k)
                if (x->first[x->order[k]] == none) x->first[x->order[k]] = k;
            if (x->order.empty()) x->order.push_back(0); // file() never reads it: no positions
        } else {
            // The daemon's own placement input: the first opener of each file.
            x->first = order::distributed_first_opened(n_, spec_, spec_.start_epoch + built_,
                                                       positions_, x->order);
        }
        epochs_[built_] = std::move(x);
        ++built_;
    }
}

void SimOrders::release_before(uint32_t e) {
    while (!epochs_.empty() && epochs_.begin()->first < e) epochs_.erase(epochs_.begin());
}

} // namespace clairfs::sim
