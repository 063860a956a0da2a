// SPDX-License-Identifier: MIT
#include "clairfs/layout/ranges_manifest.hpp"

#include "clairfs/config/utf8_text.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <unordered_map>

namespace clairfs::layout {
namespace {

// Millions of lines: numbers are read with from_chars, no stream.
bool parse_u64(std::string_view s, uint64_t& out) {
    if (s.empty() || s.size() > 20) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && p == s.data() + s.size();
}

std::string at_line(uint64_t line, std::string_view why) {
    return "line " + std::to_string(line) + ": " + std::string(why);
}

// "" or why PATH cannot name a file below the dataset root.
std::string path_problem(std::string_view path) {
    if (path.empty()) return "empty path";
    if (path.front() == '/') return "absolute path; paths are relative to the dataset root";
    size_t start = 0;
    while (start <= path.size()) {
        size_t slash = path.find('/', start);
        std::string_view part =
            path.substr(start, slash == std::string_view::npos ? std::string_view::npos
                                                               : slash - start);
        if (part.empty() || part == "." || part == "..")
            return "path '" + config::message_text(path) +
                   "' has an empty, '.' or '..' component";
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
    return "";
}

class Parser {
public:
    explicit Parser(Ranges& out) : out_(out) {}

    std::string entry(uint64_t line_no, std::string_view line) {
        std::string_view field[4];
        size_t start = 0;
        for (int f = 0; f < 4; ++f) {
            size_t tab = f == 3 ? std::string_view::npos : line.find('\t', start);
            if (f < 3 && tab == std::string_view::npos)
                return at_line(line_no, "expected INDEX, PATH, OFFSET and LENGTH separated by tabs");
            field[f] = line.substr(start, tab == std::string_view::npos ? tab : tab - start);
            start = tab + 1;
        }
        if (field[3].find('\t') != std::string_view::npos)
            return at_line(line_no, "more than four tab-separated fields");
        uint64_t index = 0, offset = 0, length = 0;
        if (!parse_u64(field[0], index))
            return at_line(line_no, "INDEX '" + config::message_text(field[0]) +
                                        "' is not a whole number");
        uint64_t expected = out_.entries.size();
        if (index != expected)
            return at_line(line_no, "sample " + std::to_string(index) + " where sample " +
                                        std::to_string(expected) +
                                        " was expected: entries must list samples 0, 1, 2, ... "
                                        "in order");
        if (auto why = path_problem(field[1]); !why.empty()) return at_line(line_no, why);
        if (!parse_u64(field[2], offset))
            return at_line(line_no, "OFFSET '" + config::message_text(field[2]) +
                                        "' is not a whole number");
        if (!parse_u64(field[3], length))
            return at_line(line_no, "LENGTH '" + config::message_text(field[3]) +
                                        "' is not a whole number");
        if (length == 0) return at_line(line_no, "sample " + std::to_string(index) + " is empty");
        if (length > UINT32_MAX)
            return at_line(line_no, "sample " + std::to_string(index) +
                                        " is 4 GiB or longer; clairfs takes samples below 4 GiB");
        if (offset > UINT64_MAX - length)
            return at_line(line_no, "OFFSET + LENGTH overflows");
        add_range(out_, field[1], offset, static_cast<uint32_t>(length));
        return "";
    }

private:
    Ranges& out_;
};

// "samples N", the line before the entries: N into `samples`, and room
// for the entries.
std::string declared_samples(uint64_t line_no, std::string_view line, size_t text_size,
                             Ranges& parsed, std::optional<uint64_t>& samples) {
    uint64_t n = 0;
    if (!line.starts_with("samples ") || !parse_u64(line.substr(8), n))
        return at_line(line_no, "expected 'samples N' before the entries");
    if (n == 0) return at_line(line_no, "a dataset needs at least one sample");
    if (n >= UINT32_MAX) return at_line(line_no, "clairfs takes at most 4294967294 samples");
    samples = n;
    // Not the declared count as it stands: "samples 4000000000" in a few
    // bytes would ask for 64 GB. An entry line takes at least 8 bytes
    // ("0\ta\t0\t1\n"), so the text bounds it.
    parsed.entries.reserve(std::min<uint64_t>(n, text_size / 8));
    return "";
}

} // namespace

void add_range(Ranges& r, std::string_view path, uint64_t offset, uint32_t length) {
    // Manifests list one file's samples together, so the last file used is
    // almost always the one: the search over the others is rare.
    uint32_t file = UINT32_MAX;
    if (!r.files.empty() && r.entries.size() > 0 && r.files[r.entries.back().file] == path)
        file = r.entries.back().file;
    for (uint32_t f = 0; file == UINT32_MAX && f < r.files.size(); ++f)
        if (r.files[f] == path) file = f;
    if (file == UINT32_MAX) {
        file = static_cast<uint32_t>(r.files.size());
        r.files.emplace_back(path);
    }
    r.entries.push_back({offset, length, file});
}

std::string parse_ranges(std::string_view text, Ranges& out) {
    Ranges parsed;
    Parser parser(parsed);
    uint64_t line_no = 0;
    std::optional<uint64_t> samples;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        std::string_view line = text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line_no == 1) {
            if (line != ranges_magic)
                return "line 1: expected '" + std::string(ranges_magic) +
                       "' (is this a ranges manifest? clairfs ranges writes one)";
            continue;
        }
        if (line.empty() || line.front() == '#') continue;
        if (!samples) {
            if (auto why = declared_samples(line_no, line, text.size(), parsed, samples);
                !why.empty())
                return why;
            continue;
        }
        if (parsed.entries.size() == *samples)
            return at_line(line_no, "more entries than the " + std::to_string(*samples) +
                                        " samples the manifest declares");
        if (auto why = parser.entry(line_no, line); !why.empty()) return why;
    }
    if (line_no == 0) return "the manifest is empty";
    if (!samples) return "the manifest declares no 'samples N'";
    if (parsed.entries.size() != *samples)
        return "the manifest declares " + std::to_string(*samples) + " samples but has " +
               std::to_string(parsed.entries.size()) + " entries (truncated?)";
    out = std::move(parsed);
    return "";
}

bool format_ranges(const Ranges& r, std::string_view comment,
                   const std::function<bool(std::string_view)>& write) {
    constexpr size_t piece = 1 << 20;
    std::string out;
    out.reserve(piece + 4096);
    out += ranges_magic;
    out += '\n';
    size_t pos = 0;
    while (pos < comment.size()) {
        size_t nl = comment.find('\n', pos);
        std::string_view line =
            comment.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
        out += "# ";
        out += line;
        out += '\n';
        pos = nl == std::string_view::npos ? comment.size() : nl + 1;
    }
    out += "samples " + std::to_string(r.entries.size()) + "\n";
    char num[24];
    auto put = [&](uint64_t v) {
        auto [p, ec] = std::to_chars(num, num + sizeof num, v);
        out.append(num, p);
    };
    for (size_t i = 0; i < r.entries.size(); ++i) {
        const Ranges::Entry& e = r.entries[i];
        put(i);
        out += '\t';
        out += r.files[e.file];
        out += '\t';
        put(e.offset);
        out += '\t';
        put(e.length);
        out += '\n';
        if (out.size() >= piece) {
            if (!write(out)) return false;
            out.clear();
        }
    }
    return out.empty() || write(out);
}

std::string format_ranges(const Ranges& r, std::string_view comment) {
    std::string text;
    format_ranges(r, comment, [&text](std::string_view piece) {
        text += piece;
        return true;
    });
    return text;
}

} // namespace clairfs::layout
