// SPDX-License-Identifier: MIT
// One typed registry of mount options: the command line (--max-read 1M),
// mount-style lists (-o max_read=1M) and JSON config files ({"max_read":
// "1M"}) all go through it, and --help is printed from it.
#pragma once

#include "clairfs/config/mount_options.hpp"

#include <span>
#include <string>
#include <string_view>

namespace clairfs::config {

enum class OptionType { flag, count, size, seconds, text, choice };

struct OptionSpec {
    std::string_view name; // canonical key, with underscores
    char short_name;       // single-letter alias, or 0
    OptionType type;
    std::string_view value_name; // shown in --help: N, SIZE, LEVEL
    std::string_view default_text;
    std::string_view help;
    // Parses `value` into `out`; returns "" or the reason it is invalid.
    std::string (*set)(MountOptions& out, std::string_view value);
};

std::span<const OptionSpec> mount_option_specs();

// Accepts "max_read", "max-read"; nullptr if unknown.
const OptionSpec* find_option(std::string_view name);

// "" on success, else a one-line reason naming the option.
std::string apply_option(MountOptions& out, std::string_view name, std::string_view value);

} // namespace clairfs::config
