// SPDX-License-Identifier: MIT
// Plan tests' helpers: a flat in-memory index, and an EpochPlan checked
// against the obvious, slow reading of its contract.
#pragma once

#include "clairfs/layout/dataset.hpp"
#include "clairfs/plan/epoch_plan.hpp"
#include "raw_tree_builder.hpp"

#include <cstdio>
#include <doctest/doctest.h>
#include <map>
#include <string>
#include <vector>

namespace clairfs::test {

// `dirs` directories of `per_dir` files each, named so that byte order is
// creation order.
inline index::Index flat_index(uint32_t dirs, uint32_t per_dir) {
    std::vector<index::RawEntry> top;
    top.reserve(dirs);
    char name[32];
    for (uint32_t d = 0; d < dirs; ++d) {
        std::vector<index::RawEntry> kids;
        kids.reserve(per_dir);
        for (uint32_t f = 0; f < per_dir; ++f) {
            std::snprintf(name, sizeof name, "f%07u", f);
            kids.push_back(file(name, 100));
        }
        std::snprintf(name, sizeof name, "d%05u", d);
        top.push_back(dir(name, std::move(kids)));
    }
    return index::Index::build(tree(std::move(top)));
}

inline layout::Dataset sorted_dataset(const index::Index& idx) {
    layout::Dataset ds;
    REQUIRE(layout::build_dataset(idx, "", layout::LayoutKind::sorted, "", ds) == "");
    return ds;
}

// Every promise of EpochPlan, checked the slow way.
inline void check_plan(const plan::EpochPlan& e, size_t index_size) {
    REQUIRE(e.first_position.size() == index_size);
    std::map<index::NodeId, std::vector<uint32_t>> where;
    for (uint32_t p = 0; p < e.size(); ++p)
        if (e.nodes[p] != layout::no_node) where[e.nodes[p]].push_back(p);
    bool repeats = false;
    for (const auto& [n, ps] : where) repeats |= ps.size() > 1;
    CHECK(e.next_same.empty() == !repeats);
    if (repeats) REQUIRE(e.next_same.size() == e.size());
    for (index::NodeId n = 0; n < index_size; ++n) {
        auto it = where.find(n);
        if (it == where.end()) {
            CHECK(e.first_position[n] == plan::no_position);
            CHECK(e.position_at_or_after(n, 0) == plan::no_position);
            continue;
        }
        std::vector<uint32_t> chain;
        for (uint32_t p = e.first_position[n]; p != plan::no_position;
             p = repeats ? e.next_same[p] : plan::no_position)
            chain.push_back(p);
        CHECK(chain == it->second);
        for (uint32_t p : it->second) {
            CHECK(e.position_at_or_after(n, p) == p);
            uint32_t after = plan::no_position;
            for (uint32_t q : it->second)
                if (q > p) {
                    after = q;
                    break;
                }
            CHECK(e.position_at_or_after(n, p + 1) == after);
        }
    }
    CHECK(e.position_at_or_after(static_cast<index::NodeId>(index_size), 0) == plan::no_position);
    CHECK(e.position_at_or_after(layout::no_node, 0) == plan::no_position);
}

} // namespace clairfs::test
