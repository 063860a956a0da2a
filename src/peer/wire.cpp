// SPDX-License-Identifier: MIT
#include "clairfs/peer/wire.hpp"

#include <cstring>
#include <xxhash.h>

namespace clairfs::peer {
namespace {

// Little-endian on the wire whatever the host; the daemons of one group
// may run on different machines.
void put(char*& p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) *p++ = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t get(const char*& p, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
        v |= static_cast<uint64_t>(static_cast<unsigned char>(*p++)) << (8 * i);
    return v;
}

constexpr size_t hashed = FrameHeader::size - 8; // the header's own checksum covers the rest

} // namespace

uint64_t payload_checksum(std::span<const char> bytes) {
    return XXH3_64bits(bytes.data(), bytes.size());
}

void encode_header(const FrameHeader& h, char out[FrameHeader::size]) {
    char* p = out;
    put(p, FrameHeader::magic_value, 4);
    put(p, FrameHeader::version_value, 1);
    put(p, static_cast<uint8_t>(h.type), 1);
    put(p, h.flags, 2);
    put(p, h.file, 4);
    put(p, h.error, 4);
    put(p, h.request, 8);
    put(p, h.length, 8);
    put(p, h.payload_hash, 8);
    put(p, XXH3_64bits(out, hashed), 8);
}

std::string decode_header(const char in[FrameHeader::size], FrameHeader& out) {
    const char* p = in;
    uint64_t magic = get(p, 4);
    uint64_t version = get(p, 1);
    uint64_t type = get(p, 1);
    FrameHeader h;
    h.flags = static_cast<uint16_t>(get(p, 2));
    h.file = static_cast<uint32_t>(get(p, 4));
    h.error = static_cast<uint32_t>(get(p, 4));
    h.request = get(p, 8);
    h.length = get(p, 8);
    h.payload_hash = get(p, 8);
    uint64_t header_hash = get(p, 8);
    if (magic != FrameHeader::magic_value) return "not a clairfs peer frame (bad magic)";
    if (header_hash != XXH3_64bits(in, hashed)) return "frame header checksum mismatch";
    if (version != FrameHeader::version_value)
        return "peer speaks frame version " + std::to_string(version) + ", this daemon " +
               std::to_string(FrameHeader::version_value);
    if (type < static_cast<uint64_t>(FrameType::hello) ||
        type > static_cast<uint64_t>(FrameType::ping))
        return "unknown frame type " + std::to_string(type);
    if (h.length > FrameHeader::max_payload)
        return "frame payload of " + std::to_string(h.length) + " bytes is over the limit";
    h.type = static_cast<FrameType>(type);
    out = h;
    return "";
}

bool payload_matches(const FrameHeader& h, std::span<const char> payload) {
    return payload.size() == h.length && payload_checksum(payload) == h.payload_hash;
}

} // namespace clairfs::peer
