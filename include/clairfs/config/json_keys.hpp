// SPDX-License-Identifier: MIT
// JSON objects of string keys, as --config files (and later the control
// file) carry them: each value becomes the text the command line would
// carry, so one typed parser serves flags and files alike.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace clairfs::config {

// What a key's JSON value must be. `text` takes any scalar, as --config
// files always have (sizes such as "512K" are strings there); the control
// file types every key, so `"batch_size": "256"` is refused by name rather
// than silently accepted.
enum class JsonType {
    text,         // a string, number or boolean
    number,       // a JSON number (fractions reach the integer parsers, which refuse them)
    boolean,      // true or false
    string,       // a JSON string
    integer_list, // an array of non-negative integers, as text "0,1,3"
};

// The text `v` carries for a key of type `type`: "" or the reason, without
// the key ("must be a number").
std::string json_value_text(const nlohmann::json& v, JsonType type, std::string& out);

// Sets one key from its text: "" or the one-line reason.
using KeySetter = std::function<std::string(const std::string& key, const std::string& value)>;

// Applies every key of the JSON object `text` through `set`. Integers keep
// every digit (seeds reach 2^64-1). Returns "" or "ORIGIN: reason" (just
// the reason when `origin` is empty).
std::string apply_json_object(std::string_view text, const std::string& origin,
                              const KeySetter& set, std::string_view null_text = {});

// Reads `path` and applies it as above; a file that cannot be read is
// "cannot read config file 'PATH'".
// `null_text`, if not empty, is what a JSON null is passed on as (`clairfs
// order` reads null as Python's None); otherwise null is refused.
std::string apply_json_file(const std::string& path, const KeySetter& set,
                            std::string_view null_text = {});

// Reads a file, at most `max` bytes of it (a --config naming /dev/zero
// must not fill memory); false if it cannot be opened or read.
bool read_text_file(const std::string& path, std::string& text, size_t max = SIZE_MAX);

} // namespace clairfs::config
