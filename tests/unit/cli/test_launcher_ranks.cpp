// SPDX-License-Identifier: MIT
// `clairfs register --ranks auto`: the ranks on this node from the launcher's
// environment (torchrun, Slurm), and the refusals where it cannot say.
#include "cli/launcher_ranks.hpp"
#include "cli/register_args.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <map>

#include <unistd.h>

using namespace clairfs::cli;

namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
        auto it = vars.find(name);
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
}

std::vector<uint64_t> ranks_of(std::map<std::string, std::string> vars,
                               std::optional<uint64_t> world = std::nullopt) {
    LauncherRanks got;
    std::string why = launcher_ranks(env_of(std::move(vars)), world, got);
    INFO(why);
    CHECK(why.empty());
    return got.ranks;
}

std::string refusal(std::map<std::string, std::string> vars,
                    std::optional<uint64_t> world = std::nullopt) {
    LauncherRanks got;
    return launcher_ranks(env_of(std::move(vars)), world, got);
}

using R = std::vector<uint64_t>;

} // namespace

TEST_CASE("torchrun: the node's block of ranks from RANK - LOCAL_RANK") {
    LauncherRanks got;
    auto env = env_of({{"RANK", "6"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "4"},
                       {"WORLD_SIZE", "16"}, {"GROUP_RANK", "1"}});
    REQUIRE(launcher_ranks(env, std::nullopt, got).empty());
    CHECK(got.ranks == R{4, 5, 6, 7});
    CHECK(got.world_size == 16u);
    CHECK(got.source.find("RANK=6") != std::string::npos);
    // GROUP_RANK alone (an agent's environment, no worker rank yet).
    CHECK(ranks_of({{"GROUP_RANK", "3"}, {"LOCAL_WORLD_SIZE", "2"}, {"WORLD_SIZE", "8"}}) ==
          R{6, 7});
    // A job script that exports LOCAL_WORLD_SIZE under Slurm.
    CHECK(ranks_of({{"SLURM_NODEID", "2"}, {"LOCAL_WORLD_SIZE", "4"}}) == R{8, 9, 10, 11});
    // The registration's world_size wins over WORLD_SIZE.
    got = {};
    REQUIRE(launcher_ranks(env, 32, got).empty());
    CHECK(got.world_size == 32u);
}

TEST_CASE("torchrun: what does not fit is refused, saying which variable") {
    CHECK(refusal({{"LOCAL_WORLD_SIZE", "4"}}).find("not which node") != std::string::npos);
    CHECK(refusal({{"RANK", "1"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "4"}})
              .find("LOCAL_RANK=2 does not fit") != std::string::npos);
    CHECK(refusal({{"RANK", "x"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "4"}})
              .find("RANK='x' is not a number") != std::string::npos);
    CHECK(refusal({{"RANK", "12"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "4"},
                   {"WORLD_SIZE", "8"}})
              .find("do not fit a world size of 8") != std::string::npos);
    CHECK(refusal({{"LOCAL_WORLD_SIZE", "0"}, {"GROUP_RANK", "0"}}).find("no ranks") !=
          std::string::npos);
    CHECK(refusal({}).find("no launcher's environment") != std::string::npos);
}

TEST_CASE("Slurm: the training step's own tasks, in blocks") {
    // srun --ntasks-per-node=3 over 2 nodes, this is node 1's first task.
    std::map<std::string, std::string> step = {
        {"SLURM_NODEID", "1"},       {"SLURM_PROCID", "3"},
        {"SLURM_LOCALID", "0"},      {"SLURM_NTASKS", "6"},
        {"SLURM_JOB_NUM_NODES", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "3(x2)"}};
    LauncherRanks got;
    REQUIRE(launcher_ranks(env_of(step), std::nullopt, got).empty());
    CHECK(got.ranks == R{3, 4, 5});
    CHECK(got.world_size == 6u);
    // Uneven blocks: 4 tasks on node 0, 3 on node 1, 2 on node 2.
    CHECK(ranks_of({{"SLURM_NODEID", "2"}, {"SLURM_PROCID", "7"}, {"SLURM_LOCALID", "0"},
                    {"SLURM_NTASKS", "9"}, {"SLURM_STEP_TASKS_PER_NODE", "4,3,2"}}) == R{7, 8});
    // Without the step's list, the job's.
    CHECK(ranks_of({{"SLURM_NODEID", "0"}, {"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "1"},
                    {"SLURM_NTASKS", "2"}, {"SLURM_TASKS_PER_NODE", "2"}}) == R{0, 1});
    step["SLURM_DISTRIBUTION"] = "cyclic";
    CHECK(refusal(step).find("SLURM_DISTRIBUTION=cyclic") != std::string::npos);
    CHECK(refusal({{"SLURM_NODEID", "5"}, {"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "0"},
                   {"SLURM_NTASKS", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}})
              .find("do not say this node's tasks") != std::string::npos);
    CHECK(refusal({{"SLURM_NODEID", "0"}, {"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"},
                   {"SLURM_STEP_TASKS_PER_NODE", "2(x"}})
              .find("do not say") != std::string::npos);
}

TEST_CASE("Slurm: a helper step (one task per node) spreads the world size over the nodes") {
    std::map<std::string, std::string> helper = {
        {"SLURM_NODEID", "1"}, {"SLURM_PROCID", "1"},         {"SLURM_LOCALID", "0"},
        {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NUM_NODES", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}};
    CHECK(ranks_of(helper, 8) == R{4, 5, 6, 7});
    helper["WORLD_SIZE"] = "8";
    CHECK(ranks_of(helper) == R{4, 5, 6, 7});
    CHECK(refusal(helper, 7).find("does not spread evenly over 2 nodes") != std::string::npos);
}

TEST_CASE("mpiexec: Hydra's and Open MPI's variables, a training launch or one per node") {
    // mpiexec -n 8 -ppn 4: rank 5 is the second on the second node.
    LauncherRanks got;
    REQUIRE(launcher_ranks(env_of({{"PMI_RANK", "5"}, {"PMI_SIZE", "8"}, {"MPI_LOCALRANKID", "1"},
                                   {"MPI_LOCALNRANKS", "4"}}),
                           std::nullopt, got)
                .empty());
    CHECK(got.ranks == R{4, 5, 6, 7});
    CHECK(got.world_size == 8u);
    CHECK(ranks_of({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}) ==
          R{2, 3});
    // mpiexec -ppn 1 -n 2 clairfs register --world-size 8: node 1's block.
    std::map<std::string, std::string> helper = {{"PMI_RANK", "1"}, {"PMI_SIZE", "2"},
                                                 {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "1"}};
    CHECK(ranks_of(helper, 8) == R{4, 5, 6, 7});
    // Inside a Slurm allocation the launch's own variables win.
    helper["SLURM_NODEID"] = "0";
    helper["SLURM_NTASKS"] = "1";
    CHECK(ranks_of(helper, 8) == R{4, 5, 6, 7});
    CHECK(refusal(helper, 7).find("does not spread evenly over 2 nodes") != std::string::npos);
    CHECK(refusal({{"PMI_RANK", "1"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "1"},
                   {"MPI_LOCALNRANKS", "2"}},
                  16)
              .find("neither the training's launch") != std::string::npos);
    CHECK(refusal({{"PMI_RANK", "0"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "1"},
                   {"MPI_LOCALNRANKS", "2"}})
              .find("MPI_LOCALRANKID=1 does not fit") != std::string::npos);
}

TEST_CASE("register --ranks auto: resolved once every flag is read") {
    auto env = env_of({{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"},
                       {"WORLD_SIZE", "8"}});
    RegisterArgs a;
    REQUIRE(parse_register_args({"/mnt", "--ranks", "auto", "--sampler", "distributed"}, a, env)
                .empty());
    CHECK(a.body["ranks"] == nlohmann::ordered_json({4, 5, 6, 7}));
    CHECK(a.body["world_size"] == 8);
    CHECK(a.note.find("ranks [4,5,6,7] of 8 from RANK=5") != std::string::npos);

    // A given world size is kept, and decides.
    RegisterArgs b;
    REQUIRE(parse_register_args({"/mnt", "--ranks=auto", "--sampler", "distributed",
                                 "--world-size", "16"},
                                b, env)
                .empty());
    CHECK(b.body["world_size"] == 16);

    // Loaders (from a --config file) inherit the registration's keys.
    std::string path = "/tmp/clairfs-unit-ranks-" + std::to_string(getpid()) + ".json";
    {
        std::ofstream f(path);
        f << R"([{"root": "train", "ranks": "auto"}, {"root": "val", "ranks": [0]}])";
    }
    RegisterArgs c;
    std::string loaders_why =
        parse_register_args({"/mnt", "--config", path, "--sampler", "distributed"}, c, env);
    std::remove(path.c_str());
    REQUIRE(loaders_why.empty());
    CHECK(c.body["loaders"][0]["ranks"] == nlohmann::ordered_json({4, 5, 6, 7}));
    CHECK(c.body["loaders"][0]["world_size"] == 8);
    CHECK(c.body["loaders"][1]["ranks"] == nlohmann::ordered_json({0}));

    // A sampler that does not split by rank reads one order: rank 0 only.
    RegisterArgs e;
    std::string why = parse_register_args({"/mnt", "--ranks", "auto"}, e, env);
    CHECK(why.find("only sampler distributed") != std::string::npos);
    RegisterArgs f;
    CHECK(parse_register_args({"/mnt", "--ranks", "auto"}, f,
                              env_of({{"RANK", "0"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"}}))
              .empty());
    CHECK(f.body["ranks"] == nlohmann::ordered_json({0}));
    CHECK_FALSE(f.body.contains("world_size"));

    RegisterArgs g;
    CHECK(parse_register_args({"/mnt", "--ranks", "auto", "--sampler", "distributed"}, g,
                              env_of({}))
              .find("no launcher's environment") != std::string::npos);
}
