// SPDX-License-Identifier: MIT
// The frames daemons exchange: a fixed header that checksums itself, then
// a payload that the header checksums. A frame that fails either check is
// never served: a bad header ends the connection (the stream has lost its
// place), a bad payload fails that one transfer, which the asker then reads
// from the shared file system.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace clairfs::peer {

enum class FrameType : uint8_t {
    hello = 1, // first frame on a connection: sender's rank, group token in the payload
    get = 2,   // asker -> home: send me file `file`
    data = 3,  // home -> asker: the file's bytes
    fail = 4,  // home -> asker: cannot, `error` says why (an errno)
    bye = 5,   // the sender is unmounting: do not ask it again
    note = 6,  // a small JSON payload (registration keys, status)
    ping = 7,  // nothing to say: the sender is alive (sent when a link is otherwise quiet)
};

struct FrameHeader {
    static constexpr uint32_t magic_value = 0x46504c43; // "CLPF"
    static constexpr uint8_t version_value = 1;
    static constexpr size_t size = 48;
    // Larger payloads are refused before any allocation: a corrupt length
    // must not make the receiver allocate terabytes.
    static constexpr uint64_t max_payload = uint64_t{1} << 34; // 16 GiB

    FrameType type = FrameType::hello;
    uint16_t flags = 0;
    uint32_t file = 0;      // the index node id (get, data, fail)
    uint32_t error = 0;     // positive errno (fail)
    uint64_t request = 0;   // the asker's id for the transfer, echoed back
    uint64_t length = 0;    // payload bytes after the header
    uint64_t payload_hash = 0; // XXH3-64 of the payload
};

// XXH3-64 of `bytes` (what payload_hash holds).
uint64_t payload_checksum(std::span<const char> bytes);

// Writes the header's 48 bytes, with its own checksum, into `out`.
void encode_header(const FrameHeader& h, char out[FrameHeader::size]);

// Parses 48 received bytes. "" on success, else why the header is not one
// (wrong magic or version, unknown type, checksum mismatch, oversized
// length): one line for the log.
std::string decode_header(const char in[FrameHeader::size], FrameHeader& out);

// Whether a received payload is the one its header describes.
bool payload_matches(const FrameHeader& h, std::span<const char> payload);

} // namespace clairfs::peer
