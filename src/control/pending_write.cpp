// SPDX-License-Identifier: MIT
#include "clairfs/control/pending_write.hpp"

#include "clairfs/config/strict_json.hpp"

#include <algorithm>
#include <cerrno>

namespace clairfs::control {

JsonProgress json_progress(std::string_view text) {
    if (std::ranges::all_of(text,
                            [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }))
        return JsonProgress::blank;
    nlohmann::json doc;
    bool ended_early = false;
    if (config::parse_strict_json(text, doc, &ended_early).empty()) return JsonProgress::complete;
    return ended_early ? JsonProgress::incomplete : JsonProgress::invalid;
}

int PendingWrite::write(std::string_view data, uint64_t off) {
    std::lock_guard lock(mu_);
    if (append_) off = buf_.size();
    // Writing from offset 0 again (after a seek, or pwrite) starts a new
    // registration rather than editing the one already applied.
    if (off == 0 && applied_ > 0) {
        buf_.clear();
        applied_ = 0;
    }
    if (off < applied_) {
        applied_ = buf_.size();
        return refuse_(
            "a write at offset " + std::to_string(off) +
            " overlaps a registration already applied (write a new registration from offset 0)");
    }
    if (off + data.size() > max_bytes) {
        applied_ = buf_.size();
        return refuse_("a registration larger than " + std::to_string(max_bytes) + " bytes");
    }
    // Any gap a seek left reads as NUL bytes, which no JSON accepts.
    if (buf_.size() < off + data.size()) buf_.resize(off + data.size(), '\0');
    std::ranges::copy(data, buf_.begin() + static_cast<std::ptrdiff_t>(off));

    std::string_view pending = std::string_view(buf_).substr(applied_);
    switch (json_progress(pending)) {
    case JsonProgress::blank:
    case JsonProgress::incomplete:
        return 0;
    case JsonProgress::complete:
    case JsonProgress::invalid:
        break;
    }
    return apply_pending();
}

int PendingWrite::flush() {
    std::lock_guard lock(mu_);
    if (json_progress(std::string_view(buf_).substr(applied_)) == JsonProgress::blank) return 0;
    return apply_pending();
}

int PendingWrite::apply_pending() {
    std::string text = buf_.substr(applied_);
    applied_ = buf_.size();
    return apply_(text);
}

} // namespace clairfs::control
