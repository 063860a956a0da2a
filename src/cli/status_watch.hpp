// SPDX-License-Identifier: MIT
// What `clairfs status --watch` draws on a terminal, as plain lines: no
// terminal in here, so a test can render a status document and read it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace clairfs::cli {

// One status document and when it was read (seconds on a steady clock).
struct WatchSample {
    nlohmann::json status;
    double seconds = 0;
};

// What the view shows around the status, and the room it has.
struct WatchFrame {
    std::string mount;
    double interval = 1; // seconds between refreshes
    std::string clock;   // wall-clock time of the sample, "14:03:22"
    std::string note;    // a line under the header when not empty
    int width = 80;
    int height = 24;
};

// The view: at most frame.height lines of at most frame.width columns, the
// footer last. Rates per second are taken against `previous` (null at the
// first refresh, which shows none). A key an older daemon does not write
// leaves out what needs it.
std::vector<std::string> watch_lines(const WatchSample& now, const WatchSample* previous,
                                     const WatchFrame& frame);

// "[####......]": `cells` cells between the brackets, filled in proportion
// to `fraction` (clamped to 0..1), rounded to the nearest cell.
std::string watch_bar(double fraction, int cells);

// `text` safe to print on a terminal and at most `width` columns: control
// characters (ESC, C1 included) become '?', so a file or job name cannot
// move the cursor, and a UTF-8 sequence is never cut in two. Columns are
// counted one per code point (no double-width characters).
std::string fit_line(std::string_view text, int width);

} // namespace clairfs::cli
