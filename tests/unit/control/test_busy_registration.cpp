// SPDX-License-Identifier: MIT
// Two training scripts on one mount that both register without a job name
// used to replace each other's job "default" in turn, silently, and both
// ended in fallback. A registration that would replace a running written
// job of its id, differing from it, is now refused with EBUSY, unless its
// writer wrote that job, no process of the job but the writer runs, or the
// registration says "replace": true (Controller::register_job). The same
// registration again is kept, and a detected job is replaced as before.
//
// Job A reads class0 in order, one file at a time; B differs from it only
// in its batch size. Writers and readers are live processes, forked before
// the engine's threads start: the engine reads /proc/PID/status, and
// retires a job whose processes have all exited.
#include "small_engine.hpp"
#include "clairfs/control/controller.hpp"
#include "live_process.hpp"

#include <algorithm>
#include <atomic>
#include <future>
#include <latch>
#include <nlohmann/json.hpp>
#include <optional>

using namespace clairfs;
using namespace std::chrono_literals;

namespace {

const std::string job_a =
    R"({"root": "class0", "layout": "sorted", "sampler": "sequential", "batch_size": 1})";
const std::string job_b =
    R"({"root": "class0", "layout": "sorted", "sampler": "sequential", "batch_size": 2})";

// `job` with more keys: with_keys(job_b, R"("job": "b")").
std::string with_keys(const std::string& job, const std::string& keys) {
    return job.substr(0, job.size() - 1) + ", " + keys + "}";
}

struct Mount {
    test::Dataset d{192}; // 64 in class0
    test::LiveProcess writer_a, writer_b;
    std::optional<test::LiveProcess> reader{std::in_place};
    std::vector<index::NodeId> order = test::sorted_ids(d, "class0/");
    std::unique_ptr<prefetch::Engine> engine;
    std::unique_ptr<control::Controller> control;

    Mount() {
        REQUIRE(order.size() == 64);
        engine = test::small_engine(d);
        control = std::make_unique<control::Controller>(d.idx, *engine);
    }
    ~Mount() {
        engine->set_prepare_hook(nullptr);
        engine->stop();
    }

    int write(const std::string& text, uint32_t writer, std::string& why) {
        return control->write_control(text, why, writer);
    }
    // A's first files, opened by the reader: the job's process from then on.
    void read_a() {
        for (size_t k = 0; k < 4; ++k) (void)engine->opened(order[k], reader->id());
        auto live = engine->live_processes(control::default_job);
        REQUIRE(std::ranges::find(live, reader->id()) != live.end());
    }
    nlohmann::json status() const { return nlohmann::json::parse(control->status_text()); }
    // The batch size of job `id` as control reads back, 0 if no such job.
    uint64_t batch_size(const std::string& id = control::default_job) const {
        auto c = nlohmann::json::parse(control->control_text());
        std::vector<nlohmann::json> jobs;
        if (c.contains("jobs"))
            jobs.assign(c["jobs"].begin(), c["jobs"].end());
        else if (!c.empty())
            jobs.push_back(c);
        for (const auto& j : jobs)
            if (j.value("job", std::string(control::default_job)) == id)
                return j["batch_size"].get<uint64_t>();
        return 0;
    }
};

} // namespace

TEST_CASE("a registration over another process's running job of its name") {
    Mount m;
    std::string why;
    REQUIRE_MESSAGE(m.write(job_a, m.writer_a.id(), why) == 0, why);
    REQUIRE(m.batch_size() == 1);

    SUBCASE("is refused with EBUSY while the job's reader runs, naming the job") {
        m.read_a();
        const uint64_t registrations = m.status()["registrations"].get<uint64_t>();
        CHECK(m.write(job_b, m.writer_b.id(), why) == -EBUSY);
        INFO(why);
        CHECK(why.find("job 'default' is active") != std::string::npos);
        CHECK(why.find("registered by pid " + std::to_string(m.writer_a.id())) !=
              std::string::npos);
        CHECK(why.find("\"job\"") != std::string::npos);
        CHECK(why.find('\n') == std::string::npos);
        auto st = m.status();
        CHECK(st["error"] == why);
        CHECK(st["registrations"] == registrations);
        CHECK(m.batch_size() == 1); // A goes on
        CHECK(m.engine->is_active(control::default_job));
        // Its process is still A's: the job was not rebuilt.
        auto live = m.engine->live_processes(control::default_job);
        CHECK(std::ranges::find(live, m.reader->id()) != live.end());
    }
    SUBCASE("is refused with EINVAL, for what is wrong with it, when it is invalid") {
        // A bad registration says what is wrong, whoever runs (stress_large
        // wrote invalid ones over a running job and got EBUSY).
        m.read_a();
        CHECK(m.write(R"({"seed": 1, "layout": "ranges", "manifest": "no-such-manifest.txt"})",
                      m.writer_b.id(), why) == -EINVAL);
        INFO(why);
        CHECK(why.find("is active") == std::string::npos);
        CHECK(why.find("manifest") != std::string::npos);
        CHECK(m.batch_size() == 1); // A goes on
    }
    SUBCASE("replaces it when its own writer writes again") {
        m.read_a();
        CHECK(m.write(job_b, m.writer_a.id(), why) == 0);
        CHECK(why.empty());
        CHECK(m.batch_size() == 2);
        CHECK(m.status()["error"].is_null());
    }
    SUBCASE("leaves it running when it is the same registration") {
        m.read_a();
        CHECK(m.write(job_a, m.writer_b.id(), why) == 0);
        CHECK(m.batch_size() == 1);
        // Still the job the reader opened files of, not a new one.
        auto live = m.engine->live_processes(control::default_job);
        CHECK(std::ranges::find(live, m.reader->id()) != live.end());
        // And still A's writer's: B's writer may not replace it.
        CHECK(m.write(job_b, m.writer_b.id(), why) == -EBUSY);
    }
    SUBCASE("replaces it when nobody opened its files yet") {
        CHECK(m.write(job_b, m.writer_b.id(), why) == 0);
        CHECK(m.batch_size() == 2);
    }
    SUBCASE("replaces it when written by the job's only running process") {
        // As a job registered at mount (`clairfs mount --register`) is by
        // its training script: the script is the job's process, not its writer.
        m.read_a();
        CHECK(m.write(job_b, m.reader->id(), why) == 0);
        CHECK(m.batch_size() == 2);
    }
    SUBCASE("replaces it once its readers have all exited") {
        m.read_a();
        m.reader.reset(); // killed and reaped
        CHECK(m.write(job_b, m.writer_b.id(), why) == 0);
        CHECK(m.batch_size() == 2);
    }
    SUBCASE("replaces it when the registration says \"replace\": true") {
        m.read_a();
        CHECK(m.write(with_keys(job_b, R"("replace": true)"), m.writer_b.id(), why) == 0);
        CHECK(m.batch_size() == 2);
        // The new job is its writer's now: A's may not take it back.
        m.read_a();
        CHECK(m.write(job_a, m.writer_a.id(), why) == -EBUSY);
    }
    SUBCASE("registers a job of another name beside it") {
        m.read_a();
        CHECK(m.write(with_keys(job_b, R"("job": "b")"), m.writer_b.id(), why) == 0);
        CHECK(m.batch_size() == 1);
        CHECK(m.batch_size("b") == 2);
        CHECK(m.engine->is_active(control::default_job));
        CHECK(m.engine->is_active("b"));
    }
    SUBCASE("is refused when the job began to run while the registration was built") {
        // Both scripts started at once: B's write found A without a process,
        // and A's reader opened its files while B's job was built.
        std::latch in_build{1}, resume{1};
        test::OpenAtEnd resume_at_end{resume}; // however the case ends
        m.engine->set_prepare_hook([&] {
            in_build.count_down();
            resume.wait();
        });
        std::future<int> b = std::async(std::launch::async, [&] {
            std::string w;
            return m.write(job_b, m.writer_b.id(), w);
        });
        // A refusal before the build never gets there.
        REQUIRE(test::eventually([&] { return in_build.try_wait(); }, 30s));
        m.read_a();
        resume.count_down();
        REQUIRE(b.wait_for(30s) == std::future_status::ready);
        CHECK(b.get() == -EBUSY);
        CHECK(m.batch_size() == 1);
    }
    SUBCASE("is accepted when it is the same one, built while another rank's went live") {
        // Every rank of a node writes the same registration at once: the
        // first to finish its build runs the job before the others do.
        REQUIRE(m.write("{}", m.writer_a.id(), why) == 0);
        std::latch in_build{1}, resume{1};
        test::OpenAtEnd resume_at_end{resume}; // however the case ends
        std::atomic<int> builds{0};
        m.engine->set_prepare_hook([&] {
            if (builds++ > 0) return; // the first build only
            in_build.count_down();
            resume.wait();
        });
        std::future<int> b = std::async(std::launch::async, [&] {
            std::string w;
            return m.write(job_a, m.writer_b.id(), w);
        });
        REQUIRE(test::eventually([&] { return in_build.try_wait(); }, 30s));
        REQUIRE(m.write(job_a, m.writer_a.id(), why) == 0);
        m.read_a();
        resume.count_down();
        REQUIRE(b.wait_for(30s) == std::future_status::ready);
        CHECK(b.get() == 0);
        CHECK(m.batch_size() == 1);
    }
}

TEST_CASE("a written registration replaces a detected job of its name") {
    test::Dataset d(3000); // 1000 in class0
    test::LiveProcess reader, writer;
    const std::vector<index::NodeId> order = test::sorted_ids(d, "class0/");
    const auto engine_ptr = test::small_engine(d);
    prefetch::Engine& engine = *engine_ptr;
    control::Controller control(d.idx, engine);
    control.enable_detection({});
    control.start_detection();

    size_t next = 0;
    auto detected = [&] {
        return nlohmann::json::parse(control.status_text())["registered"] == "detected";
    };
    while (!detected() && next < order.size()) {
        for (size_t end = std::min(next + 50, order.size()); next < end; ++next)
            (void)engine.opened(order[next], reader.id());
        std::this_thread::sleep_for(20ms);
    }
    REQUIRE(test::eventually(detected, 30s));
    auto live = engine.live_processes(control::default_job);
    REQUIRE(std::ranges::find(live, reader.id()) != live.end());

    std::string why;
    CHECK(control.write_control(job_b, why, writer.id()) == 0);
    INFO(why);
    auto st = nlohmann::json::parse(control.status_text());
    CHECK(st["registered"] == true);
    CHECK(nlohmann::json::parse(control.control_text())["batch_size"] == 2);
    control.stop_detection();
    engine.stop();
}

TEST_CASE("replace is a key of the whole registration") {
    control::ControlRequest req;
    CHECK(control::parse_control(R"({"seed": 1, "replace": true})", req).empty());
    CHECK(req.replace);
    CHECK(control::parse_control(R"({"seed": 1})", req).empty());
    CHECK_FALSE(req.replace);
    // Not a key of the job: the job reads back, and compares, without it.
    CHECK(control::parse_control(R"({"seed": 1, "replace": true, "loaders": [{"root": "a"}]})", req)
              .empty());
    CHECK(req.replace);
    CHECK(control::job_json(req.job).find(R"("replace")") == std::string::npos);
    CHECK(control::parse_control(R"({"replace": true})", req) ==
          "replace goes with a registration, not on its own");
    CHECK(control::parse_control(R"({"seed": 1, "replace": "yes"})", req) ==
          "replace must be true or false");
    CHECK(control::parse_control(R"({"loaders": [{"root": "a", "replace": true}]})", req) ==
          "replace belongs to the whole registration, not to one loader");
    CHECK(control::parse_control(R"({"unregister": true, "replace": true})", req) ==
          "unregister: true takes no other keys than job");
}
