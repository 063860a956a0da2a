// SPDX-License-Identifier: MIT
// The SSD tier's cache file as the tier sees it: whole aligned transfers
// that either complete or fail. The daemon uses AioFile (libaio, O_DIRECT);
// tests wrap it to inject the errors a failing disk returns.
#pragma once

#include <cstddef>
#include <cstdint>

namespace clairfs::cache {

class BlockDevice {
public:
    virtual ~BlockDevice() = default;
    // Exactly `len` bytes at `off`: 0, or -errno. With O_DIRECT the buffer
    // address, `len` and `off` are multiples of 4 KiB.
    virtual int read(char* buf, size_t len, uint64_t off) = 0;
    virtual int write(const char* buf, size_t len, uint64_t off) = 0;
    // Makes completed writes durable (fdatasync); 0 or -errno.
    virtual int sync() = 0;
};

} // namespace clairfs::cache
