// SPDX-License-Identifier: MIT
// A control-file text as the control tests judge it: the registration
// parse_control makes of it (which must be accepted, and not be an
// unregister), or the one-line refusal it gives.
#pragma once

#include "clairfs/control/registration.hpp"

#include <doctest/doctest.h>
#include <string>
#include <string_view>

namespace clairfs::test {

inline control::Registration parsed(std::string_view text) {
    control::ControlRequest req;
    INFO(text);
    std::string why = control::parse_control(text, req);
    REQUIRE(why == "");
    REQUIRE_FALSE(req.unregister);
    return req.loaders().front();
}

inline std::string refusal(std::string_view text) {
    control::ControlRequest req;
    return control::parse_control(text, req);
}

} // namespace clairfs::test
