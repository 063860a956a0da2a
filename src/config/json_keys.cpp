// SPDX-License-Identifier: MIT
#include "clairfs/config/json_keys.hpp"

#include "clairfs/config/strict_json.hpp"
#include "clairfs/config/utf8_text.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

namespace clairfs::config {
namespace {

std::string number_text(const nlohmann::json& v, std::string& out) {
    if (!v.is_number()) return "must be a number";
    // Numbers keep their JSON spelling; a fraction is then refused by the
    // integer parsers with the value in the message.
    out = v.dump();
    return "";
}

std::string list_text(const nlohmann::json& v, std::string& out) {
    const char* why = "must be a list of integers, such as [0, 1]";
    if (!v.is_array()) return why;
    out.clear();
    for (const auto& e : v) {
        if (!e.is_number_unsigned()) return why;
        if (!out.empty()) out += ',';
        out += e.dump();
    }
    return "";
}

} // namespace

std::string json_value_text(const nlohmann::json& v, JsonType type, std::string& out) {
    switch (type) {
    case JsonType::number:
        return number_text(v, out);
    case JsonType::boolean:
        if (!v.is_boolean()) return "must be true or false";
        out = v.get<bool>() ? "true" : "false";
        return "";
    case JsonType::string:
        if (!v.is_string()) return "must be a string";
        out = v.get<std::string>();
        return "";
    case JsonType::integer_list:
        return list_text(v, out);
    case JsonType::text:
        break;
    }
    if (v.is_string()) {
        out = v.get<std::string>();
        return "";
    }
    if (v.is_boolean()) return json_value_text(v, JsonType::boolean, out);
    if (v.is_number()) return number_text(v, out);
    return "must be a string, number or boolean";
}

std::string apply_json_object(std::string_view text, const std::string& origin,
                              const KeySetter& set, std::string_view null_text) {
    std::string prefix = origin.empty() ? "" : origin + ": ";
    nlohmann::json j;
    if (auto why = parse_strict_json(text, j); !why.empty()) return prefix + why;
    if (!j.is_object()) return prefix + "expected a JSON object";
    for (auto& [key, value] : j.items()) {
        std::string v;
        if (value.is_null() && !null_text.empty())
            v = null_text;
        else if (auto why = json_value_text(value, JsonType::text, v); !why.empty())
            return prefix + "key '" + message_text(key) + "' " + why;
        if (auto why = set(key, v); !why.empty()) return prefix + why;
    }
    return "";
}

std::string apply_json_file(const std::string& path, const KeySetter& set,
                            std::string_view null_text) {
    std::string text;
    if (!read_text_file(path, text, max_json_bytes + 1))
        return "cannot read config file '" + path + "'";
    return apply_json_object(text, path, set, null_text);
}

bool read_text_file(const std::string& path, std::string& text, size_t max) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    text.clear();
    std::string chunk(size_t{64} << 10, '\0');
    while (text.size() < max) {
        size_t want = std::min(chunk.size(), max - text.size());
        in.read(chunk.data(), static_cast<std::streamsize>(want));
        text.append(chunk.data(), static_cast<size_t>(in.gcount()));
        if (!in) break;
    }
    return !in.bad();
}

} // namespace clairfs::config
