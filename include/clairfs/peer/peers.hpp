// SPDX-License-Identifier: MIT
// The cache across the nodes: each file has one home among the group's
// daemons, the home reads it from the shared file system once and keeps
// it, and every other daemon asks the home for it instead of the shared
// file system. A home that is down costs its askers at most the peer
// timeout once; from then on its files come from the shared file system.
#pragma once

#include "clairfs/cache/blob.hpp"
#include "clairfs/index/node.hpp"
#include "clairfs/peer/group.hpp"
#include "clairfs/peer/source_model.hpp"
#include "clairfs/peer/transport.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace clairfs::peer {

struct PeerOptions {
    // --peer-timeout: a peer silent this long is dead.
    std::chrono::milliseconds timeout{2000};
    // The longest one fetch waits for a live home that is still reading the
    // file from the shared file system (--io-timeout); 0: no bound.
    std::chrono::milliseconds wait_bound{60000};
    unsigned server_threads = 4; // answer other daemons' gets
};

// What a fetch from a peer brought.
struct PeerReply {
    // 0, or -errno: -EHOSTDOWN (the home is down or went down), -EBADMSG
    // (the bytes failed their checksum), -ETIMEDOUT (the home is alive but
    // took longer than the wait bound), or the home's own error.
    int error = 0;
    cache::BlobRef blob;
};

// What the home answers with: its tiers' copy, or the file read from the
// shared file system on the asker's behalf (and kept); error is -errno.
struct ServeResult {
    int error = 0;
    cache::BlobRef blob;
    bool cached = false; // from the home's tiers, not read for this request
};

class Peers {
public:
    using Serve = std::function<ServeResult(index::NodeId id)>;

    // `listen_fd`: this daemon's listener, named in `group`; owned from here.
    Peers(Group group, int listen_fd, PeerOptions opt);
    ~Peers();
    Peers(const Peers&) = delete;
    Peers& operator=(const Peers&) = delete;

    // Before start(): how this daemon answers a get.
    void set_server(Serve serve) { serve_ = std::move(serve); }
    void start();
    // Says bye, answers nothing more, fails every waiting fetch; bounded.
    void stop();

    int self() const { return group_.self; }
    const std::vector<Member>& members() const { return group_.members; }
    int size() const { return group_.size(); }
    // The member that keeps `id`. A hash of the file, the same on every
    // member (their indexes are the same: the fingerprints were checked).
    int home_of(index::NodeId id) const;
    // Whether `peer` can be asked now: connected and never down.
    bool usable(int peer) const;
    // What fetches from `peer` cost: seconds per file over the link (each
    // answer's round trip less the time the home spent on it, which it
    // reports), and the fetches on it now (choose_source).
    const SourceRate& rate(int peer) const { return link_rates_[static_cast<size_t>(peer)]; }
    unsigned server_threads() const { return opt_.server_threads; }
    // Every member connected or down: the group is as formed as it will be.
    bool settled() const { return transport_.settled(); }

    // Asks `home` for file `id` of `expect` bytes and waits for the answer.
    // `demand`: a reader is blocked on it (the home puts it ahead of its
    // prefetches).
    PeerReply fetch(int home, index::NodeId id, uint64_t expect, bool demand);

    // Notes: one small text per member that the others keep (the agreed
    // keys of its registered jobs). share_note() replaces this member's
    // and sends it to every peer now up, and to each one that comes up
    // later; `changed` runs, on the links' thread, whenever a peer's note
    // arrives.
    void share_note(std::string text);
    void set_note_handler(std::function<void()> changed) { note_changed_ = std::move(changed); }
    // The latest note of every live peer that sent one, by rank.
    std::map<int, std::string> notes() const;

    // Before start(): a one-line JSON summary of this daemon (mode, reads,
    // hits), which a thread sends the peers every `period`; status shows
    // every member's latest as peers.nodes (`clairfs status --cluster`).
    void set_summary(std::function<std::string()> summary,
                     std::chrono::milliseconds period = std::chrono::milliseconds(1000)) {
        summary_ = std::move(summary);
        summary_period_ = period;
    }

    // Fills status["peers"] (clairfs-control(5)).
    void status(nlohmann::json& out) const;

private:
    struct Waiting;
    struct Job {
        int from;
        FrameHeader h;
        std::chrono::steady_clock::time_point queued;
    };
    bool await_answer(Waiting& w, std::unique_lock<std::mutex>& lk, SourceRate& link,
                      std::chrono::steady_clock::time_point start);
    PeerReply refused(const Waiting& w, std::unique_lock<std::mutex>& lk);
    PeerReply arrived(Waiting& w, uint64_t expect, std::chrono::steady_clock::time_point start);
    void links_status(nlohmann::json& p) const;
    nlohmann::json source_status(const Member& m, bool up) const;
    nlohmann::json nodes_status() const;
    void on_frame(int from, const FrameHeader& h, std::shared_ptr<cache::Blob> payload);
    void queue_get(int from, const FrameHeader& h);
    void take_note(int from, const FrameHeader& h, const cache::Blob* payload);
    void answer_waiting(int from, const FrameHeader& h, std::shared_ptr<cache::Blob> payload);
    void on_down(int peer, const std::string& why);
    void on_up(int peer);
    void send_note(int peer, const std::string& text, uint16_t kind = 0);
    void report_loop();
    void serve_loop();
    void answer_get(const Job& j);

    Group group_;
    PeerOptions opt_;
    Serve serve_;
    std::function<void()> note_changed_;
    std::function<std::string()> summary_;
    std::chrono::milliseconds summary_period_{1000};
    Transport transport_;

    // Guards everything below. Lock order: mu_, then the transport's (its
    // callbacks run without it held). Never held across a send, a serve, a
    // checksum or a log line.
    mutable std::mutex mu_;
    uint64_t next_request_ = 1;
    std::unordered_map<uint64_t, std::shared_ptr<Waiting>> waiting_;
    std::deque<Job> jobs_; // gets to answer, demand ones first
    std::condition_variable jobs_cv_;
    bool stopping_ = false;
    std::vector<std::string> down_why_; // by rank: "" while never down
    struct Rate {
        uint64_t files = 0, bytes = 0;
        double seconds = 0; // summed fetch time
    };
    std::vector<Rate> rates_; // by rank: fetches from that peer
    std::unique_ptr<SourceRate[]> link_rates_; // by rank: the link's cost, for the source model
    uint64_t files_in_ = 0, bytes_in_ = 0, files_out_ = 0, bytes_out_ = 0;
    uint64_t errors_ = 0;         // failed fetches (not counting a peer's death)
    uint64_t corrupt_ = 0;        // ... of which failed their checksum
    uint64_t down_fallbacks_ = 0; // fetches that ended because the home went down
    std::vector<std::thread> servers_;
    std::string own_note_;
    std::map<int, std::string> notes_; // by rank, live peers only
    struct Summary {
        std::string text;
        std::chrono::steady_clock::time_point at;
    };
    std::map<int, Summary> summaries_; // by rank, this daemon's included
    std::condition_variable report_cv_; // wakes the reporter to stop
    std::thread reporter_;
};

} // namespace clairfs::peer
