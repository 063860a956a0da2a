// SPDX-License-Identifier: MIT
// The control file under hostile or careless input: each class of bad text
// is one refusal with its reason, and odd but valid JSON values reach the
// typed setters as a clear refusal rather than an exception.
#include "clairfs/control/pending_write.hpp"
#include "clairfs/control/registration.hpp"
#include "control_text.hpp"

#include <doctest/doctest.h>

using namespace clairfs;
using control::ControlRequest;
using control::parse_control;

using test::refusal;

TEST_CASE("the registration that killed the daemon is refused with its number") {
    const char* text = R"({"seed": 1e999, "batch_size": 4})";
    CHECK(refusal(text) == "not valid JSON (number out of range: 1e999)");
    // The control file judges every write before applying it: that must
    // not throw either.
    CHECK(control::json_progress(text) == control::JsonProgress::invalid);
    CHECK(control::json_progress(R"({"seed": 1e999)") == control::JsonProgress::invalid);
}

TEST_CASE("deep nesting, invalid UTF-8, duplicate keys and huge strings are refused") {
    std::string deep = R"({"ranks": )" + std::string(100, '[') + std::string(100, ']') + "}";
    CHECK(refusal(deep) == "JSON nested deeper than 64 levels");
    CHECK(refusal("{\"root\": \"train\xc3\"}") == "not valid JSON (invalid UTF-8 at byte 15)");
    CHECK(refusal(R"({"seed": 1, "batch_size": 4, "seed": 2})") ==
          "duplicate key 'seed' (give each key once)");
    CHECK(refusal(R"({"root": ")" + std::string(100000, 'a') + R"("})") ==
          "JSON string longer than 65536 bytes");
    CHECK(control::json_progress("{\"root\": \"\xff") == control::JsonProgress::invalid);
    // A write may end inside a character: the next one can complete it.
    CHECK(control::json_progress("{\"root\": \"\xc3") == control::JsonProgress::incomplete);
    CHECK(control::json_progress("{\"root\": \"\xe2\x82") == control::JsonProgress::incomplete);
}

TEST_CASE("numbers that are valid JSON but not counts are refused by the key's range") {
    CHECK(refusal(R"({"batch_size": 4.5})").starts_with("invalid value for batch_size: 4.5"));
    CHECK(refusal(R"({"batch_size": 1e3})").starts_with("invalid value for batch_size: 1000.0"));
    CHECK(refusal(R"({"batch_size": -0})").starts_with("invalid value for batch_size: 0"));
    CHECK(refusal(R"({"epochs": 18446744073709551615})").starts_with("invalid value for epochs"));
    CHECK(refusal(R"({"num_workers": 1e300})").starts_with("invalid value for num_workers"));
    CHECK(refusal(R"({"n": 99999999999999999999})").starts_with("invalid value for n"));
    CHECK(refusal(R"({"seed": 1e3})").starts_with("invalid value for seed: 1000.0"));
}

TEST_CASE("ranks take only non-negative integers, whatever JSON number is given") {
    const std::string why = "ranks must be a list of integers, such as [0, 1]";
    for (const char* ranks : {"[-1]", "[-0]", "[0.5]", "[1e3]", "[1e300]", "[null]", "[[0]]",
                              "[18446744073709551616]", "{\"a\": 0}"})
        CHECK(refusal(std::string(R"({"ranks": )") + ranks + "}") == why);
    CHECK(refusal(R"({"ranks": [18446744073709551615]})") ==
          "ranks: 18446744073709551615 is out of range");
}

TEST_CASE("-0 as a seed is torch's seed 0") {
    ControlRequest req;
    REQUIRE(parse_control(R"({"seed": -0})", req) == "");
    CHECK(req.loaders().front().spec.seed == 0);
    CHECK_FALSE(req.loaders().front().spec.seed_negative);
}

TEST_CASE("a root that is absolute once \"./\" is dropped is refused, as it would read back") {
    CHECK(refusal(R"({"root": ".//x"})") ==
          "root must be relative to the mount root (such as \"train\"), not './/x'");
    ControlRequest req;
    REQUIRE(parse_control(R"({"root": "./train//"})", req) == "");
    CHECK(req.loaders().front().root == "train");
}
