// SPDX-License-Identifier: MIT
#include "clairfs/peer/peers.hpp"

#include "clairfs/log.hpp"
#include "clairfs/sys/contained.hpp"
#include "clairfs/sys/normal_thread.hpp"
#include "clairfs/sys/syscalls.hpp"

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <pthread.h>
#include <xxhash.h>

namespace clairfs::peer {

using Clock = std::chrono::steady_clock;

// Note kinds, in the frame's flags.
constexpr uint16_t note_registrations = 0;
constexpr uint16_t note_summary = 1;

// One fetch from a peer, waited on by the thread that asked.
struct Peers::Waiting {
    int home = 0;
    index::NodeId id = 0;
    bool done = false;
    FrameHeader h;
    std::shared_ptr<cache::Blob> payload;
    int error = 0; // set when done without a data frame
    std::condition_variable cv;
};

Peers::Peers(Group group, int listen_fd, PeerOptions opt)
    : group_(group), opt_(opt),
      transport_(std::move(group), listen_fd, opt.timeout,
                 Transport::Events{
                     [this](int from, const FrameHeader& h, std::shared_ptr<cache::Blob> p) {
                         on_frame(from, h, std::move(p));
                     },
                     [this](int peer, const std::string& why) { on_down(peer, why); },
                     [this](int peer) { on_up(peer); }}),
      down_why_(group_.members.size()), rates_(group_.members.size()),
      link_rates_(std::make_unique<SourceRate[]>(group_.members.size())) {
    // A member whose index differs would serve other bytes under the same
    // file ids: it is never asked, and never answered.
    const uint64_t mine = group_.members[group_.self].fingerprint;
    for (const Member& m : group_.members)
        if (m.rank != group_.self && m.fingerprint != mine)
            down_why_[m.rank] = "its dataset index differs from this daemon's (another backing "
                                "tree, or the tree changed between the scans)";
}

Peers::~Peers() {
    stop();
}

void Peers::start() {
    for (unsigned i = 0; i < std::max(opt_.server_threads, 1u); ++i)
        servers_.push_back(sys::normal_thread([this] { serve_loop(); }));
    transport_.start();
    if (summary_) reporter_ = sys::normal_thread([this] { report_loop(); });
}

void Peers::stop() {
    {
        std::lock_guard lk(mu_);
        if (stopping_ && servers_.empty()) return;
        stopping_ = true;
    }
    jobs_cv_.notify_all();
    report_cv_.notify_all();
    for (auto& t : servers_) t.join();
    servers_.clear();
    if (reporter_.joinable()) reporter_.join();
    transport_.stop();
    // Nobody answers now: every waiting fetch goes to the shared file system.
    std::lock_guard lk(mu_);
    for (auto& [req, w] : waiting_) {
        w->done = true;
        w->error = -EHOSTDOWN;
        w->cv.notify_all();
    }
    waiting_.clear();
}

int Peers::home_of(index::NodeId id) const {
    return hash_home(id, group_.size());
}

bool Peers::usable(int peer) const {
    if (peer == group_.self || peer < 0 || peer >= group_.size()) return false;
    {
        std::lock_guard lk(mu_);
        if (!down_why_[peer].empty() || stopping_) return false;
    }
    return transport_.connected(peer);
}

PeerReply Peers::fetch(int home, index::NodeId id, uint64_t expect, bool demand) {
    const auto start = Clock::now();
    auto w = std::make_shared<Waiting>();
    w->home = home;
    w->id = id;
    uint64_t req;
    {
        std::lock_guard lk(mu_);
        if (stopping_ || !down_why_[home].empty()) return {-EHOSTDOWN, nullptr};
        req = next_request_++;
        waiting_.emplace(req, w);
    }
    FrameHeader h;
    h.type = FrameType::get;
    h.file = id;
    h.request = req;
    h.flags = demand ? 1 : 0;
    SourceRate& link = link_rates_[static_cast<size_t>(home)];
    link.begin();
    if (!transport_.send(home, h)) {
        link.end(0, false);
        std::lock_guard lk(mu_);
        waiting_.erase(req);
        return {-EHOSTDOWN, nullptr};
    }
    std::unique_lock lk(mu_);
    if (!await_answer(*w, lk, link, start)) {
        // Alive (it pings) but slow: this file comes from the shared file
        // system; a late answer finds no waiter and is dropped.
        waiting_.erase(req);
        ++errors_;
        return {-ETIMEDOUT, nullptr};
    }
    if (w->error) return refused(*w, lk);
    lk.unlock();
    return arrived(*w, expect, start);
}

// Under `lk`: waits for `w`'s answer within the wait bound, and tells the
// link's rate what the link itself cost. False if the answer is late.
bool Peers::await_answer(Waiting& w, std::unique_lock<std::mutex>& lk, SourceRate& link,
                         Clock::time_point start) {
    bool in_time = true;
    if (opt_.wait_bound.count() > 0)
        in_time = w.cv.wait_for(lk, opt_.wait_bound, [&] { return w.done; });
    else
        w.cv.wait(lk, [&] { return w.done; });
    // The link's own cost: the round trip less the time the home held the
    // request (its queue and its backing store are not the link's).
    double trip = std::chrono::duration<double>(Clock::now() - start).count();
    bool answered = in_time && w.done && !w.error;
    double held = answered ? static_cast<double>(w.h.error) / 1e6 : 0.0;
    link.end(std::max(trip - held, 0.0), answered);
    return in_time;
}

// A fetch the home failed, or whose home went down; `lk` held on entry.
PeerReply Peers::refused(const Waiting& w, std::unique_lock<std::mutex>& lk) {
    int err = w.error;
    if (err == -EHOSTDOWN)
        ++down_fallbacks_;
    else
        ++errors_;
    lk.unlock();
    if (err != -EHOSTDOWN)
        LOG_WARN("peer %d could not send file %u (%s); reading it from the shared file system",
                 w.home, w.id, sys::error_text(err));
    return {err, nullptr};
}

// The home checksummed what it sent; what arrived must match, and be the
// file the index describes. Unlocked on entry.
PeerReply Peers::arrived(Waiting& w, uint64_t expect, Clock::time_point start) {
    auto& p = w.payload;
    uint64_t got = p ? p->size : 0;
    bool ok = w.h.length == expect && got == expect &&
              payload_matches(w.h, {p ? p->bytes.get() : nullptr, got});
    std::unique_lock lk(mu_);
    if (!ok) {
        ++errors_;
        ++corrupt_;
        lk.unlock();
        LOG_WARN("file %u from peer %d failed its checksum (%llu bytes, %llu expected); reading "
                 "it from the shared file system",
                 w.id, w.home, static_cast<unsigned long long>(got),
                 static_cast<unsigned long long>(expect));
        return {-EBADMSG, nullptr};
    }
    ++files_in_;
    bytes_in_ += got;
    Rate& r = rates_[w.home];
    ++r.files;
    r.bytes += got;
    r.seconds += std::chrono::duration<double>(Clock::now() - start).count();
    if (!p) p = cache::Blob::make(0);
    return {0, std::move(p)};
}

void Peers::on_frame(int from, const FrameHeader& h, std::shared_ptr<cache::Blob> payload) {
    if (h.type == FrameType::get) return queue_get(from, h);
    if (h.type == FrameType::note) return take_note(from, h, payload.get());
    if (h.type == FrameType::data || h.type == FrameType::fail)
        answer_waiting(from, h, std::move(payload));
}

void Peers::queue_get(int from, const FrameHeader& h) {
    {
        std::lock_guard lk(mu_);
        if (stopping_ || !down_why_[from].empty()) return;
        // Demand gets go ahead of prefetch gets; each kind in order.
        if (h.flags & 1) {
            auto it = jobs_.begin();
            while (it != jobs_.end() && (it->h.flags & 1)) ++it;
            jobs_.insert(it, Job{from, h, Clock::now()});
        } else {
            jobs_.push_back(Job{from, h, Clock::now()});
        }
    }
    jobs_cv_.notify_one();
}

void Peers::take_note(int from, const FrameHeader& h, const cache::Blob* payload) {
    if (!payload || !payload_matches(h, {payload->bytes.get(), payload->size})) return;
    std::string text(payload->bytes.get(), payload->size);
    {
        std::lock_guard lk(mu_);
        if (!down_why_[from].empty()) return;
        if (h.flags == note_summary) {
            summaries_[from] = {std::move(text), Clock::now()};
            return;
        }
        notes_[from] = std::move(text);
    }
    if (note_changed_) note_changed_();
}

// A data or fail frame: the answer to the fetch waiting for it, if any.
void Peers::answer_waiting(int from, const FrameHeader& h, std::shared_ptr<cache::Blob> payload) {
    std::lock_guard lk(mu_);
    auto it = waiting_.find(h.request);
    if (it == waiting_.end() || it->second->home != from) return; // late, or not ours
    auto w = it->second;
    waiting_.erase(it);
    w->done = true;
    w->h = h;
    if (h.type == FrameType::fail)
        w->error = -static_cast<int>(h.error ? h.error : EIO);
    else
        w->payload = std::move(payload);
    w->cv.notify_all();
}

void Peers::on_down(int peer, const std::string& why) {
    bool first, stopping;
    {
        std::lock_guard lk(mu_);
        stopping = stopping_;
        first = down_why_[peer].empty();
        if (first) down_why_[peer] = why.empty() ? "down" : why;
        for (auto it = waiting_.begin(); it != waiting_.end();) {
            if (it->second->home != peer) {
                ++it;
                continue;
            }
            it->second->done = true;
            it->second->error = -EHOSTDOWN;
            it->second->cv.notify_all();
            it = waiting_.erase(it);
        }
        std::erase_if(jobs_, [&](const Job& j) { return j.from == peer; });
        notes_.erase(peer); // a dead member's registration no longer counts
        summaries_.erase(peer);
    }
    if (!first || stopping) return;
    // A peer that said bye unmounted on purpose: news, not a fault.
    if (why.find("unmounted") != std::string::npos)
        LOG_INFO("peer %d left (%s); its files now come from the shared file system", peer,
                 why.c_str());
    else
        LOG_WARN("peer %d is down (%s); its files now come from the shared file system", peer,
                 why.c_str());
}

void Peers::send_note(int peer, const std::string& text, uint16_t kind) {
    auto b = cache::Blob::make(text.size(), nullptr);
    std::memcpy(b->bytes.get(), text.data(), text.size());
    FrameHeader h;
    h.type = FrameType::note;
    h.flags = kind;
    h.payload_hash = payload_checksum({b->bytes.get(), b->size});
    transport_.send(peer, h, std::move(b));
}

void Peers::share_note(std::string text) {
    {
        std::lock_guard lk(mu_);
        own_note_ = text;
    }
    for (const Member& m : group_.members)
        if (usable(m.rank)) send_note(m.rank, text, note_registrations);
}

void Peers::report_loop() {
    pthread_setname_np(pthread_self(), "clairfs-report");
    for (;;) {
        std::string text;
        if (auto why = sys::contained("summarising for the peers", [&] { text = summary_(); });
            !why.empty())
            text.clear();
        {
            std::unique_lock lk(mu_);
            if (!text.empty()) summaries_[group_.self] = {text, Clock::now()};
        }
        if (!text.empty())
            for (const Member& m : group_.members)
                if (usable(m.rank)) send_note(m.rank, text, note_summary);
        std::unique_lock lk(mu_);
        if (report_cv_.wait_for(lk, summary_period_, [&] { return stopping_; })) return;
    }
}

void Peers::on_up(int peer) {
    std::string text;
    {
        std::lock_guard lk(mu_);
        text = own_note_;
    }
    if (!text.empty()) send_note(peer, text, note_registrations);
}

std::map<int, std::string> Peers::notes() const {
    std::lock_guard lk(mu_);
    return notes_;
}

void Peers::serve_loop() {
    pthread_setname_np(pthread_self(), "clairfs-serve");
    for (;;) {
        Job j;
        {
            std::unique_lock lk(mu_);
            jobs_cv_.wait(lk, [&] { return stopping_ || !jobs_.empty(); });
            if (stopping_) return;
            j = jobs_.front();
            jobs_.pop_front();
        }
        answer_get(j);
    }
}

void Peers::answer_get(const Job& j) {
    ServeResult r;
    if (auto why = sys::contained("serving a peer", [&] { r = serve_(j.h.file); }); !why.empty())
        r = {-EIO, nullptr};
    FrameHeader out;
    out.file = j.h.file;
    out.request = j.h.request;
    if (r.error || !r.blob) {
        out.type = FrameType::fail;
        out.error = static_cast<uint32_t>(r.error ? -r.error : EIO);
        transport_.send(j.from, out);
        return;
    }
    out.type = FrameType::data;
    out.flags = r.cached ? 1 : 0;
    // How long this daemon held the request (queue, tiers or backing
    // store), in microseconds: the asker takes it off its round trip to
    // know what the link itself costs.
    out.error = static_cast<uint32_t>(std::min<int64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - j.queued).count(),
        UINT32_MAX));
    out.payload_hash = payload_checksum({r.blob->bytes.get(), r.blob->size});
    uint64_t n = r.blob->size;
    if (transport_.send(j.from, out, std::move(r.blob))) {
        std::lock_guard lk(mu_);
        ++files_out_;
        bytes_out_ += n;
    }
}

void Peers::status(nlohmann::json& out) const {
    std::lock_guard lk(mu_);
    auto& p = out["peers"];
    p["rank"] = group_.self;
    p["count"] = group_.size();
    links_status(p);
    p["formed"] = transport_.settled();
    p["files_in"] = files_in_;
    p["bytes_in"] = bytes_in_;
    p["files_out"] = files_out_;
    p["bytes_out"] = bytes_out_;
    p["errors"] = errors_;
    p["corrupt"] = corrupt_;
    p["down_fallbacks"] = down_fallbacks_;
    p["nodes"] = nodes_status();
    TransportStats t = transport_.stats();
    p["bad_frames"] = t.bad_frames;
}

// Under mu_: which peers are up, which are down and why, and what fetches
// from each cost.
void Peers::links_status(nlohmann::json& p) const {
    int alive = 1; // this daemon
    nlohmann::json dead = nlohmann::json::array();
    nlohmann::json why = nlohmann::json::object();
    nlohmann::json sources = nlohmann::json::array();
    for (const Member& m : group_.members) {
        if (m.rank == group_.self) continue;
        bool up = down_why_[m.rank].empty() && transport_.connected(m.rank);
        alive += up;
        if (!down_why_[m.rank].empty()) {
            dead.push_back(m.rank);
            why[std::to_string(m.rank)] = down_why_[m.rank];
        }
        sources.push_back(source_status(m, up));
    }
    p["alive"] = alive;
    p["dead"] = std::move(dead);
    p["down_reasons"] = std::move(why);
    p["sources"] = std::move(sources);
}

// Under mu_: fetches from `m`, and the source model's view of its link.
nlohmann::json Peers::source_status(const Member& m, bool up) const {
    const Rate& r = rates_[m.rank];
    nlohmann::json s = {{"rank", m.rank}, {"host", m.host}, {"files", r.files},
                        {"bytes", r.bytes}};
    s["state"] = up ? "up" : down_why_[m.rank].empty() ? "joining" : "down";
    if (r.files) {
        s["seconds_per_file"] = r.seconds / static_cast<double>(r.files);
        s["bytes_per_second"] = r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds : 0.0;
    }
    // The source model's view: files its tiers held, recent ones weigh most.
    double link = link_rates_[static_cast<size_t>(m.rank)].seconds_per_file();
    s["link_seconds_per_file"] = link < 0 ? nlohmann::json(nullptr) : nlohmann::json(link);
    return s;
}

// Under mu_: every member's latest summary, this daemon's included.
nlohmann::json Peers::nodes_status() const {
    auto nodes = nlohmann::json::array();
    auto now = Clock::now();
    for (const Member& m : group_.members) {
        nlohmann::json n = {{"rank", m.rank}, {"host", m.host}};
        bool up = m.rank == group_.self ||
                  (down_why_[m.rank].empty() && transport_.connected(m.rank));
        n["state"] = m.rank == group_.self ? "self"
                     : up                  ? "up"
                     : down_why_[m.rank].empty() ? "joining"
                                                 : "down";
        if (auto it = summaries_.find(m.rank); it != summaries_.end()) {
            n["summary"] = nlohmann::json::parse(it->second.text, nullptr, false);
            n["age_seconds"] = std::chrono::duration<double>(now - it->second.at).count();
        } else {
            n["summary"] = nullptr;
        }
        nodes.push_back(std::move(n));
    }
    return nodes;
}

} // namespace clairfs::peer
