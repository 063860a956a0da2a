// SPDX-License-Identifier: MIT
// One open of .clairfs/control for writing. Programs write a registration
// in one write(2) (echo, Python's buffered write) or in pieces (printf a;
// printf b), so bytes collect here and are applied as soon as they form a
// complete JSON document, else at close.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace clairfs::control {

// Where a buffer stands as JSON.
enum class JsonProgress {
    blank,      // only whitespace so far
    incomplete, // valid up to the end, which came early: more may follow
    complete,   // one whole document
    invalid,    // no continuation can make it valid
};
JsonProgress json_progress(std::string_view text);

class PendingWrite {
public:
    // Applies one complete write: 0 or -errno (Controller::write_control).
    using Apply = std::function<int(std::string_view text)>;
    // Records a write refused before parsing; returns -errno (Controller::refuse).
    using Refuse = std::function<int(const std::string& why)>;
    // Applied as one, a registration is at most this large.
    static constexpr size_t max_bytes = 1 << 20;

    // `append`: the file was opened O_APPEND, so offsets are ignored.
    PendingWrite(Apply apply, Refuse refuse, bool append)
        : apply_(std::move(apply)), refuse_(std::move(refuse)), append_(append) {}

    // A WRITE of `data` at `off`: stored, then applied if it completes a
    // document. 0 (the write succeeded, perhaps only buffered) or -errno;
    // a refused document is dropped, so close() does not refuse it again.
    int write(std::string_view data, uint64_t off);

    // A FLUSH (each close of the descriptor): applies what is pending, if
    // anything but whitespace. 0 or -errno.
    int flush();

private:
    int apply_pending();

    Apply apply_;
    Refuse refuse_;
    bool append_;
    // One open may be written by several threads at once. Held while
    // applying: lock order PendingWrite::mu_, Controller::mu_, the engine's.
    std::mutex mu_;
    std::string buf_;    // every byte written through this open, at its offset
    size_t applied_ = 0; // buf_[0, applied_) was applied or refused
};

} // namespace clairfs::control
