// SPDX-License-Identifier: MIT
#include "status_watch.hpp"
#include "status_summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

namespace clairfs::cli {
namespace {

using nlohmann::json;

double as_number(const json& v) {
    return v.is_number() ? v.get<double>() : 0.0;
}

// A value as text; null (an epoch not begun) as "-".
std::string text_or_dash(const json& v) {
    return v.is_string() ? v.get<std::string>() : v.is_null() ? "-" : v.dump();
}

// "1,234,567": counts a person compares at a glance.
std::string grouped(double v) {
    if (!std::isfinite(v) || v < 0 || v >= 1e18) return text_or_dash(json(v));
    std::string digits = std::to_string(static_cast<unsigned long long>(v + 0.5));
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string percent(double fraction) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.1f%%", fraction * 100);
    return buf;
}

// Small rates keep a decimal, or 0.4 files/s would read as none.
std::string per_second(double v) {
    if (v >= 10 || v == 0) return grouped(v);
    char buf[32];
    snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

// A label padded to the column the figures start at.
std::string row(const std::string& label, const std::string& text) {
    return label + std::string(label.size() < 10 ? 10 - label.size() : 1, ' ') + text;
}

// A counter's growth per second since the previous sample; none at the
// first refresh, or when it went down (another mount at the same path).
std::optional<double> rate(const WatchSample& now, const WatchSample* prev, const char* path) {
    if (!prev) return std::nullopt;
    double dt = now.seconds - prev->seconds;
    const json& a = status_at(prev->status, path);
    const json& b = status_at(now.status, path);
    if (dt <= 0 || !a.is_number() || !b.is_number() || as_number(b) < as_number(a)) return std::nullopt;
    return (as_number(b) - as_number(a)) / dt;
}

// The sum of an object's numbers: every kind of FUSE request.
double total(const json& counts) {
    double sum = 0;
    if (counts.is_object())
        for (const auto& [_, v] : counts.items()) sum += as_number(v);
    return sum;
}

// "[###.......]  1.2 GiB / 4.0 GiB (30%)  1,234 files  hit 97.1%"
std::string tier(const json& t, int cells) {
    double bytes = as_number(status_at(t, "bytes")), capacity = as_number(status_at(t, "capacity"));
    if (capacity <= 0) return "none (a capacity of 0)";
    double hits = as_number(status_at(t, "hits")), misses = as_number(status_at(t, "misses"));
    char pct[16];
    snprintf(pct, sizeof pct, " (%.0f%%)", 100 * std::min(1.0, bytes / capacity));
    std::string out = watch_bar(bytes / capacity, cells) + "  " + bytes_text(bytes) + " / " +
                      bytes_text(capacity) + pct;
    if (const json& files = status_at(t, "files"); files.is_number())
        out += "  " + grouped(as_number(files)) + " files";
    out += "  hit " + (hits + misses > 0 ? percent(hits / (hits + misses)) : std::string("-"));
    return out;
}

void tier_lines(const json& s, int cells, std::vector<std::string>& out) {
    if (status_at(s, "ram/capacity").is_number())
        out.push_back(row("RAM", tier(status_at(s, "ram"), cells)));
    if (const json& on = status_at(s, "ssd/enabled"); on.is_boolean()) {
        if (on.get<bool>()) {
            std::string t = tier(status_at(s, "ssd"), cells);
            if (double errors = as_number(status_at(s, "ssd/errors")); errors > 0)
                t += "  " + grouped(errors) + " errors";
            out.push_back(row("SSD", t));
        } else if (const json& why = status_at(s, "ssd/error"); why.is_string()) {
            out.push_back(row("SSD", "off: " + why.get<std::string>()));
        }
    }
    if (std::string st = text_or_dash(status_at(s, "stage/state")); st != "idle" && st != "-")
        out.push_back(row("stage", stage_line(status_at(s, "stage"))));
}

void prefetch_row(const WatchSample& now, const WatchSample* prev, std::vector<std::string>& out) {
    const json& s = now.status;
    const json& lead = status_at(s, "prefetch/lead");
    if (!lead.is_number()) return;
    std::string t = "lead " + grouped(as_number(lead)) + " samples";
    if (const json& q = status_at(s, "prefetch/queued"); q.is_number())
        t += ", " + grouped(as_number(q)) + " queued";
    if (const json& r = status_at(s, "prefetch/running"); r.is_number())
        t += ", " + grouped(as_number(r)) + " running";
    if (auto r = rate(now, prev, "prefetch/prefetched")) t += ", " + per_second(*r) + " fetched/s";
    if (const json& stall = status_at(s, "stall_seconds"); stall.is_number()) {
        char buf[48];
        snprintf(buf, sizeof buf, ", readers waited %.2f s", as_number(stall));
        t += buf;
    }
    out.push_back(row("prefetch", t));
}

// A line per loader of every job, only when there is more than one: with
// one, the job's line is its own.
void loader_lines(const json& jobs, std::vector<std::string>& out) {
    std::vector<std::string> lines;
    if (jobs.is_array())
        for (const auto& j : jobs)
            if (const json& loaders = status_at(j, "loaders"); loaders.is_array())
                for (const auto& l : loaders) {
                    const json& match = status_at(l, "match_rate");
                    lines.push_back("  " + text_or_dash(status_at(j, "id")) + "/" +
                                    text_or_dash(status_at(l, "root")) + ": " +
                                    text_or_dash(status_at(l, "mode")) + ", epoch " +
                                    text_or_dash(status_at(l, "epoch")) + ", match rate " +
                                    (match.is_number() ? percent(as_number(match)) : "-"));
                }
    if (lines.size() > 1) out.insert(out.end(), lines.begin(), lines.end());
}

// Each local rank's way through its epoch.
void rank_lines(const json& ranks, int cells, std::vector<std::string>& out) {
    if (!ranks.is_array()) return;
    for (const auto& r : ranks) {
        double pos = as_number(status_at(r, "position")), n = as_number(status_at(r, "samples"));
        std::string label = "  rank " + text_or_dash(status_at(r, "rank"));
        std::string t = "epoch " + text_or_dash(status_at(r, "epoch")) + "  " +
                        watch_bar(n > 0 ? pos / n : 0, cells) + "  " + grouped(pos) + " / " +
                        grouped(n);
        if (double sps = as_number(status_at(r, "samples_per_second")); sps > 0)
            t += "  " + per_second(sps) + " samples/s";
        out.push_back(row(label, t));
    }
}

void job_lines(const json& s, int cells, std::vector<std::string>& out) {
    const json& registered = status_at(s, "registered");
    if (registered.is_null()) return;
    if (!registered.is_string() && !(registered.is_boolean() && registered.get<bool>())) {
        std::string t = "none registered";
        if (std::string d = text_or_dash(status_at(s, "detection/state")); d != "-" && d != "off")
            t += ", detection " + d;
        out.push_back(row("job", t));
        return;
    }
    std::string t = registered.is_string() ? registered.get<std::string>() + ", " : "";
    t += "epoch " + text_or_dash(status_at(s, "epoch"));
    if (const json& m = status_at(s, "match_rate"); m.is_number()) {
        t += ", match rate " + percent(as_number(m));
        if (status_at(s, "opens").is_number())
            t += " (" + grouped(as_number(status_at(s, "matched"))) + " of " +
                 grouped(as_number(status_at(s, "opens"))) + " opens)";
    }
    out.push_back(row("job", t));
    loader_lines(status_at(s, "jobs"), out);
    rank_lines(status_at(s, "ranks"), cells, out);
}

void shared_fs_row(const WatchSample& now, const WatchSample* prev,
                   std::vector<std::string>& out) {
    const json& s = now.status;
    const json& b = status_at(s, "backing/bytes");
    if (!b.is_number()) return;
    std::string t = bytes_text(as_number(b)) + " read, " +
                    grouped(as_number(status_at(s, "backing/files"))) + " files, " +
                    grouped(as_number(status_at(s, "backing/reads"))) + " reads";
    if (auto r = rate(now, prev, "backing/bytes")) {
        t += "; now " + bytes_text(*r) + "/s";
        if (auto f = rate(now, prev, "backing/files")) t += ", " + per_second(*f) + " files/s";
    }
    out.push_back(row("shared FS", t));
}

void saved_row(const WatchSample& now, const WatchSample* prev, std::vector<std::string>& out) {
    const json& s = now.status;
    const json& reads = status_at(s, "backing/saved_reads");
    if (!reads.is_number()) return;
    const json& bytes = status_at(s, "backing/saved_bytes");
    std::string t = bytes.is_number()
                        ? bytes_text(as_number(bytes)) + " not read from the shared FS (" +
                              grouped(as_number(reads)) + " file reads)"
                        : grouped(as_number(reads)) + " file reads not made on the shared FS";
    if (auto r = rate(now, prev, "backing/saved_bytes")) t += "; now " + bytes_text(*r) + "/s";
    out.push_back(row("saved", t));
}

void fuse_row(const WatchSample& now, const WatchSample* prev, std::vector<std::string>& out) {
    const json& req = status_at(now.status, "requests");
    if (!req.is_object() || req.empty()) return;
    std::string t = grouped(total(req)) + " requests";
    if (prev && status_at(prev->status, "requests").is_object() && now.seconds > prev->seconds) {
        double all = (total(req) - total(status_at(prev->status, "requests"))) /
                     (now.seconds - prev->seconds);
        if (all >= 0) t += "; now " + per_second(all) + "/s";
        if (auto o = rate(now, prev, "requests/open")) t += ", " + per_second(*o) + " opens/s";
        if (auto r = rate(now, prev, "requests/read")) t += ", " + per_second(*r) + " reads/s";
    }
    out.push_back(row("FUSE", t));
}

void peers_row(const WatchSample& now, const WatchSample* prev, std::vector<std::string>& out) {
    const json& p = status_at(now.status, "peers");
    if (!p.is_object()) return;
    std::string t = grouped(as_number(status_at(p, "alive"))) + " of " +
                    grouped(as_number(status_at(p, "count"))) + " alive, in " +
                    bytes_text(as_number(status_at(p, "bytes_in"))) + ", out " +
                    bytes_text(as_number(status_at(p, "bytes_out")));
    auto in = rate(now, prev, "peers/bytes_in"), outr = rate(now, prev, "peers/bytes_out");
    if (in && outr) t += "; now in " + bytes_text(*in) + "/s, out " + bytes_text(*outr) + "/s";
    out.push_back(row("peers", t));
}

// What moves: the shared FS's reads and those saved, FUSE requests, peers.
void traffic_lines(const WatchSample& now, const WatchSample* prev, std::vector<std::string>& out) {
    shared_fs_row(now, prev, out);
    saved_row(now, prev, out);
    fuse_row(now, prev, out);
    peers_row(now, prev, out);
}

std::string header(const json& s, const WatchFrame& f) {
    char every[48];
    snprintf(every, sizeof every, "every %g s", f.interval);
    std::string t = "clairfs " + f.clock;
    if (const json& mode = status_at(s, "mode"); mode.is_string())
        t += "   mode " + mode.get<std::string>();
    // The mount last: a narrow terminal cuts the path, not the figures.
    return t + "   " + every + "   " + f.mount;
}

} // namespace

std::string watch_bar(double fraction, int cells) {
    if (!std::isfinite(fraction)) fraction = 0;
    fraction = std::clamp(fraction, 0.0, 1.0);
    cells = std::max(cells, 1);
    int filled = static_cast<int>(std::lround(fraction * cells));
    return "[" + std::string(static_cast<size_t>(filled), '#') +
           std::string(static_cast<size_t>(cells - filled), '.') + "]";
}

std::string fit_line(std::string_view text, int width) {
    std::string out;
    int columns = 0;
    for (size_t i = 0; i < text.size() && columns < width; ++columns) {
        auto c = static_cast<unsigned char>(text[i]);
        size_t len = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3
                                : c >= 0xf0 && c < 0xf5 ? 4 : 0;
        bool whole = len > 0 && i + len <= text.size();
        for (size_t k = 1; whole && k < len; ++k)
            whole = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
        // C1 controls (U+0080..U+009F) are CSI and friends to some terminals.
        bool control = c < 0x20 || c == 0x7f ||
                       (len == 2 && whole && c == 0xc2 &&
                        static_cast<unsigned char>(text[i + 1]) < 0xa0);
        if (!whole || control) {
            out += c == '\t' ? ' ' : '?';
            i += whole ? len : 1;
        } else {
            out.append(text.substr(i, len));
            i += len;
        }
    }
    return out;
}

std::vector<std::string> watch_lines(const WatchSample& now, const WatchSample* previous,
                                     const WatchFrame& frame) {
    const json& s = now.status;
    // Bars as wide as the terminal allows beside their figures, 10 to 40.
    int cells = std::clamp(frame.width - 74, 10, 40);
    std::vector<std::string> lines{header(s, frame), frame.note};
    for (const char* key : {"error", "reason", "warning"})
        if (const json& v = status_at(s, key); v.is_string())
            lines.push_back(row(key, v.get<std::string>()));
    tier_lines(s, cells, lines);
    prefetch_row(now, previous, lines);
    job_lines(s, cells, lines);
    traffic_lines(now, previous, lines);
    lines.emplace_back();
    const std::string footer = "q quits, space refreshes";
    if (frame.height <= 0) return {};
    // Too short a terminal loses the last figures, never the footer.
    lines.resize(std::min(lines.size(), static_cast<size_t>(frame.height - 1)));
    lines.push_back(footer);
    for (auto& l : lines) l = fit_line(l, frame.width);
    return lines;
}

} // namespace clairfs::cli
