// SPDX-License-Identifier: MIT
#include "clairfs/peer/frame_decoder.hpp"

namespace clairfs::peer {

std::span<char> FrameDecoder::space() {
    if (failed_) return {};
    if (!in_body_) return {header_ + header_got_, FrameHeader::size - header_got_};
    return {body_->bytes.get() + body_got_, static_cast<size_t>(cur_.length - body_got_)};
}

Decoded FrameDecoder::took(size_t n) {
    if (!in_body_) {
        header_got_ += n;
        if (header_got_ < FrameHeader::size) return {};
        if (Decoded d = header_done(); d.kind == Decoded::Kind::bad) return d;
    } else {
        body_got_ += n;
    }
    // An empty payload completes with its header.
    if (body_got_ < cur_.length) return {};
    in_body_ = false;
    Decoded d;
    d.kind = Decoded::Kind::frame;
    d.header = cur_;
    d.payload = std::move(body_);
    return d;
}

// The header is whole: checked, then the payload's buffer made.
Decoded FrameDecoder::header_done() {
    Decoded d;
    d.why = decode_header(header_, cur_);
    if (d.why.empty() && cur_.length > max_payload_)
        d.why = "frame payload of " + std::to_string(cur_.length) + " bytes is over the limit";
    if (!d.why.empty()) {
        failed_ = true;
        d.kind = Decoded::Kind::bad;
        return d;
    }
    header_got_ = 0;
    body_got_ = 0;
    body_ = cur_.length ? cache::Blob::make(cur_.length) : nullptr;
    in_body_ = true;
    return d;
}

} // namespace clairfs::peer
