// SPDX-License-Identifier: MIT
// Typed setters for registries of string keys -> struct fields (mount
// options, job keys): each parses one text value into one field and
// returns "" or the reason the value is invalid.
#pragma once

#include "clairfs/config/choice_words.hpp"
#include "clairfs/config/value_parsers.hpp"

#include <string>
#include <string_view>

namespace clairfs::config {

template <typename> struct member_owner;
template <typename Owner, typename Field> struct member_owner<Field Owner::*> {
    using type = Owner;
};
template <auto Field> using owner_of = typename member_owner<decltype(Field)>::type;

template <auto Field> std::string set_bool_field(owner_of<Field>& target, std::string_view v) {
    return parse_bool(v, target.*Field) ? "" : "expected true or false";
}

// The flag that turns Field off (--no-detect for detect).
template <auto Field> std::string set_negated_field(owner_of<Field>& target, std::string_view v) {
    bool off;
    if (!parse_bool(v, off)) return "expected true or false";
    target.*Field = !off;
    return "";
}

// An integer field within [Lo, Hi].
template <auto Field, uint64_t Lo, uint64_t Hi>
std::string set_count_field(owner_of<Field>& target, std::string_view v) {
    uint64_t n;
    if (!parse_count(v, n) || n < Lo || n > Hi)
        return "expected an integer from " + std::to_string(Lo) + " to " + std::to_string(Hi);
    target.*Field = static_cast<std::remove_reference_t<decltype(target.*Field)>>(n);
    return "";
}

// An enum field that takes one of the words in Words (choice_words.hpp).
template <auto Field, const auto& Words>
std::string set_choice_field(owner_of<Field>& target, std::string_view v) {
    return parse_choice(Words, v, target.*Field) ? "" : "expected " + word_list(Words);
}

} // namespace clairfs::config
