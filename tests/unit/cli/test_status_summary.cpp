// SPDX-License-Identifier: MIT
// The human status's SSD lines say when writes were skipped (the backing
// store outran the SSD, so those files or chunks come from it again), and
// say nothing of it otherwise.
#include "cli/status_summary.hpp"

#include <doctest/doctest.h>

using namespace clairfs;
using nlohmann::json;

namespace {

json ssd(uint64_t skipped) {
    return {{"enabled", true}, {"bytes", 1 << 20}, {"capacity", 4 << 20}, {"hits", 3},
            {"errors", 0},     {"skipped", skipped}};
}

} // namespace

TEST_CASE("the SSD lines name skipped writes only when there were some") {
    json s = {{"mode", "unregistered"}, {"ssd", ssd(0)},
              {"chunks", {{"files", 1}, {"chunks", 4}, {"chunk_size", 1 << 20}, {"ssd", ssd(0)}}}};
    std::string quiet = cli::status_summary(s);
    CHECK(quiet.find("skipped") == std::string::npos);
    s["ssd"] = ssd(5);
    s["chunks"]["ssd"] = ssd(352);
    std::string told = cli::status_summary(s);
    CHECK(told.find("ssd:         1.0 MiB of 4.0 MiB, 3 hits, 0 errors, 5 writes skipped (the "
                    "backing store outran the SSD") != std::string::npos);
    CHECK(told.find("3 hits, 352 writes skipped") != std::string::npos);
}
