// SPDX-License-Identifier: MIT
#include "launcher_ranks.hpp"

#include <charconv>
#include <cstdlib>

namespace clairfs::cli {
namespace {

// An unsigned integer variable: nullopt when unset, "" in `why` when fine.
std::optional<uint64_t> number(const EnvLookup& env, const char* name, std::string& why) {
    std::optional<std::string> v = env(name);
    if (!v) return std::nullopt;
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (v->empty() || ec != std::errc{} || p != v->data() + v->size()) {
        if (why.empty()) why = std::string(name) + "='" + *v + "' is not a number";
        return std::nullopt;
    }
    return n;
}

// Slurm's compressed tasks-per-node list, "4(x2),3": the count on node
// `node` (0-based), or nullopt when the list does not parse or is short.
std::optional<uint64_t> tasks_on_node(const std::string& list, uint64_t node) {
    size_t pos = 0;
    while (pos < list.size()) {
        size_t end = list.find(',', pos);
        if (end == std::string::npos) end = list.size();
        std::string item = list.substr(pos, end - pos);
        uint64_t count = 0, repeat = 1;
        const char* b = item.data();
        const char* e = b + item.size();
        auto [p, ec] = std::from_chars(b, e, count);
        if (ec != std::errc{} || p == b) return std::nullopt;
        if (p != e) {
            // "(xN)"
            if (e - p < 4 || p[0] != '(' || p[1] != 'x' || e[-1] != ')') return std::nullopt;
            auto [q, ec2] = std::from_chars(p + 2, e - 1, repeat);
            if (ec2 != std::errc{} || q != e - 1 || repeat == 0) return std::nullopt;
        }
        if (node < repeat) return count;
        node -= repeat;
        pos = end + 1;
    }
    return std::nullopt;
}

std::string range_text(uint64_t base, uint64_t count) {
    return count == 1 ? std::to_string(base)
                      : std::to_string(base) + "-" + std::to_string(base + count - 1);
}

std::string fill(uint64_t base, uint64_t count, std::optional<uint64_t> world, std::string source,
                 LauncherRanks& out) {
    if (count == 0) return "--ranks auto: " + source + " gives this node no ranks";
    if (world && base + count > *world)
        return "--ranks auto: ranks " + range_text(base, count) + " (" + source +
               ") do not fit a world size of " + std::to_string(*world);
    out.ranks.clear();
    for (uint64_t r = 0; r < count; ++r) out.ranks.push_back(base + r);
    out.world_size = world;
    out.source = std::move(source);
    return "";
}

// A helper launch of one process per node (srun --ntasks-per-node=1,
// mpiexec -ppn 1): the world size spread evenly over `nodes` nodes, this
// node's block.
std::string spread(uint64_t node, uint64_t nodes, uint64_t world, const std::string& source,
                   LauncherRanks& out) {
    if (nodes == 0 || world % nodes != 0)
        return "--ranks auto: world size " + std::to_string(world) + " does not spread evenly " +
               "over " + std::to_string(nodes) + " nodes: export LOCAL_WORLD_SIZE (the " +
               "training's ranks on each node) or give --ranks";
    uint64_t per_node = world / nodes;
    return fill(node * per_node, per_node, world, source + ", world size " + std::to_string(world),
                out);
}

// torchrun (torch.distributed.elastic) in every worker: LOCAL_WORLD_SIZE
// workers on this node, from RANK - LOCAL_RANK (or GROUP_RANK, the node's
// index, when only that is set).
std::string from_torchrun(const EnvLookup& env, uint64_t per_node, std::optional<uint64_t> world,
                          LauncherRanks& out) {
    std::string why;
    auto rank = number(env, "RANK", why);
    auto local = number(env, "LOCAL_RANK", why);
    auto group = number(env, "GROUP_RANK", why);
    if (!why.empty()) return "--ranks auto: " + why;
    std::string lws = "LOCAL_WORLD_SIZE=" + std::to_string(per_node);
    if (rank && local) {
        if (*local > *rank || *local >= per_node)
            return "--ranks auto: LOCAL_RANK=" + std::to_string(*local) + " does not fit RANK=" +
                   std::to_string(*rank) + " and " + lws;
        return fill(*rank - *local, per_node, world,
                    "RANK=" + std::to_string(*rank) + ", LOCAL_RANK=" + std::to_string(*local) +
                        ", " + lws,
                    out);
    }
    if (group)
        return fill(*group * per_node, per_node, world,
                    "GROUP_RANK=" + std::to_string(*group) + ", " + lws, out);
    if (auto node = number(env, "SLURM_NODEID", why); node && why.empty())
        return fill(*node * per_node, per_node, world,
                    "SLURM_NODEID=" + std::to_string(*node) + ", " + lws, out);
    if (!why.empty()) return "--ranks auto: " + why;
    return "--ranks auto: " + lws + " is set but not which node this is (RANK and LOCAL_RANK, "
           "GROUP_RANK or SLURM_NODEID)";
}

// Inside a Slurm step. Either the step is the training itself (its tasks
// are the job's ranks, placed in blocks, Slurm's default), or it is a
// helper step with fewer tasks (srun --ntasks-per-node=1 clairfs register),
// whose own counts say nothing about the training: then the world size,
// spread evenly over the job's nodes, does.
std::string from_slurm(const EnvLookup& env, uint64_t node, std::optional<uint64_t> world,
                       LauncherRanks& out) {
    std::string why;
    auto ntasks = number(env, "SLURM_NTASKS", why);
    auto procid = number(env, "SLURM_PROCID", why);
    auto localid = number(env, "SLURM_LOCALID", why);
    auto nodes = number(env, "SLURM_JOB_NUM_NODES", why);
    if (!nodes) nodes = number(env, "SLURM_NNODES", why);
    if (!why.empty()) return "--ranks auto: " + why;
    std::string at = "SLURM_NODEID=" + std::to_string(node);

    if (world && ntasks && *world != *ntasks) {
        if (!nodes)
            return "--ranks auto: " + at + " but no SLURM_JOB_NUM_NODES to spread world size " +
                   std::to_string(*world) + " over";
        return spread(node, *nodes, *world,
                      at + " of SLURM_JOB_NUM_NODES=" + std::to_string(*nodes), out);
    }
    if (auto dist = env("SLURM_DISTRIBUTION"); dist && !dist->starts_with("block"))
        return "--ranks auto: SLURM_DISTRIBUTION=" + *dist + " places ranks other than in " +
               "blocks: give --ranks";
    std::optional<std::string> per_node_list = env("SLURM_STEP_TASKS_PER_NODE");
    if (!per_node_list) per_node_list = env("SLURM_TASKS_PER_NODE");
    std::optional<uint64_t> here =
        per_node_list ? tasks_on_node(*per_node_list, node) : std::nullopt;
    if (!here || !procid || !localid || *localid > *procid)
        return "--ranks auto: " + at + " but SLURM_PROCID, SLURM_LOCALID and "
               "SLURM_STEP_TASKS_PER_NODE do not say this node's tasks";
    if (!world) world = ntasks;
    return fill(*procid - *localid, *here, world,
                at + ", SLURM_PROCID=" + std::to_string(*procid) + ", SLURM_LOCALID=" +
                    std::to_string(*localid) + ", " + std::to_string(*here) + " tasks here",
                out);
}

// An MPI launcher's variables (names for MPICH's Hydra and Open MPI).
struct MpiNames {
    const char *rank, *size, *local, *local_size;
};
constexpr MpiNames hydra{"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"};
constexpr MpiNames open_mpi{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                            "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};

// Whether every variable of `names` is set.
bool has_all(const EnvLookup& env, const MpiNames& names) {
    return env(names.rank) && env(names.size) && env(names.local) && env(names.local_size);
}

// Under mpiexec, as under srun: the launch is the training itself (this
// process's node holds local_size ranks from rank - local), or a helper
// launch of one process per node (mpiexec -ppn 1 clairfs register), whose
// size is then the node count and not the world size.
std::string from_mpi(const EnvLookup& env, const MpiNames& n, std::optional<uint64_t> world,
                     LauncherRanks& out) {
    std::string why;
    auto rank = number(env, n.rank, why);
    auto size = number(env, n.size, why);
    auto local = number(env, n.local, why);
    auto local_size = number(env, n.local_size, why);
    if (!why.empty()) return "--ranks auto: " + why;
    std::string at = std::string(n.rank) + "=" + std::to_string(*rank) + " of " + n.size + "=" +
                     std::to_string(*size);
    if (world && *world != *size) {
        if (*local_size != 1)
            return "--ranks auto: " + at + " with " + n.local_size + "=" +
                   std::to_string(*local_size) + " is neither the training's launch (world size " +
                   std::to_string(*world) + ") nor one process per node: give --ranks";
        return spread(*rank, *size, *world, at + " (one per node)", out);
    }
    if (*local > *rank || *local >= *local_size)
        return "--ranks auto: " + std::string(n.local) + "=" + std::to_string(*local) +
               " does not fit " + at;
    return fill(*rank - *local, *local_size, world ? world : size,
                at + ", " + n.local + "=" + std::to_string(*local) + ", " + n.local_size + "=" +
                    std::to_string(*local_size),
                out);
}

} // namespace

std::string launcher_ranks(const EnvLookup& env, std::optional<uint64_t> world_size,
                           LauncherRanks& out) {
    std::string why;
    if (!world_size) world_size = number(env, "WORLD_SIZE", why);
    auto per_node = number(env, "LOCAL_WORLD_SIZE", why);
    auto node = number(env, "SLURM_NODEID", why);
    if (!why.empty()) return "--ranks auto: " + why;
    if (per_node) return from_torchrun(env, *per_node, world_size, out);
    // An MPI launcher's own variables describe this launch even inside a
    // Slurm allocation, whose SLURM_* belong to the step that started it.
    for (const MpiNames* names : {&hydra, &open_mpi})
        if (has_all(env, *names)) return from_mpi(env, *names, world_size, out);
    if (node) return from_slurm(env, *node, world_size, out);
    return "--ranks auto: no launcher's environment here (torchrun's LOCAL_WORLD_SIZE with RANK "
           "and LOCAL_RANK, mpiexec's PMI_RANK or OMPI_COMM_WORLD_RANK, or Slurm's "
           "SLURM_NODEID): give --ranks R,R...";
}

EnvLookup process_environment() {
    return [](const char* name) -> std::optional<std::string> {
        const char* v = std::getenv(name);
        if (!v) return std::nullopt;
        return std::string(v);
    };
}

} // namespace clairfs::cli
