// SPDX-License-Identifier: MIT
// --metrics-port: the mount's status in Prometheus' text format over HTTP
// (GET /metrics), for a Prometheus server to scrape directly. cpp-httplib
// (Debian's libcpp-httplib-dev) serves it: a well-kept library rather than a
// hand-written HTTP parser in a daemon that must not crash.
//
// The socket is bound before the daemon forks, so a taken port fails the
// mount at once with nothing mounted; the one serving thread starts after
// the fork (threads do not survive it) and stops at unmount.
#pragma once

#include "clairfs/control/controller.hpp"

#include <memory>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace clairfs::cli {

class MetricsServer {
public:
    explicit MetricsServer(std::string mountpoint);
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;
    // "" or why ADDRESS:PORT cannot be listened on.
    std::string bind(const std::string& address, unsigned port);
    // What the scrapes read; before start().
    void serve_from(const control::Controller& control) { control_ = &control; }
    void start(); // after the fork
    void stop();  // idempotent

private:
    const control::Controller* control_ = nullptr;
    std::string mountpoint_;
    std::unique_ptr<httplib::Server> server_;
    std::thread thread_;
};

} // namespace clairfs::cli
