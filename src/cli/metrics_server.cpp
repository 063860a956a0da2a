// SPDX-License-Identifier: MIT
#include "metrics_server.hpp"

#include "clairfs/log.hpp"
#include "status_prometheus.hpp"

#include <cerrno>
#include <cstring>
#include <httplib.h>
#include <pthread.h>
#include <sys/socket.h>

namespace clairfs::cli {

MetricsServer::MetricsServer(std::string mountpoint) : mountpoint_(std::move(mountpoint)) {}

MetricsServer::~MetricsServer() {
    stop();
}

std::string MetricsServer::bind(const std::string& address, unsigned port) {
    server_ = std::make_unique<httplib::Server>();
    // One worker: a scrape renders the status once, and idle keep-alive
    // connections or a slow client must not hold more of the daemon.
    server_->new_task_queue = [] { return new httplib::ThreadPool(1); };
    server_->set_read_timeout(5, 0);
    server_->set_write_timeout(5, 0);
    server_->set_keep_alive_max_count(10);
    server_->set_keep_alive_timeout(5);
    // Not httplib's default SO_REUSEPORT: a second mount given the same
    // port would bind beside the first and answer half its scrapes.
    server_->set_socket_options([](int sock) {
        int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        auto j = control_ ? nlohmann::json::parse(control_->status_text(), nullptr, false)
                          : nlohmann::json();
        if (j.is_discarded() || !j.is_object()) {
            res.status = 500;
            res.set_content("the status document is not JSON\n", "text/plain");
            return;
        }
        res.set_content(prometheus_text(j, mountpoint_), "text/plain; version=0.0.4; charset=utf-8");
    });
    errno = 0;
    if (!server_->bind_to_port(address.c_str(), static_cast<int>(port))) {
        const int err = errno;
        server_.reset();
        return "cannot listen for --metrics-port on " + address + ":" + std::to_string(port) +
               (err ? std::string(": ") + std::strerror(err) : std::string(""));
    }
    return "";
}

void MetricsServer::start() {
    if (!server_ || thread_.joinable()) return;
    thread_ = std::thread([this] {
        pthread_setname_np(pthread_self(), "clairfs-metrics");
        if (!server_->listen_after_bind()) LOG_WARN("--metrics-port: the listener stopped");
    });
}

void MetricsServer::stop() {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
}

} // namespace clairfs::cli
