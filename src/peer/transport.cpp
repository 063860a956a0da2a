// SPDX-License-Identifier: MIT
#include "clairfs/peer/transport.hpp"

#include "clairfs/log.hpp"
#include "clairfs/peer/frame_decoder.hpp"
#include "clairfs/sys/normal_thread.hpp"
#include "clairfs/sys/syscalls.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

namespace clairfs::peer {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds join_grace{30000};

// One TCP connection, owned by the transport thread.
struct Transport::Link {
    int fd = -1;
    int peer = -1;           // -1 until an accepted link says hello
    bool connecting = false; // a non-blocking connect() in progress
    bool hello_in = false;   // the peer's hello arrived and checked
    FrameDecoder in;
    // Writing: whole frames, the first one partly written.
    std::vector<Outgoing> out;
    size_t out_front = 0; // index of the frame being written
    uint64_t out_off = 0; // bytes of it written (header, then payload)
    Clock::time_point last_in{}, last_out{};
};

// What one poll() watches: the wake-up, the listener, then links[i] at
// fds[i + 2]. Reused from round to round.
struct Transport::Polled {
    std::vector<pollfd> fds;
    std::vector<Link*> links;
};

namespace {

void tune(int fd) {
    int one = 1;
    // Requests are small and latency-bound; the data that follows is large.
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::shared_ptr<cache::Blob> text_blob(const std::string& s) {
    auto b = cache::Blob::make(s.size(), nullptr);
    std::memcpy(b->bytes.get(), s.data(), s.size());
    return b;
}

// The rank a hello names, or -1 if it does not carry `token`. Whether that
// rank may call is the caller's to judge.
int hello_rank(const FrameHeader& h, const cache::Blob* body, const std::string& token) {
    std::string text = body && payload_matches(h, {body->bytes.get(), body->size})
                           ? std::string(body->bytes.get(), body->size)
                           : "";
    auto sp = text.find(' ');
    if (sp == std::string::npos || text.substr(sp + 1) != token) return -1;
    return std::atoi(text.substr(0, sp).c_str());
}

} // namespace

std::string open_listener(int& fd, uint16_t& port) {
    fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    bool v6 = fd >= 0;
    if (!v6) fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return std::string("socket: ") + sys::error_text(-errno);
    int one = 1, zero = 0;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rv;
    if (v6) {
        // Dual stack: peers may reach this host over IPv4 or IPv6.
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_addr = in6addr_any;
        a.sin6_port = htons(port);
        rv = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        a.sin_port = htons(port);
        rv = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    if (rv < 0 || ::listen(fd, 64) < 0) {
        std::string why = "listening on port " + std::to_string(port) + ": " +
                          sys::error_text(-errno);
        ::close(fd);
        fd = -1;
        return why;
    }
    sockaddr_storage got{};
    socklen_t len = sizeof got;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&got), &len);
    port = ntohs(got.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&got)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&got)->sin_port);
    return "";
}

Transport::Transport(Group group, int listen_fd, std::chrono::milliseconds timeout, Events ev)
    : group_(std::move(group)), listen_fd_(listen_fd), timeout_(timeout), ev_(std::move(ev)),
      state_(group_.members.size(), State::pending) {
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

Transport::~Transport() {
    stop();
    if (wake_fd_ >= 0) ::close(wake_fd_);
    if (listen_fd_ >= 0) ::close(listen_fd_);
}

void Transport::start() {
    thread_ = sys::normal_thread([this] { run(); });
}

void Transport::stop(std::chrono::milliseconds bound) {
    {
        std::lock_guard lk(mu_);
        if (stopping_) {
            // A second stop() only waits for the first.
        } else {
            stopping_ = true;
            stop_deadline_ = Clock::now() + bound;
            for (int p = 0; p < group_.size(); ++p) {
                if (state_[p] != State::connected) continue;
                FrameHeader h;
                h.type = FrameType::bye;
                Outgoing o{p, {}, nullptr};
                encode_header(h, o.header);
                outbox_.push_back(std::move(o));
            }
        }
    }
    uint64_t one = 1;
    if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof one);
    if (thread_.joinable()) thread_.join();
}

bool Transport::send(int peer, const FrameHeader& h, cache::BlobRef payload) {
    Outgoing o{peer, {}, std::move(payload)};
    FrameHeader hh = h;
    hh.length = o.payload ? o.payload->size : 0;
    encode_header(hh, o.header);
    {
        std::lock_guard lk(mu_);
        if (peer < 0 || peer >= group_.size() || peer == group_.self || stopping_ ||
            state_[peer] == State::down)
            return false;
        outbox_.push_back(std::move(o));
    }
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
    return true;
}

bool Transport::connected(int peer) const {
    std::lock_guard lk(mu_);
    return peer >= 0 && peer < group_.size() && state_[peer] == State::connected;
}

bool Transport::down(int peer) const {
    std::lock_guard lk(mu_);
    return peer >= 0 && peer < group_.size() && state_[peer] == State::down;
}

bool Transport::settled() const {
    std::lock_guard lk(mu_);
    for (int p = 0; p < group_.size(); ++p)
        if (p != group_.self && state_[p] == State::pending) return false;
    return true;
}

TransportStats Transport::stats() const {
    std::lock_guard lk(mu_);
    return stats_;
}

void Transport::queue_hello(Link& l) {
    // "rank token": who is calling, and proof it belongs to this launch.
    FrameHeader h;
    h.type = FrameType::hello;
    auto body = text_blob(std::to_string(group_.self) + " " + group_.token);
    h.length = body->size;
    h.payload_hash = payload_checksum({body->bytes.get(), body->size});
    Outgoing o{l.peer, {}, std::move(body)};
    encode_header(h, o.header);
    l.out.push_back(std::move(o));
}

// Every member connects to the members below it, so each pair has one link.
void Transport::begin_connects() {
    for (int p = 0; p < group_.self; ++p) {
        const Member& m = group_.members[p];
        addrinfo hints{};
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* res = nullptr;
        std::string port = std::to_string(m.port);
        int rv = ::getaddrinfo(m.host.c_str(), port.c_str(), &hints, &res);
        if (rv != 0 || !res) {
            close_link(*links_.emplace_back(std::make_unique<Link>()),
                       "cannot resolve peer " + std::to_string(p) + "'s host '" + m.host +
                           "': " + ::gai_strerror(rv));
            links_.back()->peer = p;
            continue;
        }
        int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int c = fd >= 0 ? ::connect(fd, res->ai_addr, res->ai_addrlen) : -1;
        int err = errno;
        ::freeaddrinfo(res);
        auto l = std::make_unique<Link>();
        l->fd = fd;
        l->peer = p;
        l->last_in = l->last_out = Clock::now();
        if (fd < 0 || (c < 0 && err != EINPROGRESS)) {
            links_.push_back(std::move(l));
            close_link(*links_.back(), "cannot connect to peer " + std::to_string(p) + " at " +
                                           m.host + ":" + port + ": " + sys::error_text(-err));
            continue;
        }
        tune(fd);
        l->connecting = c < 0;
        queue_hello(*l);
        links_.push_back(std::move(l));
    }
}

void Transport::accept_new() {
    for (;;) {
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return; // EAGAIN, or an error the next poll reports again
        tune(fd);
        auto l = std::make_unique<Link>();
        l->fd = fd;
        l->last_in = l->last_out = Clock::now();
        links_.push_back(std::move(l));
    }
}

void Transport::close_link(Link& l, const std::string& why) {
    if (l.fd >= 0) ::close(l.fd);
    l.fd = -1;
    l.out.clear();
    if (l.peer < 0) return; // an unidentified caller: nobody to mark
    bool was_down;
    {
        std::lock_guard lk(mu_);
        was_down = state_[l.peer] == State::down;
        state_[l.peer] = State::down;
    }
    if (!was_down && ev_.down) ev_.down(l.peer, why);
}

// Reads what the socket has; false once the link is closed.
bool Transport::read_from(Link& l) {
    for (;;) {
        std::span<char> dst = l.in.space();
        ssize_t n = ::recv(l.fd, dst.data(), dst.size(), 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
            close_link(l, "link to peer " + std::to_string(l.peer) + " failed: " +
                              sys::error_text(-errno));
            return false;
        }
        if (n == 0) {
            close_link(l, "peer " + std::to_string(l.peer) + " closed the link");
            return false;
        }
        l.last_in = Clock::now();
        Decoded d = l.in.took(static_cast<size_t>(n));
        if (d.kind == Decoded::Kind::bad) {
            count_bad_frame();
            close_link(l, "peer " + std::to_string(l.peer) + ": " + d.why);
            return false;
        }
        if (d.kind == Decoded::Kind::frame && !take_frame(l, d.header, std::move(d.payload)))
            return false;
    }
}

void Transport::count_bad_frame() {
    std::lock_guard lk(mu_);
    ++stats_.bad_frames;
}

// One whole frame off the link; false once the link is closed.
bool Transport::take_frame(Link& l, const FrameHeader& h, std::shared_ptr<cache::Blob> body) {
    if (h.type == FrameType::hello) return take_hello(l, h, body.get());
    if (!l.hello_in) {
        close_link(l, "peer sent data before its hello");
        return false;
    }
    {
        std::lock_guard lk(mu_);
        ++stats_.frames_in;
        stats_.bytes_in += h.length;
    }
    if (h.type == FrameType::ping) return true;
    if (h.type == FrameType::bye) {
        close_link(l, "peer " + std::to_string(l.peer) + " unmounted");
        return false;
    }
    if (ev_.frame) ev_.frame(l.peer, h, std::move(body));
    return true;
}

// The only frame an unidentified link may send, and the first an
// identified one must. False once the link is closed.
bool Transport::take_hello(Link& l, const FrameHeader& h, const cache::Blob* body) {
    const int rank = hello_rank(h, body, group_.token);
    bool ok = rank >= 0 && rank < group_.size() && rank != group_.self &&
              (l.peer < 0 || l.peer == rank);
    bool fresh = true;
    if (ok && l.peer < 0) {
        std::lock_guard lk(mu_);
        fresh = state_[rank] == State::pending;
    }
    if (!ok || !fresh) {
        refuse_hello(l, ok);
        return false;
    }
    if (l.peer < 0) {
        l.peer = rank;
        queue_hello(l); // answer, so the caller knows the link is up
    }
    l.hello_in = true;
    bool now_up = false;
    {
        std::lock_guard lk(mu_);
        if (state_[rank] == State::pending) {
            state_[rank] = State::connected;
            now_up = true;
        }
    }
    if (now_up && ev_.up) ev_.up(rank);
    return true;
}

// `ok`: the hello carried this group's token and a rank it may, but that
// rank has a link already.
void Transport::refuse_hello(Link& l, bool ok) {
    count_bad_frame();
    if (l.peer >= 0 && !ok) {
        close_link(l, "peer " + std::to_string(l.peer) + " answered without this group's token");
        return;
    }
    // A stranger, or a second link from a member: not that member's failure.
    LOG_WARN("peer link refused: %s", ok ? "a second link from the same peer"
                                         : "its hello does not carry this group's token");
    l.peer = -1;
    close_link(l, "");
}

// Writes queued frames until the socket is full; false once the link is closed.
bool Transport::write_to(Link& l) {
    while (l.out_front < l.out.size()) {
        Outgoing& o = l.out[l.out_front];
        uint64_t plen = o.payload ? o.payload->size : 0;
        iovec iov[2];
        int cnt = 0;
        if (l.out_off < FrameHeader::size) {
            iov[cnt++] = {o.header + l.out_off, FrameHeader::size - l.out_off};
            if (plen) iov[cnt++] = {o.payload->bytes.get(), plen};
        } else {
            uint64_t done = l.out_off - FrameHeader::size;
            iov[cnt++] = {o.payload->bytes.get() + done, plen - done};
        }
        msghdr mh{};
        mh.msg_iov = iov;
        mh.msg_iovlen = static_cast<size_t>(cnt);
        ssize_t n = ::sendmsg(l.fd, &mh, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
            close_link(l, "link to peer " + std::to_string(l.peer) + " failed: " +
                              sys::error_text(-errno));
            return false;
        }
        l.out_off += static_cast<uint64_t>(n);
        l.last_out = Clock::now();
        if (l.out_off == FrameHeader::size + plen) {
            {
                std::lock_guard lk(mu_);
                ++stats_.frames_out;
                stats_.bytes_out += plen;
            }
            o.payload.reset(); // the bytes may be evicted now
            ++l.out_front;
            l.out_off = 0;
        }
    }
    l.out.clear();
    l.out_front = 0;
    return true;
}

void Transport::take_outbox() {
    std::vector<Outgoing> batch;
    {
        std::lock_guard lk(mu_);
        batch.swap(outbox_);
    }
    for (auto& o : batch) {
        auto it = std::find_if(links_.begin(), links_.end(), [&](const auto& l) {
            return l->fd >= 0 && l->peer == o.peer && l->hello_in;
        });
        if (it != links_.end()) (*it)->out.push_back(std::move(o));
        // else: the link went down since send(); the asker's wait ends on
        // the down event, not on this frame.
    }
}

void Transport::heartbeat_and_liveness() {
    auto now = Clock::now();
    for (auto& lp : links_) {
        Link& l = *lp;
        if (l.fd < 0) continue;
        // Before its hello a link gets the join grace: the daemons of one
        // launch start their links within seconds of each other, but not
        // within one timeout on a loaded node.
        auto limit = l.hello_in ? timeout_ : std::max<std::chrono::milliseconds>(timeout_, join_grace);
        if (now - l.last_in > limit) {
            close_link(l, l.peer < 0 ? "" : "peer " + std::to_string(l.peer) + " silent for " +
                                                 std::to_string(timeout_.count()) + " ms");
            continue;
        }
        if (l.hello_in && l.out.empty() && now - l.last_out > timeout_ / 4) {
            FrameHeader h;
            h.type = FrameType::ping;
            Outgoing o{l.peer, {}, nullptr};
            encode_header(h, o.header);
            l.out.push_back(std::move(o));
        }
    }
}

void Transport::run() {
    pthread_setname_np(pthread_self(), "clairfs-peers");
    begin_connects();
    Polled polled;
    for (;;) {
        bool stopping;
        Clock::time_point deadline;
        {
            std::lock_guard lk(mu_);
            stopping = stopping_;
            deadline = stop_deadline_;
        }
        take_outbox();
        // Out once every bye is written, or at the bound.
        if (stopping && (!byes_unsent() || Clock::now() >= deadline)) break;
        heartbeat_and_liveness();
        std::erase_if(links_, [](const auto& l) { return l->fd < 0; });
        int n = poll_links(polled, stopping);
        if (n < 0 && errno != EINTR) {
            LOG_ERROR("peer links: poll failed: %s", sys::error_text(-errno));
            break;
        }
        if (n <= 0) continue;
        serve_polled(polled);
        // Frames queued by read_from (hello answers) go out without waiting
        // for the next POLLOUT.
        for (auto& l : links_)
            if (l->fd >= 0 && !l->connecting && !l->out.empty()) write_to(*l);
    }
    for (auto& l : links_)
        if (l->fd >= 0) close_link(*l, "this daemon is unmounting");
    links_.clear();
}

bool Transport::byes_unsent() const {
    return std::any_of(links_.begin(), links_.end(), [](const auto& l) {
        return l->fd >= 0 && l->hello_in && !l->out.empty();
    });
}

// poll()'s result, its errno intact.
int Transport::poll_links(Polled& polled, bool stopping) {
    polled.fds.clear();
    polled.links.clear();
    polled.fds.push_back({wake_fd_, POLLIN, 0});
    polled.fds.push_back({stopping ? -1 : listen_fd_, POLLIN, 0});
    for (auto& l : links_) {
        short want = POLLIN;
        if (l->connecting || !l->out.empty()) want |= POLLOUT;
        polled.fds.push_back({l->fd, want, 0});
        polled.links.push_back(l.get());
    }
    // Wakes for work, or every timeout / 8 for pings and the silence
    // check: a few wake-ups a second while idle.
    int wait_ms = static_cast<int>(std::max<int64_t>(timeout_.count() / 8, 10));
    if (stopping) wait_ms = 10;
    return ::poll(polled.fds.data(), polled.fds.size(), wait_ms);
}

void Transport::serve_polled(const Polled& polled) {
    if (polled.fds[0].revents & POLLIN) {
        uint64_t v;
        (void)!::read(wake_fd_, &v, sizeof v);
    }
    if (polled.fds[1].revents & POLLIN) accept_new();
    for (size_t i = 0; i < polled.links.size(); ++i) {
        Link& l = *polled.links[i];
        short re = polled.fds[i + 2].revents;
        if (!re || l.fd < 0) continue;
        if (l.connecting && (re & (POLLOUT | POLLERR | POLLHUP)) && !finish_connect(l)) continue;
        if ((re & (POLLIN | POLLERR | POLLHUP)) && !read_from(l)) continue;
        if (!l.connecting && (re & POLLOUT)) write_to(l);
    }
}

// The outcome of a non-blocking connect(); false once the link is closed.
bool Transport::finish_connect(Link& l) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(l.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err) {
        close_link(l, "cannot connect to peer " + std::to_string(l.peer) + ": " +
                          sys::error_text(-err));
        return false;
    }
    l.connecting = false;
    return true;
}

} // namespace clairfs::peer
