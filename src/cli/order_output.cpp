// SPDX-License-Identifier: MIT
#include "order_output.hpp"

#include <charconv>

namespace clairfs::cli {

void LineWriter::indices(const std::vector<order::Sample>& order) {
    buf_ += '[';
    char num[16];
    for (size_t i = 0; i < order.size(); ++i) {
        if (i) buf_ += ',';
        auto [end, ec] = std::to_chars(num, num + sizeof num, order[i]);
        buf_.append(num, end);
        if (buf_.size() > flush_at) flush();
    }
    buf_ += "]\n";
}

void LineWriter::binary_indices(const std::vector<order::Sample>& order) {
    static_assert(sizeof(order::Sample) == 4);
    auto put_le = [this](uint64_t v, int bytes) {
        char le[8];
        for (int i = 0; i < bytes; ++i) le[i] = static_cast<char>((v >> (8 * i)) & 0xff);
        buf_.append(le, static_cast<size_t>(bytes));
    };
    put_le(order.size(), 8);
    for (order::Sample s : order) {
        put_le(s, 4);
        if (buf_.size() > flush_at) flush();
    }
}

// JSON escapes for quotes, backslashes and control bytes; other bytes pass
// through, so UTF-8 names stay readable (and non-UTF-8 names stay exact).
void LineWriter::json_string(std::string_view s) {
    buf_ += '"';
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            buf_ += '\\';
            buf_ += static_cast<char>(c);
        } else if (c < 0x20) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", c);
            buf_ += esc;
        } else {
            buf_ += static_cast<char>(c);
        }
    }
    buf_ += '"';
}

bool LineWriter::flush() {
    bool ok = fwrite(buf_.data(), 1, buf_.size(), out_) == buf_.size();
    buf_.clear();
    return fflush(out_) == 0 && ok;
}

} // namespace clairfs::cli
