// SPDX-License-Identifier: MIT
#include "npy_header.hpp"

#include <charconv>
#include <cstring>

namespace clairfs::ranges {
namespace {

constexpr std::string_view magic = "\x93NUMPY";

// The tokens of the dict literal numpy writes: quoted strings without
// escapes, the words True and False, whole numbers (a Python 2 writer's
// "3L" included) and punctuation.
class Literal {
public:
    explicit Literal(std::string_view text) : s_(text) {}

    bool eat(char c) {
        skip();
        if (pos_ == s_.size() || s_[pos_] != c) return false;
        ++pos_;
        return true;
    }
    bool string(std::string& out) {
        skip();
        if (pos_ == s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return false;
        size_t close = s_.find(s_[pos_], pos_ + 1);
        if (close == std::string_view::npos) return false;
        out = s_.substr(pos_ + 1, close - pos_ - 1);
        pos_ = close + 1;
        return true;
    }
    bool boolean(bool& out) {
        skip();
        for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}})
            if (s_.substr(pos_).starts_with(word)) {
                pos_ += strlen(word);
                out = value;
                return true;
            }
        return false;
    }
    bool number(uint64_t& out) {
        skip();
        auto [p, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), out);
        if (ec != std::errc{}) return false;
        pos_ = static_cast<size_t>(p - s_.data());
        if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;
        return true;
    }
    bool at_end() {
        skip();
        return pos_ == s_.size();
    }

private:
    void skip() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t'))
            ++pos_;
    }
    std::string_view s_;
    size_t pos_ = 0;
};

bool read_shape(Literal& r, std::vector<uint64_t>& shape) {
    if (!r.eat('(')) return false;
    while (!r.eat(')')) {
        uint64_t n = 0;
        if (!r.number(n)) return false;
        shape.push_back(n);
        if (!r.eat(',')) return r.eat(')');
    }
    return true;
}

std::string read_descr(const std::string& descr, NpyHeader& out) {
    if (descr.size() == 3 && descr[0] == '>')
        return "its dtype '" + descr + "' is big-endian; save it little-endian (astype('<i8'))";
    if (descr.size() != 3 || descr[0] != '<' || (descr[1] != 'i' && descr[1] != 'u') ||
        (descr[2] != '4' && descr[2] != '8'))
        return "its dtype '" + descr + "' is not a little-endian 4- or 8-byte integer";
    out.is_signed = descr[1] == 'i';
    out.item_size = static_cast<unsigned>(descr[2] - '0');
    return "";
}

// The dict: exactly the keys descr, fortran_order and shape, as numpy
// itself requires.
std::string read_dict(std::string_view text, NpyHeader& out) {
    Literal r(text);
    std::string descr;
    bool fortran = false, have_descr = false, have_order = false, have_shape = false;
    if (!r.eat('{')) return "its header is not a dict";
    while (!r.eat('}')) {
        std::string key;
        if (!r.string(key) || !r.eat(':')) return "its header dict is malformed";
        if (key == "descr" && !have_descr) {
            if (!r.string(descr)) return "its dtype is not a plain type (a structured array?)";
            have_descr = true;
        } else if (key == "fortran_order" && !have_order) {
            if (!r.boolean(fortran)) return "its fortran_order is not True or False";
            have_order = true;
        } else if (key == "shape" && !have_shape) {
            if (!read_shape(r, out.shape)) return "its shape is not a tuple of whole numbers";
            have_shape = true;
        } else {
            return "its header has an unexpected key '" + key + "'";
        }
        if (!r.eat(',')) {
            if (!r.eat('}')) return "its header dict is malformed";
            break;
        }
    }
    if (!r.at_end()) return "its header has text after the dict";
    if (!have_descr || !have_order || !have_shape)
        return "its header lacks descr, fortran_order or shape";
    if (fortran) return "it is in Fortran order; save a C-ordered array";
    return read_descr(descr, out);
}

uint32_t little_endian(std::string_view b, size_t at, size_t n) {
    uint32_t v = 0;
    for (size_t k = n; k-- > 0;) v = v << 8 | static_cast<unsigned char>(b[at + k]);
    return v;
}

} // namespace

std::string parse_npy_header(std::string_view bytes, NpyHeader& out) {
    if (!bytes.starts_with(magic)) return "it is not a .npy file (no \\x93NUMPY magic)";
    if (bytes.size() < 10) return "its header is truncated";
    unsigned major = static_cast<unsigned char>(bytes[6]);
    if (major < 1 || major > 3)
        return "its format version " + std::to_string(major) + " is not 1, 2 or 3";
    size_t len_bytes = major == 1 ? 2 : 4;
    if (bytes.size() < 8 + len_bytes) return "its header is truncated";
    uint64_t start = 8 + len_bytes;
    uint64_t end = start + little_endian(bytes, 8, len_bytes);
    if (bytes.size() < end) return "its header is truncated";
    NpyHeader h;
    if (auto why = read_dict(bytes.substr(start, end - start), h); !why.empty()) return why;
    h.data_offset = end;
    out = std::move(h);
    return "";
}

} // namespace clairfs::ranges
