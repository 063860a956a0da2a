// SPDX-License-Identifier: MIT
// The values a user writes, parsed one way everywhere: mount options, the
// control file, --config files, `clairfs order` and `register` arguments.
// Below order/ and the option registry, which both use them (order may
// include config, never the reverse).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace clairfs::config {

// A key as registries store it: dashes become underscores, so "max-read"
// and "max_read" name one option everywhere (flags, -o, JSON).
std::string canonical_key(std::string_view name);

bool parse_size(std::string_view text, uint64_t& out); // 4096, 64K, 1M, 1MiB, 2G
bool parse_count(std::string_view text, uint64_t& out);
bool parse_bool(std::string_view text, bool& out);
bool parse_seconds(std::string_view text, double& out);

struct Seed {
    uint64_t value; // as torch keeps it: two's complement for negatives
    bool negative;
    bool operator==(const Seed&) const = default;
};

// Parses a Python int seed: decimal, optionally negative, in [-2^63, 2^64),
// the range torch.manual_seed accepts; nullopt otherwise.
std::optional<Seed> parse_seed(std::string_view text);

} // namespace clairfs::config
