// SPDX-License-Identifier: MIT
// JSON objects of string keys, as --config files (and later the control
// file) carry them: each value becomes the text the command line would
// carry, so one typed parser serves flags and files alike.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace clairfs::config {

// Sets one key from its text: "" or the one-line reason.
using KeySetter = std::function<std::string(const std::string& key, const std::string& value)>;

// Applies every key of the JSON object `text` through `set`. Integers keep
// every digit (seeds reach 2^64-1). Returns "" or "ORIGIN: reason".
std::string apply_json_object(std::string_view text, const std::string& origin,
                              const KeySetter& set);

// Reads `path` and applies it as above; a file that cannot be read is
// "cannot read config file 'PATH'".
std::string apply_json_file(const std::string& path, const KeySetter& set);

// Reads a whole file; false if it cannot be opened.
bool read_text_file(const std::string& path, std::string& text);

} // namespace clairfs::config
