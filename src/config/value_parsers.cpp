// SPDX-License-Identifier: MIT
#include "clairfs/config/value_parsers.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace clairfs::config {

std::string canonical_key(std::string_view name) {
    std::string out(name);
    std::ranges::replace(out, '-', '_');
    return out;
}

bool parse_count(std::string_view text, uint64_t& out) {
    if (text.empty()) return false;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size();
}

bool parse_size(std::string_view text, uint64_t& out) {
    size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    uint64_t base;
    if (!parse_count(text.substr(0, digits), base)) return false;
    std::string_view unit = text.substr(digits);
    if (unit.ends_with("iB"))
        unit.remove_suffix(2);
    else if (unit.size() == 2 && (unit[1] == 'B' || unit[1] == 'b'))
        unit.remove_suffix(1);
    unsigned shift;
    if (unit.empty() || unit == "B" || unit == "b")
        shift = 0;
    else if (unit == "K" || unit == "k")
        shift = 10;
    else if (unit == "M" || unit == "m")
        shift = 20;
    else if (unit == "G" || unit == "g")
        shift = 30;
    else if (unit == "T" || unit == "t")
        shift = 40;
    else
        return false;
    if (shift && base > (UINT64_MAX >> shift)) return false;
    out = base << shift;
    return true;
}

bool parse_bool(std::string_view text, bool& out) {
    if (text == "true" || text == "1" || text == "yes" || text == "on")
        out = true;
    else if (text == "false" || text == "0" || text == "no" || text == "off")
        out = false;
    else
        return false;
    return true;
}

bool parse_seconds(std::string_view text, double& out) {
    if (text.empty()) return false;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size() && std::isfinite(out) && out >= 0;
}

std::optional<Seed> parse_seed(std::string_view text) {
    bool negative = !text.empty() && text.front() == '-';
    if (negative) text.remove_prefix(1);
    uint64_t magnitude;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), magnitude);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    if (!negative) return Seed{magnitude, false};
    if (magnitude > (uint64_t{1} << 63)) return std::nullopt; // below -2^63: torch overflows
    return Seed{~magnitude + 1, magnitude != 0};
}

} // namespace clairfs::config
