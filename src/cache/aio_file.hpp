// SPDX-License-Identifier: MIT
// The SSD cache file through libaio: each calling thread has its own io
// context (made on first use, destroyed at thread exit), a transfer is cut
// into chunks of which at most `queue_depth` are in flight, and the call
// returns when all of them completed. Synchronous to the caller by design:
// the fetch pool already gives the SSD its parallelism, one request per
// thread, and a bounded depth keeps one large file from hogging the device.
#pragma once

#include "aio_transfer.hpp"
#include "clairfs/cache/block_device.hpp"

#include <cstddef>
#include <cstdint>

namespace clairfs::cache {

class AioFile final : public BlockDevice {
public:
    static constexpr unsigned queue_depth = 8;
    static constexpr size_t chunk = size_t{1} << 20;

    // Takes ownership of `fd`. `direct`: it was opened with O_DIRECT; if not,
    // transfers are plain pread/pwrite followed by POSIX_FADV_DONTNEED, so
    // the cache's files do not also fill the page cache, unless
    // `keep_pages` (a read whose pages the kernel is to serve next).
    // `to_eof`: a read that reaches the end of the file ends there, the
    // rest of the buffer untouched (an entry's file is exactly its size, so
    // its last block is short); otherwise the end of the file is -EIO.
    AioFile(int fd, bool direct, StallWatch stall = {}, bool to_eof = false,
            bool keep_pages = false);
    ~AioFile() override;
    AioFile(const AioFile&) = delete;
    AioFile& operator=(const AioFile&) = delete;

    int read(char* buf, size_t len, uint64_t off) override;
    int write(const char* buf, size_t len, uint64_t off) override;
    int sync() override;

    int fd() const { return fd_; }
    bool direct() const { return direct_; }

private:
    int transfer(bool write, char* buf, size_t len, uint64_t off);

    int fd_;
    bool direct_;
    StallWatch stall_;
    bool to_eof_;
    bool keep_pages_;
};

} // namespace clairfs::cache
