// SPDX-License-Identifier: MIT
// An option that takes one word of a few, kept as an enum: its words stand
// once, in a table beside the enum, and both its name function and the
// option registry's parser (set_choice_field) read that table, so the word
// a value is shown as is always a word that parses back to it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace clairfs::config {

template <typename E> struct Choice {
    E value;
    const char* word;
};

// Every enumerator has a word (tests/unit/config/test_mount_choices.cpp
// checks), so the "?" is never reached.
template <typename E, size_t N>
constexpr const char* word_of(const Choice<E> (&words)[N], E value) {
    for (const auto& c : words)
        if (c.value == value) return c.word;
    return "?";
}

template <typename E, size_t N>
constexpr bool parse_choice(const Choice<E> (&words)[N], std::string_view text, E& out) {
    for (const auto& c : words) {
        if (c.word == text) {
            out = c.value;
            return true;
        }
    }
    return false;
}

// "auto, always or never": the words in the table's order, for a message.
template <typename E, size_t N> std::string word_list(const Choice<E> (&words)[N]) {
    std::string out;
    for (size_t i = 0; i < N; ++i) {
        if (i > 0) out += i + 1 == N ? " or " : ", ";
        out += words[i].word;
    }
    return out;
}

} // namespace clairfs::config
