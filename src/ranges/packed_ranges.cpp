// SPDX-License-Identifier: MIT
// A packed file's samples: fixed-size records after an optional header, or
// the extents a .npy index lists (as a writer that appends samples to one
// file and keeps np.cumsum of their sizes would save it).
#include "npy_header.hpp"
#include "ranges_writers.hpp"

#include "clairfs/sys/syscalls.hpp"

namespace clairfs::ranges {
namespace {

std::string shape_text(const std::vector<uint64_t>& shape) {
    std::string s = "(";
    for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
    return s + (shape.size() == 1 ? ",)" : ")");
}

// The index's entries, each as a whole number (a negative one refused).
class NpyValues {
public:
    NpyValues(std::string_view data, const NpyHeader& h) : data_(data), h_(h) {}

    bool get(uint64_t k, uint64_t& out) const {
        uint64_t v = 0;
        for (unsigned b = h_.item_size; b-- > 0;)
            v = v << 8 | static_cast<unsigned char>(data_[k * h_.item_size + b]);
        if (h_.is_signed && (v >> (h_.item_size * 8 - 1)) != 0) return false;
        out = v;
        return true;
    }

private:
    std::string_view data_;
    const NpyHeader& h_;
};

// The index's shape as a sample count: n + 1 boundaries, or n pairs.
std::string sample_count(const NpyHeader& h, uint64_t& n) {
    const auto& s = h.shape;
    if (s.size() == 1 && s[0] >= 2) n = s[0] - 1;
    else if (s.size() == 2 && s[1] == 2 && s[0] >= 1) n = s[0];
    else
        return "its shape " + shape_text(s) +
               " is neither (n + 1,) boundaries nor (n, 2) offsets and lengths, n >= 1";
    return "";
}

Failure negative(const std::string& index, uint64_t k) {
    return refused(index + ": entry " + std::to_string(k) + " is negative");
}

Failure read_index(const std::string& index, std::string& text) {
    DataFile f;
    if (auto fail = f.open(index); !fail.message.empty()) return fail;
    text.resize(f.size);
    ssize_t n = sys::pread_full(f.fd, text.data(), text.size(), 0);
    if (n < 0)
        return failure("cannot read " + index + ": " + sys::error_text(static_cast<int>(n)));
    text.resize(static_cast<size_t>(n));
    return {};
}

} // namespace

Failure fixed_extents(const std::string& file, uint64_t file_size, uint64_t header,
                      uint64_t record, std::vector<Extent>& out) {
    if (header > file_size)
        return refused(file + " is " + std::to_string(file_size) + " bytes, shorter than its " +
                       std::to_string(header) + "-byte header");
    uint64_t body = file_size - header;
    if (body % record != 0)
        return refused(file + ": the " + std::to_string(body) + " bytes after the header are " +
                       std::to_string(body / record) + " records of " + std::to_string(record) +
                       " and " + std::to_string(body % record) + " bytes over");
    if (body == 0) return refused(file + " has no records after its header");
    out.reserve(body / record);
    for (uint64_t at = header; at < file_size; at += record) out.push_back({at, record});
    return {};
}

Failure npy_extents(const std::string& index, Progress& progress, std::vector<Extent>& out) {
    std::string text;
    if (auto fail = read_index(index, text); !fail.message.empty()) return fail;
    NpyHeader h;
    uint64_t n = 0;
    if (auto why = parse_npy_header(text, h); !why.empty()) return refused(index + ": " + why);
    if (auto why = sample_count(h, n); !why.empty()) return refused(index + ": " + why);
    // Each sample takes at least one 4-byte entry: a larger n is a
    // truncated file, and the byte count below cannot overflow.
    if (n > text.size()) return refused(index + " is shorter than its shape says (truncated?)");
    uint64_t want = h.data_offset + (h.shape.size() == 1 ? n + 1 : 2 * n) * h.item_size;
    if (text.size() != want)
        return refused(index + " is " + std::to_string(text.size()) + " bytes where its header " +
                       "says " + std::to_string(want) +
                       (text.size() < want ? " (truncated?)" : ""));
    NpyValues v(std::string_view(text).substr(h.data_offset), h);
    uint64_t a = 0, b = 0;
    out.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t k = h.shape.size() == 1 ? i : 2 * i;
        if (!v.get(k, a)) return negative(index, k);
        if (!v.get(k + 1, b)) return negative(index, k + 1);
        if (h.shape.size() == 1) {
            if (b <= a)
                return refused(index + ": the boundaries do not ascend at entry " +
                               std::to_string(i + 1) + " (" + std::to_string(a) + " then " +
                               std::to_string(b) + ")");
            b -= a;
        }
        out.push_back({a, b});
        progress.add();
    }
    return {};
}

} // namespace clairfs::ranges
