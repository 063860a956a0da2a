// SPDX-License-Identifier: MIT
#include "clairfs/config/utf8_text.hpp"

#include <cstdio>

namespace clairfs::config {
namespace {

std::string escaped(unsigned char c) {
    if (c == '\n') return "\\n";
    if (c == '\r') return "\\r";
    if (c == '\t') return "\\t";
    char buf[8];
    snprintf(buf, sizeof buf, "\\x%02x", c);
    return buf;
}

} // namespace

size_t utf8_length(std::string_view s, size_t i) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = byte(i);
    if (c < 0x80) return 1;
    size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (n == 0 || c > 0xF4 || i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k)
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
    unsigned char d = byte(i + 1);
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF.
    if ((c == 0xE0 && d < 0xA0) || (c == 0xED && d > 0x9F) || (c == 0xF0 && d < 0x90) ||
        (c == 0xF4 && d > 0x8F))
        return 0;
    return n;
}

size_t first_invalid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        size_t n = utf8_length(s, i);
        if (n == 0) return i;
        i += n;
    }
    return std::string_view::npos;
}

std::string message_text(std::string_view text, size_t max) {
    std::string out;
    for (size_t i = 0; i < text.size();) {
        size_t n = utf8_length(text, i);
        auto c = static_cast<unsigned char>(text[i]);
        bool plain = n > 1 || (n == 1 && c >= 0x20 && c != 0x7f);
        std::string piece = plain ? std::string(text.substr(i, n)) : escaped(c);
        if (out.size() + piece.size() > max) return out + "...";
        out += piece;
        i += n ? n : 1;
    }
    return out;
}

} // namespace clairfs::config
