// SPDX-License-Identifier: MIT
// UTF-8 checks, and user text (a JSON key, a manifest line) quoted inside
// a one-line reason: a reason lands in status JSON, the daemon's log and
// stderr, so it must stay one line of valid UTF-8 whatever the text holds.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace clairfs::config {

// Bytes in the well-formed UTF-8 sequence starting at s[i], or 0.
size_t utf8_length(std::string_view s, size_t i);

// Offset of the first byte that is not well-formed UTF-8, or npos.
size_t first_invalid_utf8(std::string_view s);

// `text` for a message: control characters and bytes that are not UTF-8
// escaped (\n, \x01, \xff), at most `max` bytes kept, never cutting a
// character, with "..." when cut.
std::string message_text(std::string_view text, size_t max = 80);

} // namespace clairfs::config
