// SPDX-License-Identifier: MIT
// The links between the daemons of one group: one TCP connection per pair,
// all driven by one thread that sleeps in poll() (no busy polling: the
// job's loader workers need the cores). Frames to send are queued by any
// thread and written by that thread; frames received are handed to the
// caller's callbacks on it. A peer that closes, errs, sends a bad header
// or stays silent for the timeout is down for good: the link is closed and
// never reopened, so nobody waits on it again.
//
// Why TCP and not MPI point-to-point: with MPICH 4.0.2 (Debian 12, ch4:ucx)
// a process killed while others talk to it made Hydra's proxy fail
// ("unable to forward PMI response") and took the surviving ranks with it
// in 4 of 7 trials, and a receive posted to a dead rank never completes.
// MPI forms the group and hands out the addresses (peer/mpi_join.cpp); the
// bytes go over sockets whose failure the kernel reports at once.
#pragma once

#include "clairfs/cache/blob.hpp"
#include "clairfs/peer/group.hpp"
#include "clairfs/peer/wire.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace clairfs::peer {

struct TransportStats {
    uint64_t frames_in = 0, frames_out = 0;
    uint64_t bytes_in = 0, bytes_out = 0; // payload bytes
    uint64_t bad_frames = 0;              // headers or hellos refused
};

class Transport {
public:
    struct Events {
        // Every frame but hello and ping, on the transport thread; must not
        // block. `payload` holds `h.length` bytes (unchecked: see
        // payload_matches), or is null for an empty payload.
        std::function<void(int from, const FrameHeader& h, std::shared_ptr<cache::Blob> payload)>
            frame;
        // Once per peer that goes down, with a one-line reason.
        std::function<void(int peer, const std::string& why)> down;
        // Once per peer, when its link is up (hellos exchanged).
        std::function<void(int peer)> up;
    };

    // `listen_fd`: a listening socket (open_listener), owned from here on.
    // `timeout`: a peer silent this long is down (--peer-timeout); links
    // that would be quiet carry a ping every timeout / 4.
    Transport(Group group, int listen_fd, std::chrono::milliseconds timeout, Events ev);
    ~Transport();
    Transport(const Transport&) = delete;
    Transport& operator=(const Transport&) = delete;

    void start();
    // Says bye to every live peer (written within `bound`), closes every
    // link and joins the thread. Idempotent.
    void stop(std::chrono::milliseconds bound = std::chrono::milliseconds(500));

    // Queues a frame; false if the peer is down (or is this daemon). Never
    // waits on the network.
    bool send(int peer, const FrameHeader& h, cache::BlobRef payload = nullptr);

    // Connected: hello exchanged. Down: will never be connected again.
    bool connected(int peer) const;
    bool down(int peer) const;
    // Every peer connected or down: the group has formed as far as it will.
    bool settled() const;
    const Group& group() const { return group_; }
    TransportStats stats() const;

private:
    struct Link;
    struct Polled;
    void run();
    bool byes_unsent() const;
    int poll_links(Polled& polled, bool stopping);
    void serve_polled(const Polled& polled);
    bool finish_connect(Link& l);
    void accept_new();
    void begin_connects();
    bool read_from(Link& l);
    void count_bad_frame();
    bool take_frame(Link& l, const FrameHeader& h, std::shared_ptr<cache::Blob> body);
    bool take_hello(Link& l, const FrameHeader& h, const cache::Blob* body);
    void refuse_hello(Link& l, bool ok);
    bool write_to(Link& l);
    void take_outbox();
    void close_link(Link& l, const std::string& why);
    void heartbeat_and_liveness();
    void queue_hello(Link& l);

    Group group_;
    int listen_fd_;
    int wake_fd_ = -1; // eventfd: a send() or stop() for the thread
    std::chrono::milliseconds timeout_;
    Events ev_;
    std::vector<std::unique_ptr<Link>> links_; // transport thread only

    // Guards outbox_, state_ and stats_. Leaf lock, never held across a
    // socket call: the thread swaps the outbox out and writes unlocked.
    mutable std::mutex mu_;
    struct Outgoing {
        int peer;
        char header[FrameHeader::size];
        cache::BlobRef payload;
    };
    std::vector<Outgoing> outbox_;
    enum class State : uint8_t { pending, connected, down };
    std::vector<State> state_; // by rank; self stays pending
    TransportStats stats_;
    bool stopping_ = false;
    std::chrono::steady_clock::time_point stop_deadline_{};
    std::thread thread_;
};

// A TCP listening socket on `port` (0: any free one, written back), on
// every address of this host. "" or why not.
std::string open_listener(int& fd, uint16_t& port);

} // namespace clairfs::peer
