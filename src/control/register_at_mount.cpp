// SPDX-License-Identifier: MIT
#include "clairfs/config/json_keys.hpp"
#include "clairfs/config/strict_json.hpp"
#include "clairfs/control/controller.hpp"

namespace clairfs::control {

std::string register_at_mount(Controller& control, const std::string& file) {
    std::string text;
    if (!config::read_text_file(file, text, config::max_json_bytes + 1))
        return "cannot register " + file + ": cannot read it";
    std::string why;
    if (control.write_control(text, why) < 0) return "cannot register " + file + ": " + why;
    return "";
}

} // namespace clairfs::control
