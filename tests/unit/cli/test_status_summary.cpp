// SPDX-License-Identifier: MIT
// The human status: its SSD lines say when writes were skipped (the backing
// store outran the SSD, so those files or chunks come from it again), and
// say nothing of it otherwise; its chain search line says how far the
// search got and what it found.
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

TEST_CASE("the SSD lines count the opens the kernel served itself, and under which check") {
    json s = {{"mode", "unregistered"}, {"ssd", ssd(0)},
              {"chunks", {{"files", 1}, {"chunks", 4}, {"chunk_size", 1 << 20}, {"ssd", ssd(0)}}}};
    s["ssd"]["kernel"] = {{"on", false}, {"opens", 0}, {"check", "resident"}};
    CHECK(cli::status_summary(s).find("read by the kernel") == std::string::npos);
    s["ssd"]["kernel"] = {{"on", true}, {"opens", 120}, {"check", "once"}};
    s["chunks"]["ssd"]["kernel"] = {{"on", true}, {"opens", 7}};
    std::string told = cli::status_summary(s);
    CHECK(told.find("0 errors; 120 files read by the kernel (--ssd-check once)") !=
          std::string::npos);
    CHECK(told.find("3 hits; 7 whole files read by the kernel") != std::string::npos);
}

TEST_CASE("the chain search's line says what it is doing, and what it found") {
    json loader = {{"root", "train"},        {"mode", "clairvoyant"}, {"epoch", 0},
                   {"match_rate", 1.0},      {"epochs", json::array()},
                   {"draw_offset", nullptr}, {"chain_search", nullptr}};
    json s = {{"mode", "clairvoyant"}, {"registered", true}, {"epoch", 0}, {"match_rate", 1.0},
              {"jobs", {{{"id", "default"}, {"state", "active"}, {"pids", json::array()},
                         {"loaders", {loader}}}}}};
    CHECK(cli::status_summary(s).find("chain search") == std::string::npos);
    json& l = s["jobs"][0]["loaders"][0];
    l["chain_search"] = {{"state", "searching"}, {"scanned", 268435456},
                         {"words", 1073741824}, {"cpu_seconds", 8.25}};
    CHECK(cli::status_summary(s).find("loader 'train': searching, 25% of 1073741824 words (8.2 "
                                      "s of CPU); not prefetching meanwhile") != std::string::npos);
    l["chain_search"]["state"] = "found";
    l["draw_offset"] = 22337928;
    CHECK(cli::status_summary(s).find("loader 'train': found: the job drew 22337928 words before "
                                      "it") != std::string::npos);
    l["chain_search"]["state"] = "not found";
    CHECK(cli::status_summary(s).find("loader 'train': no seed in 1073741824 words") !=
          std::string::npos);
}

TEST_CASE("detection's chain search and each detected registration get a line") {
    json det = {{"state", "detected"},
                {"result", "detected a random (global generator) job"},
                {"chain_search",
                 {{"state", "found"}, {"scanned", 22282243}, {"words", 1073741824},
                  {"seeds", 8}, {"cpu_seconds", 6.5}}},
                {"registrations",
                 {{{"root", "val"}, {"sampler", "sequential"}},
                  {{"root", "train"}, {"sampler", "random"}, {"pre_draws", 22337928}}}}};
    json s = {{"mode", "clairvoyant"}, {"registered", "detected"}, {"detection", det}};
    std::string out = cli::status_summary(s);
    CHECK(out.find("chain search: found, 22282243 of 1073741824 words of 8 seeds' chains, 6.5 s "
                   "CPU") != std::string::npos);
    CHECK(out.find("\"root\":\"val\"") != std::string::npos);
    CHECK(out.find("\"pre_draws\":22337928") != std::string::npos);
}

TEST_CASE("the readahead line: what the kernel uses, and why it is not what was asked") {
    json s = {{"mode", "unregistered"},
              {"readahead", {{"kb", 1024}, {"asked_kb", 1024}, {"bdi", "0:40"},
                             {"reason", nullptr}}}};
    CHECK(cli::status_summary(s).find("readahead:   1024 KiB\n") != std::string::npos);
    s["readahead"] = {{"kb", 128}, {"asked_kb", 1024}, {"bdi", "0:40"},
                      {"reason", "raising it needs root"}};
    CHECK(cli::status_summary(s).find(
              "readahead:   128 KiB (asked 1024 KiB: raising it needs root)\n") !=
          std::string::npos);
    s.erase("readahead"); // a daemon before the field: no line
    CHECK(cli::status_summary(s).find("readahead:") == std::string::npos);
}
