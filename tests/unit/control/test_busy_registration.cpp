// SPDX-License-Identifier: MIT
// "replace": true lets a registration replace a job of its name that
// another process's processes still run (Controller::register_job).
#include "clairfs/control/registration.hpp"

#include <doctest/doctest.h>

using namespace clairfs;

TEST_CASE("replace is a key of the whole registration") {
    control::ControlRequest req;
    CHECK(control::parse_control(R"({"seed": 1, "replace": true})", req).empty());
    CHECK(req.replace);
    CHECK(control::parse_control(R"({"seed": 1})", req).empty());
    CHECK_FALSE(req.replace);
    // Not a key of the job: the job reads back, and compares, without it.
    CHECK(control::parse_control(R"({"seed": 1, "replace": true, "loaders": [{"root": "a"}]})", req)
              .empty());
    CHECK(req.replace);
    CHECK(control::job_json(req.job).find(R"("replace")") == std::string::npos);
    CHECK(control::parse_control(R"({"replace": true})", req) ==
          "replace goes with a registration, not on its own");
    CHECK(control::parse_control(R"({"seed": 1, "replace": "yes"})", req) ==
          "replace must be true or false");
    CHECK(control::parse_control(R"({"loaders": [{"root": "a", "replace": true}]})", req) ==
          "replace belongs to the whole registration, not to one loader");
    CHECK(control::parse_control(R"({"unregister": true, "replace": true})", req) ==
          "unregister: true takes no other keys than job");
}
