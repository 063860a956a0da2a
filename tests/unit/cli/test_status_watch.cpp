// SPDX-License-Identifier: MIT
// The watch view's lines from status documents: what a person reads at a
// glance has to be what the status says.
#include "cli/status_watch.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using clairfs::cli::fit_line;
using clairfs::cli::watch_bar;
using clairfs::cli::watch_lines;
using clairfs::cli::WatchFrame;
using clairfs::cli::WatchSample;
using nlohmann::json;

namespace {

json status() {
    return json::parse(R"({
      "registered": true, "mode": "clairvoyant", "reason": null, "warning": null,
      "error": null, "epoch": 2, "match_rate": 0.75, "opens": 400, "matched": 300,
      "ram": {"bytes": 268435456, "capacity": 1073741824, "files": 1234,
              "hits": 90, "misses": 10},
      "ssd": {"enabled": true, "error": null, "bytes": 0, "capacity": 4294967296,
              "files": 0, "hits": 0, "misses": 0, "errors": 0},
      "backing": {"reads": 5000, "bytes": 104857600, "files": 1000,
                  "saved_reads": 3000, "saved_bytes": 314572800},
      "stage": {"state": "idle"},
      "prefetch": {"lead": 512, "queued": 3, "running": 2, "prefetched": 800},
      "stall_seconds": 1.5,
      "requests": {"open": 1000, "read": 4000, "getattr": 5},
      "ranks": [{"rank": 0, "epoch": 2, "position": 250, "samples": 1000,
                 "samples_per_second": 480.0},
                {"rank": 1, "epoch": 2, "position": 500, "samples": 1000,
                 "samples_per_second": 0}],
      "jobs": [{"id": "default", "loaders": [{"root": "train", "mode": "clairvoyant",
                                               "epoch": 2, "match_rate": 0.75}]}],
      "peers": null
    })");
}

WatchFrame frame(int width = 100, int height = 30) {
    WatchFrame f;
    f.mount = "/mnt/train";
    f.interval = 0.5;
    f.clock = "14:03:22";
    f.width = width;
    f.height = height;
    return f;
}

// The line that begins with `label`, or "".
std::string line_of(const std::vector<std::string>& lines, const std::string& label) {
    for (const auto& l : lines)
        if (l.rfind(label, 0) == 0) return l;
    return "";
}

size_t count(const std::string& s, char c) {
    return static_cast<size_t>(std::count(s.begin(), s.end(), c));
}

} // namespace

TEST_CASE("a bar's fill is its fraction, rounded to the nearest cell and clamped") {
    CHECK(watch_bar(0, 10) == "[..........]");
    CHECK(watch_bar(0.25, 20) == "[#####...............]");
    CHECK(watch_bar(0.5, 10) == "[#####.....]");
    CHECK(watch_bar(0.04, 10) == "[..........]");
    CHECK(watch_bar(0.06, 10) == "[#.........]");
    CHECK(watch_bar(1, 10) == "[##########]");
    CHECK(watch_bar(1.7, 10) == "[##########]");
    CHECK(watch_bar(-1, 10) == "[..........]");
    CHECK(watch_bar(0.0 / 0.0, 10) == "[..........]");
}

TEST_CASE("the tiers are bars of their use, with bytes, files and hit rate") {
    auto lines = watch_lines({status(), 10}, nullptr, frame());
    std::string ram = line_of(lines, "RAM");
    REQUIRE(!ram.empty());
    // 100 columns leave the bars 26 cells: a quarter full is 7 (6.5 rounded).
    size_t open = ram.find('['), close = ram.find(']');
    REQUIRE(close - open - 1 == 26);
    CHECK(count(ram.substr(open, close - open), '#') == 7);
    CHECK(ram.find("256.0 MiB / 1.0 GiB (25%)") != std::string::npos);
    CHECK(ram.find("1,234 files") != std::string::npos);
    CHECK(ram.find("hit 90.0%") != std::string::npos);
    std::string ssd = line_of(lines, "SSD");
    CHECK(ssd.find("[..........................]  0 B / 4.0 GiB (0%)") != std::string::npos);
    CHECK(ssd.find("hit -") != std::string::npos);
    CHECK(ssd.find("errors") == std::string::npos);
}

TEST_CASE("the header, the job, the lead and what the shared FS was spared") {
    auto lines = watch_lines({status(), 10}, nullptr, frame());
    CHECK(lines.front() == "clairfs 14:03:22   mode clairvoyant   every 0.5 s   /mnt/train");
    CHECK(lines.back() == "q quits, space refreshes");
    CHECK(line_of(lines, "job").find("epoch 2, match rate 75.0% (300 of 400 opens)") !=
          std::string::npos);
    std::string rank0 = line_of(lines, "  rank 0");
    CHECK(rank0.find("[#######...................]  250 / 1,000  480 samples/s") !=
          std::string::npos);
    CHECK(line_of(lines, "  rank 1").find("samples/s") == std::string::npos);
    CHECK(line_of(lines, "prefetch") ==
          "prefetch  lead 512 samples, 3 queued, 2 running, readers waited 1.50 s");
    CHECK(line_of(lines, "shared FS") == "shared FS 100.0 MiB read, 1,000 files, 5,000 reads");
    CHECK(line_of(lines, "saved") ==
          "saved     300.0 MiB not read from the shared FS (3,000 file reads)");
    CHECK(line_of(lines, "FUSE") == "FUSE      5,005 requests");
    // One loader: no per-loader lines; no peers: no peers line.
    CHECK(line_of(lines, "  default/").empty());
    CHECK(line_of(lines, "peers").empty());
}

TEST_CASE("rates are the counters' growth per second between two refreshes") {
    json later = status();
    later["backing"]["bytes"] = 104857600 + 2 * 52428800; // +100 MiB in 2 s
    later["backing"]["files"] = 1100;
    later["backing"]["saved_bytes"] = 314572800 + 2 * 1048576;
    later["requests"]["open"] = 1200;
    later["requests"]["read"] = 4100;
    later["prefetch"]["prefetched"] = 801;
    WatchSample before{status(), 10}, now{later, 12};
    auto lines = watch_lines(now, &before, frame(200));
    CHECK(line_of(lines, "shared FS").find("; now 50.0 MiB/s, 50 files/s") != std::string::npos);
    CHECK(line_of(lines, "saved").find("; now 1.0 MiB/s") != std::string::npos);
    CHECK(line_of(lines, "FUSE") ==
          "FUSE      5,305 requests; now 150/s, 100 opens/s, 50 reads/s");
    CHECK(line_of(lines, "prefetch").find("0.5 fetched/s") != std::string::npos);

    SUBCASE("a counter that went down (a new mount) has no rate") {
        later["backing"]["bytes"] = 1;
        WatchSample reset{later, 12};
        CHECK(line_of(watch_lines(reset, &before, frame(200)), "shared FS").find("now") ==
              std::string::npos);
    }
    SUBCASE("no time between the samples, no rates") {
        WatchSample same{later, 10};
        CHECK(line_of(watch_lines(same, &before, frame(200)), "FUSE") ==
              "FUSE      5,305 requests");
    }
}

TEST_CASE("an older daemon's status leaves out what it lacks") {
    json old = json::parse(R"({"mode": "unregistered",
                               "ram": {"bytes": 0, "capacity": 1024, "hits": 0, "misses": 0},
                               "backing": {"reads": 1, "bytes": 2, "files": 1}})");
    auto lines = watch_lines({old, 1}, nullptr, frame());
    CHECK(line_of(lines, "RAM").find("0 B / 1.0 KiB") != std::string::npos);
    CHECK(line_of(lines, "RAM").find("files") == std::string::npos);
    for (const char* absent : {"SSD", "stage", "prefetch", "job", "saved", "FUSE", "peers"})
        CHECK_MESSAGE(line_of(lines, absent).empty(), absent);
    CHECK(!line_of(lines, "shared FS").empty());

    auto bare = watch_lines({json::object(), 1}, nullptr, frame());
    CHECK(bare.front() == "clairfs 14:03:22   every 0.5 s   /mnt/train");
    CHECK(bare.back() == "q quits, space refreshes");
    CHECK(bare.size() == 4); // header, note, blank, footer
}

TEST_CASE("no job, a fallback, an SSD tier that is off, and peers") {
    json s = status();
    s["registered"] = false;
    s["detection"] = {{"state", "watching"}};
    s["ssd"] = {{"enabled", false}, {"error", "no space left"}};
    s["mode"] = "fallback";
    s["reason"] = "job default, loader 'train': the opens stopped following the order";
    s["peers"] = {{"alive", 2}, {"count", 3}, {"bytes_in", 2048}, {"bytes_out", 0}};
    auto lines = watch_lines({s, 1}, nullptr, frame(200));
    CHECK(line_of(lines, "job") == "job       none registered, detection watching");
    CHECK(line_of(lines, "  rank").empty());
    CHECK(line_of(lines, "SSD") == "SSD       off: no space left");
    CHECK(line_of(lines, "reason").find("stopped following") != std::string::npos);
    CHECK(line_of(lines, "peers") == "peers     2 of 3 alive, in 2.0 KiB, out 0 B");
}

TEST_CASE("several loaders get a line each") {
    json s = status();
    s["jobs"][0]["loaders"].push_back(
        {{"root", "val"}, {"mode", "fallback"}, {"epoch", 1}, {"match_rate", nullptr}});
    auto lines = watch_lines({s, 1}, nullptr, frame());
    CHECK(line_of(lines, "  default/train") ==
          "  default/train: clairvoyant, epoch 2, match rate 75.0%");
    CHECK(line_of(lines, "  default/val") == "  default/val: fallback, epoch 1, match rate -");
}

TEST_CASE("every line fits the terminal, and a short one keeps the footer") {
    for (int width : {20, 40, 63, 100, 180}) {
        auto lines = watch_lines({status(), 1}, nullptr, frame(width));
        for (const auto& l : lines) CHECK(static_cast<int>(l.size()) <= width);
    }
    auto narrow = watch_lines({status(), 1}, nullptr, frame(20));
    CHECK(narrow.front() == "clairfs 14:03:22   m");
    auto shortest = watch_lines({status(), 1}, nullptr, frame(100, 5));
    REQUIRE(shortest.size() == 5);
    CHECK(shortest.front().rfind("clairfs ", 0) == 0);
    CHECK(shortest.back() == "q quits, space refreshes");
    CHECK(watch_lines({status(), 1}, nullptr, frame(100, 1)).size() == 1);
    CHECK(watch_lines({status(), 1}, nullptr, frame(100, 0)).empty());
}

TEST_CASE("text from the status cannot drive the terminal or be cut mid-character") {
    CHECK(fit_line("abc\x1b[2Jdef", 80) == "abc?[2Jdef");
    CHECK(fit_line("a\tb\nc\x7f", 80) == "a b?c?");
    CHECK(fit_line("x\xc2\x9b" "1m", 80) == "x?1m"); // C1 CSI
    CHECK(fit_line("\xe2\x86\x92 \xc3\xa9t\xc3\xa9", 80) == "\xe2\x86\x92 \xc3\xa9t\xc3\xa9");
    CHECK(fit_line("\xc3\xa9\xc3\xa9\xc3\xa9", 2) == "\xc3\xa9\xc3\xa9");
    CHECK(fit_line("ab\xe2\x86", 80) == "ab??"); // a sequence cut short
    CHECK(fit_line("\xff\x80z", 80) == "??z");
    CHECK(fit_line("abcdef", 3) == "abc");
    CHECK(fit_line("abc", 0).empty());

    json s = status();
    s["reason"] = "job x, loader '\x1b]0;owned\x07': mismatch";
    for (const auto& l : watch_lines({s, 1}, nullptr, frame()))
        CHECK(l.find('\x1b') == std::string::npos);
}
