// SPDX-License-Identifier: MIT
#include "status_reader.hpp"
#include "control_client.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <system_error>
#include <thread>

namespace clairfs::cli {

// Shared with the thread, which may outlive the reader while a read hangs.
struct StatusReader::State {
    std::string path;
    std::mutex mu;
    std::condition_variable cv;
    bool wanted = false, running = false, finished = false, stop = false;
    int err = 0;
    std::string text;
    int pipe[2] = {-1, -1}; // a byte per finished read, for poll

    ~State() {
        for (int fd : pipe)
            if (fd >= 0) ::close(fd);
    }

    void run() {
        // Signals are the main thread's: it waits for them in ppoll.
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, nullptr);
        for (;;) {
            {
                std::unique_lock lk(mu);
                cv.wait(lk, [&] { return wanted || stop; });
                if (stop) return;
                wanted = false;
            }
            std::string got;
            int rv = read_control_file(path, got);
            {
                std::lock_guard lk(mu);
                err = rv;
                text = std::move(got);
                running = false;
                finished = true;
            }
            char one = 1;
            while (::write(pipe[1], &one, 1) < 0 && errno == EINTR) {}
        }
    }
};

StatusReader::StatusReader(std::string path) : state_(std::make_shared<State>()) {
    state_->path = std::move(path);
    if (pipe2(state_->pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        throw std::system_error(errno, std::generic_category(), "pipe2");
    std::thread([s = state_] { s->run(); }).detach();
}

StatusReader::~StatusReader() {
    std::lock_guard lk(state_->mu);
    state_->stop = true;
    state_->cv.notify_one();
}

bool StatusReader::request() {
    std::lock_guard lk(state_->mu);
    if (state_->running) return false;
    state_->running = state_->wanted = true;
    state_->cv.notify_one();
    return true;
}

int StatusReader::fd() const {
    return state_->pipe[0];
}

bool StatusReader::take(int& err, std::string& text) {
    char drain[16];
    while (::read(state_->pipe[0], drain, sizeof drain) > 0) {}
    std::lock_guard lk(state_->mu);
    if (!state_->finished) return false;
    state_->finished = false;
    err = state_->err;
    text = std::move(state_->text);
    return true;
}

} // namespace clairfs::cli
