// SPDX-License-Identifier: MIT
// Reads a mount's status on a thread of its own, so that the watch view
// still answers 'q', ^C and resizes while a hung mount does not answer: a
// read of a FUSE file waits for the daemon, and only a fatal signal ends
// that wait.
#pragma once

#include <memory>
#include <string>

namespace clairfs::cli {

class StatusReader {
public:
    explicit StatusReader(std::string path);
    // Does not wait for a read stuck in the kernel: the thread is left to
    // end with the process.
    ~StatusReader();
    StatusReader(const StatusReader&) = delete;
    StatusReader& operator=(const StatusReader&) = delete;

    // Starts one read of the whole file; false if one is running already.
    bool request();
    // Readable once a read has finished.
    int fd() const;
    // The finished read: true and `err` 0 with the file's text, or a
    // -errno; false while none has finished.
    bool take(int& err, std::string& text);

private:
    struct State;
    std::shared_ptr<State> state_;
};

} // namespace clairfs::cli
