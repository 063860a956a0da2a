// SPDX-License-Identifier: MIT
// A peer link's byte stream through the frame decoder. The first byte
// picks the form: odd, the rest after the chunk sizes is the stream as
// received (garbage, mostly: a header must checksum itself); even, it
// describes frames that are encoded with valid header checksums, some of
// an unknown type or over the length limit, then perhaps one byte flipped
// or the tail cut. The second byte says how many chunk sizes follow: the
// stream is fed in pieces of those sizes, as recv() may return it.
// Whatever the pieces, the decoder must give the frames it gives fed the
// whole stream at once, each the bytes it came from; and described frames
// come out as described, up to the first bad one, which ends the stream.
#include "clairfs/peer/frame_decoder.hpp"
#include "fuzz_check.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace clairfs;
using fuzz::Cursor;
using peer::Decoded;
using peer::FrameHeader;

namespace {

// Small enough that no header the fuzzer makes valid allocates much.
constexpr uint64_t cap = uint64_t{1} << 16;
constexpr size_t max_frames = 64;

struct Outcome {
    std::vector<std::string> frames; // each one's bytes, header and payload
    bool bad = false;
    std::string why;
};

// The frame that just completed, checked against the stream it came from.
std::string check_frame(const Decoded& d, std::string_view stream, size_t fed) {
    const uint64_t len = d.header.length;
    fuzz::require(len <= cap, "a frame over the length limit was taken");
    fuzz::require(d.payload ? d.payload->size == len : len == 0,
                  "a payload's size is not its header's length");
    fuzz::require(fed >= FrameHeader::size + len, "a frame longer than the bytes fed");
    std::string_view bytes = stream.substr(fed - FrameHeader::size - len, FrameHeader::size + len);
    char again[FrameHeader::size];
    peer::encode_header(d.header, again);
    fuzz::require(std::memcmp(again, bytes.data(), sizeof again) == 0,
                  "a frame's header is not the bytes it came from");
    fuzz::require(len == 0 || std::memcmp(d.payload->bytes.get(), bytes.data() + FrameHeader::size,
                                          len) == 0,
                  "a payload is not the bytes it came from");
    return std::string(bytes);
}

// `stream` fed in pieces of the sizes `pieces` lists, in turn (1 to 256
// bytes each), or as much as the decoder takes when it lists none.
Outcome decode(std::string_view stream, std::string_view pieces) {
    peer::FrameDecoder dec(cap);
    Outcome out;
    size_t fed = 0;
    for (size_t step = 0; fed < stream.size(); ++step) {
        std::span<char> space = dec.space();
        fuzz::require(!space.empty(), "no room for bytes while the stream is good");
        size_t n = std::min(space.size(), stream.size() - fed);
        if (!pieces.empty())
            n = std::min<size_t>(n, 1 + static_cast<uint8_t>(pieces[step % pieces.size()]));
        std::memcpy(space.data(), stream.data() + fed, n);
        fed += n;
        Decoded d = dec.took(n);
        if (d.kind == Decoded::Kind::bad) {
            fuzz::require_one_line(d.why);
            fuzz::require(!d.why.empty(), "a bad header without a reason");
            fuzz::require(dec.space().empty(), "the decoder goes on after a bad header");
            out.bad = true;
            out.why = d.why;
            return out;
        }
        fuzz::require(d.why.empty(), "a reason without a bad header");
        if (d.kind == Decoded::Kind::frame) out.frames.push_back(check_frame(d, stream, fed));
    }
    return out;
}

struct Described {
    size_t end = 0;     // where its bytes end in the stream
    size_t header_end = 0;
    bool valid = false; // a known type, within the limit
};

// The stream the described frames make; `frames` says where each lies.
std::string describe(Cursor c, std::vector<Described>& frames) {
    std::string out;
    while (!c.in.empty() && frames.size() < max_frames) {
        const auto kind = c.take<uint8_t>();
        FrameHeader h;
        const uint8_t type = kind % 9; // 0 and 8 are no type
        h.type = static_cast<peer::FrameType>(type);
        h.flags = c.take<uint16_t>();
        h.file = c.take<uint32_t>();
        h.request = c.take<uint8_t>();
        h.length = kind & 0x10 ? c.take<uint64_t>() : c.take<uint8_t>() * uint64_t{7};
        std::string payload;
        if (h.length <= cap) {
            payload.assign(c.in.substr(0, h.length));
            c.in.remove_prefix(payload.size());
            payload.resize(h.length);
        }
        h.payload_hash = kind & 0x20 ? c.take<uint64_t>() : peer::payload_checksum(payload);
        char header[FrameHeader::size];
        peer::encode_header(h, header);
        out.append(header, sizeof header);
        Described d;
        d.header_end = out.size();
        out += payload;
        d.end = out.size();
        d.valid = type >= 1 && type <= 7 && h.length <= cap;
        frames.push_back(d);
        if (!d.valid) break; // nothing after it is read
    }
    return out;
}

// What an undamaged stream cut to `size` bytes must decode to.
void check_described(const Outcome& got, const std::vector<Described>& frames, size_t size) {
    size_t whole = 0;
    bool bad = false;
    for (const Described& d : frames) {
        if (!d.valid) {
            bad = d.header_end <= size;
            break;
        }
        if (d.end > size) break;
        ++whole;
    }
    fuzz::require(got.frames.size() == whole, "described frames were lost or made up");
    fuzz::require(got.bad == bad, "a described bad header was taken, or a good one refused");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view in = fuzz::as_text(data, size);
    if (in.size() < 2) return 0;
    const bool raw = in[0] & 1;
    const size_t npieces = static_cast<uint8_t>(in[1]) % 16;
    in.remove_prefix(2);
    std::string_view pieces = in.substr(0, npieces);
    in.remove_prefix(pieces.size());

    std::string stream;
    std::vector<Described> frames;
    uint16_t damage = 0;
    if (raw) {
        stream.assign(in);
    } else {
        Cursor c{in};
        damage = c.take<uint16_t>();
        stream = describe(c, frames);
        if (damage & 1 && !stream.empty())
            stream[(damage >> 2) % stream.size()] ^= static_cast<char>(0x5a);
        else if (damage & 2 && !stream.empty())
            stream.resize((damage >> 2) % stream.size());
    }

    const Outcome whole = decode(stream, {});
    const Outcome pieced = decode(stream, pieces);
    fuzz::require(pieced.frames == whole.frames && pieced.bad == whole.bad &&
                      pieced.why == whole.why,
                  "the pieces the stream came in changed what it decoded to");
    if (!raw && !(damage & 1)) check_described(whole, frames, stream.size());
    return 0;
}
