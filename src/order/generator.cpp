// SPDX-License-Identifier: MIT
#include "clairfs/order/generator.hpp"

#include <charconv>

namespace clairfs::order {

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

} // namespace clairfs::order
