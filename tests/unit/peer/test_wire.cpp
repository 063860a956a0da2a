// SPDX-License-Identifier: MIT
// A frame that fails its checks is never taken for a good one: a flipped
// bit anywhere in the header is refused, and a payload that is not the
// one the header describes does not match.
#include "clairfs/peer/group.hpp"
#include "clairfs/peer/wire.hpp"

#include <cstring>
#include <doctest/doctest.h>
#include <string>

using namespace clairfs::peer;

TEST_CASE("a header survives encoding and decoding") {
    FrameHeader h;
    h.type = FrameType::data;
    h.flags = 1;
    h.file = 123456;
    h.error = 5;
    h.request = 0x0102030405060708ULL;
    h.length = 110000;
    h.payload_hash = 0xdeadbeefcafef00dULL;
    char buf[FrameHeader::size];
    encode_header(h, buf);
    FrameHeader out;
    REQUIRE(decode_header(buf, out) == "");
    CHECK(out.type == FrameType::data);
    CHECK(out.flags == 1);
    CHECK(out.file == 123456);
    CHECK(out.error == 5);
    CHECK(out.request == h.request);
    CHECK(out.length == 110000);
    CHECK(out.payload_hash == h.payload_hash);
}

TEST_CASE("every single flipped bit of a header is refused") {
    FrameHeader h;
    h.type = FrameType::get;
    h.file = 7;
    h.request = 99;
    char good[FrameHeader::size];
    encode_header(h, good);
    for (size_t byte = 0; byte < FrameHeader::size; ++byte) {
        for (int bit = 0; bit < 8; ++bit) {
            char bad[FrameHeader::size];
            std::memcpy(bad, good, sizeof bad);
            bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
            FrameHeader out;
            CAPTURE(byte);
            CAPTURE(bit);
            CHECK(decode_header(bad, out) != "");
        }
    }
}

TEST_CASE("unknown types, other versions and huge lengths are refused with a reason") {
    FrameHeader h;
    h.length = FrameHeader::max_payload + 1;
    char buf[FrameHeader::size];
    encode_header(h, buf);
    FrameHeader out;
    CHECK(decode_header(buf, out).find("over the limit") != std::string::npos);

    h.length = 0;
    h.type = static_cast<FrameType>(42);
    encode_header(h, buf);
    CHECK(decode_header(buf, out).find("unknown frame type") != std::string::npos);

    h.type = FrameType::ping;
    encode_header(h, buf);
    std::memcpy(buf, "XXXX", 4);
    CHECK(decode_header(buf, out).find("bad magic") != std::string::npos);
}

TEST_CASE("a payload matches its header only byte for byte") {
    std::string body(100000, 'x');
    for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>(i * 31 + 7);
    FrameHeader h;
    h.type = FrameType::data;
    h.length = body.size();
    h.payload_hash = payload_checksum({body.data(), body.size()});
    CHECK(payload_matches(h, {body.data(), body.size()}));
    std::string flipped = body;
    flipped[54321] ^= 0x10;
    CHECK_FALSE(payload_matches(h, {flipped.data(), flipped.size()}));
    CHECK_FALSE(payload_matches(h, {body.data(), body.size() - 1}));
}

TEST_CASE("a group goes from the joining process to the daemon unchanged") {
    Group g;
    g.self = 1;
    g.token = "0123456789abcdef0123456789abcdef";
    for (int r = 0; r < 3; ++r)
        g.members.push_back({r, "node" + std::to_string(r), static_cast<uint16_t>(40000 + r),
                             0xabcdef00ULL + static_cast<uint64_t>(r), 1ULL << 33,
                             static_cast<uint32_t>(100 + r)});
    Group out;
    REQUIRE(group_from_json(group_to_json(g), out) == "");
    CHECK(out.self == 1);
    CHECK(out.token == g.token);
    REQUIRE(out.size() == 3);
    CHECK(out.members[2].host == "node2");
    CHECK(out.members[2].port == 40002);
    CHECK(out.members[2].fingerprint == 0xabcdef02ULL);
    CHECK(out.members[2].mem == (1ULL << 33));
    CHECK(group_from_json("{\"self\": 5, \"token\": \"x\", \"members\": []}", out) != "");
    CHECK(group_from_json("not json", out) != "");
}
