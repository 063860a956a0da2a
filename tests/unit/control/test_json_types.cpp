// SPDX-License-Identifier: MIT
// config::json_value_text: the typed reading the control file uses, and
// the untyped one --config files keep.
#include "clairfs/config/json_keys.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace clairfs::config;
using nlohmann::json;

namespace {

std::string text(const char* j, JsonType type) {
    std::string out;
    std::string why = json_value_text(json::parse(j), type, out);
    return why.empty() ? out : "!" + why;
}

} // namespace

TEST_CASE("untyped keys take any scalar as its text") {
    CHECK(text("\"512K\"", JsonType::text) == "512K");
    CHECK(text("18446744073709551615", JsonType::text) == "18446744073709551615");
    CHECK(text("-3", JsonType::text) == "-3");
    CHECK(text("true", JsonType::text) == "true");
    CHECK(text("1.5", JsonType::text) == "1.5");
    CHECK(text("[1]", JsonType::text) == "!must be a string, number or boolean");
    CHECK(text("null", JsonType::text) == "!must be a string, number or boolean");
}

TEST_CASE("typed keys take only their type") {
    CHECK(text("42", JsonType::number) == "42");
    CHECK(text("\"42\"", JsonType::number) == "!must be a number");
    CHECK(text("false", JsonType::boolean) == "false");
    CHECK(text("0", JsonType::boolean) == "!must be true or false");
    CHECK(text("\"x\"", JsonType::string) == "x");
    CHECK(text("1", JsonType::string) == "!must be a string");
    CHECK(text("[0, 1, 3]", JsonType::integer_list) == "0,1,3");
    CHECK(text("[]", JsonType::integer_list) == "");
    CHECK(text("[0.5]", JsonType::integer_list).starts_with("!must be a list"));
    CHECK(text("\"0,1\"", JsonType::integer_list).starts_with("!must be a list"));
}

TEST_CASE("--config files keep reading strings for numbers") {
    std::string seen;
    auto why = apply_json_object(R"({"threads": "8"})", "cfg.json",
                                 [&](const std::string& k, const std::string& v) {
                                     seen = k + "=" + v;
                                     return std::string();
                                 });
    CHECK(why == "");
    CHECK(seen == "threads=8");
    CHECK(apply_json_object("[1]", "cfg.json", [](auto&, auto&) { return std::string(); }) ==
          "cfg.json: expected a JSON object");
    CHECK(apply_json_object("[1]", "", [](auto&, auto&) { return std::string(); }) ==
          "expected a JSON object");
}
