// SPDX-License-Identifier: MIT
// The frame decoder without a socket: however the bytes of a link arrive
// (whole frames, a byte at a time, a frame split anywhere), the frames come
// out whole and in order; a header that is not one, or whose length is
// over the limit, ends the stream before anything is allocated for it.
#include "clairfs/peer/frame_decoder.hpp"

#include <algorithm>
#include <cstring>
#include <doctest/doctest.h>
#include <string>
#include <vector>

using namespace clairfs::peer;

namespace {

std::string frame(FrameType type, const std::string& payload, uint64_t request = 0) {
    FrameHeader h;
    h.type = type;
    h.request = request;
    h.length = payload.size();
    h.payload_hash = payload_checksum({payload.data(), payload.size()});
    char header[FrameHeader::size];
    encode_header(h, header);
    return std::string(header, sizeof header) + payload;
}

std::string text_of(const Decoded& d) {
    return d.payload ? std::string(d.payload->bytes.get(), d.payload->size) : "";
}

// Feeds `stream` in pieces of at most `piece` bytes, as recv() might return
// it; every result but "more", in order. Stops at a bad header.
std::vector<Decoded> feed(FrameDecoder& dec, const std::string& stream, size_t piece) {
    std::vector<Decoded> out;
    for (size_t fed = 0; fed < stream.size();) {
        std::span<char> space = dec.space();
        REQUIRE_FALSE(space.empty());
        size_t n = std::min({space.size(), piece, stream.size() - fed});
        std::memcpy(space.data(), stream.data() + fed, n);
        fed += n;
        Decoded d = dec.took(n);
        if (d.kind == Decoded::Kind::more) continue;
        out.push_back(std::move(d));
        if (out.back().kind == Decoded::Kind::bad) break;
    }
    return out;
}

} // namespace

TEST_CASE("frames come out whole however the stream is cut") {
    const std::string body(10000, 'b');
    const std::string stream = frame(FrameType::hello, "1 token") + frame(FrameType::ping, "") +
                               frame(FrameType::data, body, 77) + frame(FrameType::bye, "");
    for (size_t piece : {size_t{1}, size_t{7}, size_t{47}, size_t{48}, size_t{49}, size_t{4096},
                         stream.size()}) {
        CAPTURE(piece);
        FrameDecoder dec;
        auto got = feed(dec, stream, piece);
        REQUIRE(got.size() == 4);
        for (const auto& d : got) CHECK(d.kind == Decoded::Kind::frame);
        CHECK(got[0].header.type == FrameType::hello);
        CHECK(text_of(got[0]) == "1 token");
        CHECK(got[1].header.type == FrameType::ping);
        CHECK(got[1].payload == nullptr); // an empty payload comes with its header
        CHECK(got[2].header.request == 77);
        CHECK(text_of(got[2]) == body);
        CHECK(payload_matches(got[2].header, {got[2].payload->bytes.get(), got[2].payload->size}));
        CHECK(got[3].header.type == FrameType::bye);
    }
}

TEST_CASE("a partial frame is no frame until its last byte") {
    const std::string stream = frame(FrameType::note, "{\"a\": 1}");
    FrameDecoder dec;
    for (size_t i = 0; i + 1 < stream.size(); ++i) {
        std::span<char> space = dec.space();
        REQUIRE_FALSE(space.empty());
        // The room offered never runs past the part being received.
        CHECK(space.size() == (i < FrameHeader::size ? FrameHeader::size - i : stream.size() - i));
        space[0] = stream[i];
        CHECK(dec.took(1).kind == Decoded::Kind::more);
    }
    dec.space()[0] = stream.back();
    Decoded d = dec.took(1);
    CHECK(d.kind == Decoded::Kind::frame);
    CHECK(text_of(d) == "{\"a\": 1}");
    // Then the next header.
    CHECK(dec.space().size() == FrameHeader::size);
}

TEST_CASE("a length over the limit is refused before its payload is allocated") {
    FrameHeader h;
    h.type = FrameType::data;
    h.length = 101;
    char header[FrameHeader::size];
    encode_header(h, header);
    FrameDecoder small(100);
    auto got = feed(small, std::string(header, sizeof header), 48);
    REQUIRE(got.size() == 1);
    CHECK(got[0].kind == Decoded::Kind::bad);
    CHECK(got[0].why.find("over the limit") != std::string::npos);
    CHECK(got[0].payload == nullptr);
    CHECK(small.space().empty());

    // The wire's own limit holds with the default one (16 GiB).
    h.length = FrameHeader::max_payload + 1;
    encode_header(h, header);
    FrameDecoder dec;
    got = feed(dec, std::string(header, sizeof header), 48);
    REQUIRE(got.size() == 1);
    CHECK(got[0].kind == Decoded::Kind::bad);
    CHECK(got[0].why.find("over the limit") != std::string::npos);

    // At the limit it is a frame.
    FrameDecoder exact(100);
    got = feed(exact, frame(FrameType::data, std::string(100, 'x')), 4096);
    REQUIRE(got.size() == 1);
    CHECK(got[0].kind == Decoded::Kind::frame);
}

TEST_CASE("garbage ends the stream once a header's worth has arrived") {
    std::string garbage(200, '\x5a');
    FrameDecoder dec;
    for (size_t i = 0; i + 1 < FrameHeader::size; ++i) {
        dec.space()[0] = garbage[i];
        REQUIRE(dec.took(1).kind == Decoded::Kind::more);
    }
    dec.space()[0] = garbage[FrameHeader::size - 1];
    Decoded d = dec.took(1);
    CHECK(d.kind == Decoded::Kind::bad);
    CHECK(d.why.find("bad magic") != std::string::npos);
    CHECK(dec.space().empty()); // the stream has lost its place: nothing more is read

    // A good frame, then one whose header checksum is off by a bit.
    std::string stream = frame(FrameType::ping, "") + frame(FrameType::ping, "");
    stream[FrameHeader::size + 20] ^= 1;
    FrameDecoder second;
    auto got = feed(second, stream, 5);
    REQUIRE(got.size() == 2);
    CHECK(got[0].kind == Decoded::Kind::frame);
    CHECK(got[1].kind == Decoded::Kind::bad);
    CHECK(got[1].why.find("checksum") != std::string::npos);
    CHECK(got[1].why.find('\n') == std::string::npos);
}
