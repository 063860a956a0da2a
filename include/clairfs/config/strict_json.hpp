// SPDX-License-Identifier: MIT
// The one way clairfs reads JSON it did not write itself (the control
// file, --register, --config files): every problem becomes a one-line
// reason, and what nlohmann accepts silently but a user never means is
// refused too (a key given twice, absurd depth or size).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace clairfs::config {

// Bounds far above any real registration or config file, low enough that
// no input can make the parser or the code after it work for long.
inline constexpr size_t max_json_bytes = size_t{1} << 20;
inline constexpr size_t max_json_depth = 64;
inline constexpr size_t max_json_string = size_t{64} << 10;

// Parses `text` as exactly one JSON document into `out`. Returns "" or the
// reason, such as "not valid JSON (duplicate key 'seed')"; never throws.
// `ended_early`, when given, is set if the text is a valid beginning that
// stopped short (more bytes could complete it).
std::string parse_strict_json(std::string_view text, nlohmann::json& out,
                              bool* ended_early = nullptr);
std::string parse_strict_json(std::string_view text, nlohmann::ordered_json& out,
                              bool* ended_early = nullptr);

} // namespace clairfs::config
