// SPDX-License-Identifier: MIT
// clairfs ranges packed: fixed-size records, and the .npy index of
// --offsets, written here byte by byte as numpy's format describes it.
#include "ranges/npy_header.hpp"
#include "ranges/ranges_writers.hpp"
#include "ranges_fixtures.hpp"

#include <cstring>

using namespace clairfs;
using namespace clairfs::test;

namespace {

// A .npy file of format version `major` with header dict `dict`: padded with
// spaces and a newline to a multiple of 64 bytes, as numpy pads it.
std::string npy(const std::string& dict, const std::string& data, int major = 1) {
    size_t prefix = major == 1 ? 10 : 12;
    std::string header = dict;
    header += std::string((64 - (prefix + header.size() + 1) % 64) % 64, ' ') + "\n";
    std::string out = "\x93NUMPY";
    out += static_cast<char>(major);
    out += '\0';
    for (size_t b = 0; b < prefix - 8; ++b) out += static_cast<char>(header.size() >> (8 * b));
    return out + header + data;
}

template <class T>
std::string little(std::initializer_list<T> values) {
    std::string out;
    for (T v : values)
        for (size_t b = 0; b < sizeof(T); ++b)
            out += static_cast<char>(static_cast<uint64_t>(v) >> (8 * b));
    return out;
}

struct Packed {
    DiskTree t;
    std::vector<ranges::Extent> out;

    ranges::Failure index(const std::string& bytes) {
        write_bytes(t.root / "index.npy", bytes);
        ranges::Progress quiet(false);
        out.clear();
        return ranges::npy_extents((t.root / "index.npy").string(), quiet, out);
    }
    std::string refusal(const std::string& bytes) {
        auto f = index(bytes);
        CHECK(f.usage);
        return f.message;
    }
};

bool has(const std::string& message, const char* part) {
    CAPTURE(message);
    return message.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("packed: fixed-size records after a header") {
    std::vector<ranges::Extent> out;
    REQUIRE(ranges::fixed_extents("f", 16 + 10 * 100, 16, 100, out).message == "");
    REQUIRE(out.size() == 10);
    CHECK(out[0].offset == 16);
    CHECK(out[9].offset == 916);
    CHECK(out[9].length == 100);

    auto f = ranges::fixed_extents("f", 16 + 10 * 100 + 7, 16, 100, out);
    CHECK(f.usage);
    CHECK(has(f.message, "are 10 records of 100 and 7 bytes over"));
    CHECK(has(ranges::fixed_extents("f", 8, 16, 100, out).message, "shorter than its 16-byte"));
    CHECK(has(ranges::fixed_extents("f", 16, 16, 100, out).message, "no records"));
}

TEST_CASE("packed: a 1-D index of boundaries, every dtype and version") {
    Packed p;
    const std::vector<uint64_t> want = {0, 5, 105, 106, 4096};
    auto check = [&](const std::string& file) {
        REQUIRE(p.index(file).message == "");
        REQUIRE(p.out.size() == want.size() - 1);
        for (size_t i = 0; i + 1 < want.size(); ++i) {
            CHECK(p.out[i].offset == want[i]);
            CHECK(p.out[i].length == want[i + 1] - want[i]);
        }
    };
    check(npy("{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }",
              little<int64_t>({0, 5, 105, 106, 4096})));
    check(npy("{'descr': '<u8', 'fortran_order': False, 'shape': (5,), }",
              little<uint64_t>({0, 5, 105, 106, 4096}), 2));
    check(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }",
              little<int32_t>({0, 5, 105, 106, 4096}), 3));
    check(npy("{\"shape\": (5L,), \"descr\": \"<u4\", \"fortran_order\": False}",
              little<uint32_t>({0, 5, 105, 106, 4096})));
}

TEST_CASE("packed: an (n, 2) index of offsets and lengths") {
    Packed p;
    REQUIRE(p.index(npy("{'descr': '<u4', 'fortran_order': False, 'shape': (3, 2), }",
                        little<uint32_t>({100, 10, 0, 50, 60, 40})))
                .message == "");
    REQUIRE(p.out.size() == 3);
    CHECK(p.out[0].offset == 100);
    CHECK(p.out[0].length == 10);
    CHECK(p.out[2].offset == 60);
    CHECK(p.out[2].length == 40);
    // Out of order is fine; overlap is check_extents' to refuse.
    CHECK(ranges::check_extents("f", p.out, 110).message == "");
}

TEST_CASE("packed: bad indexes are refused with the reason") {
    Packed p;
    const std::string ok_data = little<int64_t>({0, 5, 10});
    auto with = [&](const std::string& dict) { return p.refusal(npy(dict, ok_data)); };
    CHECK(has(p.refusal(npy("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
                            little<int64_t>({0, 5, 5}))),
              "do not ascend at entry 2 (5 then 5)"));
    CHECK(has(p.refusal(npy("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
                            little<int64_t>({10, 5, 20}))),
              "do not ascend at entry 1 (10 then 5)"));
    CHECK(has(p.refusal(npy("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
                            little<int64_t>({-8, 5, 20}))),
              "entry 0 is negative"));
    CHECK(has(with("{'descr': '>i8', 'fortran_order': False, 'shape': (3,), }"), "big-endian"));
    CHECK(has(with("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }"),
              "not a little-endian 4- or 8-byte integer"));
    CHECK(has(with("{'descr': [('a', '<i8')], 'fortran_order': False, 'shape': (3,), }"),
              "not a plain type"));
    CHECK(has(with("{'descr': '<i8', 'fortran_order': True, 'shape': (3,), }"),
              "Fortran order"));
    CHECK(has(with("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), 'x': 1}"),
              "unexpected key 'x'"));
    CHECK(has(with("{'descr': '<i8', 'shape': (3,), }"), "lacks descr, fortran_order or shape"));
    CHECK(has(with("{'descr': '<i8', 'fortran_order': False, 'shape': (1, 3), }"),
              "neither (n + 1,) boundaries nor (n, 2)"));
    CHECK(has(with("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }"),
              "its shape (1,) is neither"));
    CHECK(has(with("{'descr': '<i8', 'fortran_order': False, 'shape': (), }"), "its shape ()"));
    CHECK(has(with("{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }"),
              "(truncated?)"));
    CHECK(has(with("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }"),
              "bytes where its header says"));
    CHECK(has(with("{'descr': '<i8', 'fortran_order': False, 'shape': (99999999999,), }"),
              "shorter than its shape says"));
    CHECK(has(with("['descr', '<i8']"), "not a dict"));
    CHECK(has(p.refusal("PK\x03\x04 a zip, as np.savez writes"), "not a .npy file"));
    std::string future = npy("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", ok_data);
    future[6] = 4;
    CHECK(has(p.refusal(future), "format version 4"));
    CHECK(has(p.refusal(future.substr(0, 9)), "truncated"));
}
