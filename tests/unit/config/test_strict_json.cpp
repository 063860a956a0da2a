// SPDX-License-Identifier: MIT
// parse_strict_json: each class of input nlohmann would throw on or accept
// silently is one refusal with a reason, and nothing escapes as an exception.
#include "clairfs/config/json_keys.hpp"
#include "clairfs/config/strict_json.hpp"
#include "clairfs/config/utf8_text.hpp"

#include <doctest/doctest.h>

using namespace clairfs::config;

namespace {

std::string refusal(std::string_view text) {
    nlohmann::json j;
    return parse_strict_json(text, j);
}

std::string nested(size_t depth) {
    return std::string(depth, '[') + std::string(depth, ']');
}

} // namespace

TEST_CASE("a plain document parses and keeps every digit") {
    nlohmann::json j;
    REQUIRE(parse_strict_json(R"({"seed": 18446744073709551615, "a": [1, {"b": "é"}]})", j) ==
            "");
    CHECK(j["seed"].get<uint64_t>() == UINT64_MAX);
    CHECK(j["a"][1]["b"] == "é");
    nlohmann::ordered_json o;
    REQUIRE(parse_strict_json(R"({"z": 1, "a": 2})", o) == "");
    CHECK(o.begin().key() == "z");
}

TEST_CASE("a number past double's range is refused with the number, not thrown") {
    CHECK(refusal(R"({"seed": 1e999, "batch_size": 4})") ==
          "not valid JSON (number out of range: 1e999)");
    CHECK(refusal("-1e400") == "not valid JSON (number out of range: -1e400)");
}

TEST_CASE("nesting is bounded") {
    CHECK(refusal(nested(max_json_depth)) == "");
    CHECK(refusal(nested(max_json_depth + 1)) == "JSON nested deeper than 64 levels");
    CHECK(refusal(R"({"a":)" + nested(100000).substr(0, 100000) + "}") ==
          "JSON nested deeper than 64 levels");
}

TEST_CASE("invalid UTF-8 is refused with its byte offset") {
    CHECK(refusal("{\"root\": \"tr\xff\"}") == "not valid JSON (invalid UTF-8 at byte 12)");
    CHECK(refusal("{\"r\xc0\xaf\": 1}") == "not valid JSON (invalid UTF-8 at byte 3)"); // overlong
    CHECK(refusal("\"\xed\xa0\x80\"") == "not valid JSON (invalid UTF-8 at byte 1)"); // surrogate
    CHECK(refusal("\"\xe2\x82\"") == "not valid JSON (invalid UTF-8 at byte 1)");     // cut short
    CHECK(refusal("\"\xf4\x8f\xbf\xbf\"") == ""); // U+10FFFF is the last code point
}

TEST_CASE("a key given twice is refused, at any level, but siblings may share names") {
    CHECK(refusal(R"({"seed": 1, "seed": 2})") ==
          "duplicate key 'seed' (give each key once)");
    CHECK(refusal(R"({"a": {"x": 1, "x": 1}})") == "duplicate key 'x' (give each key once)");
    CHECK(refusal(R"({"a": {"x": 1}, "b": {"x": 1}, "c": [{"x": 1}, {"x": 2}]})") == "");
}

TEST_CASE("sizes are bounded: the document and each string") {
    std::string big(max_json_string + 1, 'a');
    CHECK(refusal("\"" + big + "\"") == "JSON string longer than 65536 bytes");
    CHECK(refusal("{\"" + big + "\": 1}") == "JSON string longer than 65536 bytes");
    CHECK(refusal("\"" + big.substr(1) + "\"") == "");
    CHECK(refusal(std::string(max_json_bytes + 1, ' ')) == "JSON text larger than 1048576 bytes");
}

TEST_CASE("syntax errors keep nlohmann's position, and a cut-short text says so") {
    CHECK(refusal("seed=42").starts_with("not valid JSON (at line 1, column 1: syntax error"));
    nlohmann::json j;
    bool early = false;
    CHECK(parse_strict_json(R"({"seed": 4)", j, &early) != "");
    CHECK(early);
    CHECK(parse_strict_json(R"({"seed": 4]})", j, &early) != "");
    CHECK_FALSE(early);
    CHECK(parse_strict_json("{}{}", j, &early) != "");
    CHECK_FALSE(early);
}

TEST_CASE("user text in a message stays one line of UTF-8 and is clipped on a character") {
    CHECK(message_text("short") == "short");
    CHECK(message_text("abcdef", 4) == "abcd...");
    CHECK(message_text("ab\xc3\xa9z", 3) == "ab...");
    CHECK(message_text("ab\xc3\xa9z", 4) == "ab\xc3\xa9...");
    CHECK(message_text("a\nb\r\x01\xff\x7f") == "a\\nb\\r\\x01\\xff\\x7f");
    CHECK(first_invalid_utf8("caf\xc3\xa9") == std::string_view::npos);
    CHECK(first_invalid_utf8("caf\xc3") == 3);
}

TEST_CASE("a config file is read only as far as the size bound, so /dev/zero is refused") {
    auto set = [](const std::string&, const std::string&) { return std::string(); };
    CHECK(apply_json_file("/dev/zero", set) == "/dev/zero: JSON text larger than 1048576 bytes");
    std::string text;
    REQUIRE(read_text_file("/dev/zero", text, 10));
    CHECK(text == std::string(10, '\0'));
}
