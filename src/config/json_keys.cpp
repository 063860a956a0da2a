// SPDX-License-Identifier: MIT
#include "clairfs/config/json_keys.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace clairfs::config {
namespace {

std::string value_text(const nlohmann::json& v, std::string& out) {
    if (v.is_string())
        out = v.get<std::string>();
    else if (v.is_boolean())
        out = v.get<bool>() ? "true" : "false";
    // Numbers keep their JSON spelling; a fraction is then refused by the
    // integer parsers with the value in the message.
    else if (v.is_number())
        out = v.dump();
    else
        return "must be a string, number or boolean";
    return "";
}

} // namespace

std::string apply_json_object(std::string_view text, const std::string& origin,
                              const KeySetter& set) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) return origin + ": not valid JSON";
    if (!j.is_object()) return origin + ": expected a JSON object";
    for (auto& [key, value] : j.items()) {
        std::string v;
        if (auto why = value_text(value, v); !why.empty())
            return origin + ": key '" + key + "' " + why;
        if (auto why = set(key, v); !why.empty()) return origin + ": " + why;
    }
    return "";
}

std::string apply_json_file(const std::string& path, const KeySetter& set) {
    std::string text;
    if (!read_text_file(path, text)) return "cannot read config file '" + path + "'";
    return apply_json_object(text, path, set);
}

bool read_text_file(const std::string& path, std::string& text) {
    std::ifstream in(path);
    if (!in) return false;
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    return true;
}

} // namespace clairfs::config
