// SPDX-License-Identifier: MIT
// The receiving half of a link, without its socket: a byte stream in,
// whole frames (or the one bad header that ends the stream) out. The
// caller reads straight into space(), so a payload of gigabytes lands in
// its own buffer and is never copied; took() then says what those bytes
// completed. No lock and no I/O, so a unit test or a fuzzer drives it with
// plain buffers (tests/fuzz/fuzz_frames.cpp).
#pragma once

#include "clairfs/cache/blob.hpp"
#include "clairfs/peer/wire.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace clairfs::peer {

struct Decoded {
    enum class Kind : uint8_t {
        more,  // a frame is still partly received
        frame, // `header` and `payload` hold one whole frame
        bad,   // `why` says what is wrong with the header: the stream is lost
    };
    Kind kind = Kind::more;
    FrameHeader header;
    // `header.length` bytes, unchecked (payload_matches); null when empty.
    std::shared_ptr<cache::Blob> payload;
    std::string why; // one line
};

class FrameDecoder {
public:
    // Headers whose length is over `max_payload` are bad, before anything
    // is allocated. decode_header already holds every frame to
    // FrameHeader::max_payload; a fuzzer sets less, so that a header it
    // made valid cannot ask for gigabytes.
    explicit FrameDecoder(uint64_t max_payload = FrameHeader::max_payload)
        : max_payload_(max_payload) {}

    // Where the next bytes of the stream go: the rest of the header, or of
    // the payload. Never empty until a header was bad; empty after.
    std::span<char> space();

    // `n` bytes (1 to space().size()) were written at space(). At most one
    // frame completes per call: space() never spans two.
    Decoded took(size_t n);

private:
    Decoded header_done();

    uint64_t max_payload_;
    char header_[FrameHeader::size];
    size_t header_got_ = 0;
    FrameHeader cur_;
    std::shared_ptr<cache::Blob> body_;
    uint64_t body_got_ = 0;
    bool in_body_ = false;
    bool failed_ = false;
};

} // namespace clairfs::peer
