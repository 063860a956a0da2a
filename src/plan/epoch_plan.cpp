// SPDX-License-Identifier: MIT
#include "clairfs/plan/epoch_plan.hpp"

namespace clairfs::plan {

uint32_t EpochPlan::position_at_or_after(index::NodeId node, uint32_t from) const {
    if (node >= first_position.size()) return no_position;
    uint32_t p = first_position[node];
    if (next_same.empty()) return p >= from ? p : no_position;
    while (p != no_position && p < from) p = next_same[p];
    return p;
}

} // namespace clairfs::plan
