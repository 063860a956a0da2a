// SPDX-License-Identifier: MIT
#include "clairfs/peer/mpi_join.hpp"

#include <condition_variable>
#include <dlfcn.h>
#include <cstdlib>
#include <cstring>
#include <mpi.h>
#include <mutex>
#include <pthread.h>
#include <sys/random.h>
#include <thread>
#include <type_traits>
#include <unistd.h>
#include <vector>

namespace clairfs::peer {
namespace {

// The few MPI functions the join makes, from libmpich loaded at run time
// (meson.build says why). The handles and constants come from mpi.h.
struct Api {
    int (*init_thread)(int*, char***, int, int*);
    int (*set_errhandler)(MPI_Comm, MPI_Errhandler);
    int (*rank)(MPI_Comm, int*);
    int (*size)(MPI_Comm, int*);
    int (*allgather)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm);
    int (*bcast)(void*, int, MPI_Datatype, int, MPI_Comm);
};

std::string load(Api& a) {
    void* h = nullptr;
    for (const char* name : {"libmpich.so.12", "libmpi.so.12"})
        if ((h = ::dlopen(name, RTLD_NOW | RTLD_GLOBAL))) break;
    if (!h)
        return std::string("cannot load MPICH (libmpich.so.12): ") + ::dlerror() +
               "; install the mpich package";
    auto sym = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
        return fn != nullptr;
    };
    if (!sym(a.init_thread, "MPI_Init_thread") || !sym(a.set_errhandler, "MPI_Comm_set_errhandler") ||
        !sym(a.rank, "MPI_Comm_rank") || !sym(a.size, "MPI_Comm_size") ||
        !sym(a.allgather, "MPI_Allgather") || !sym(a.bcast, "MPI_Bcast"))
        return "the MPI library lacks a function the join needs";
    return "";
}

// One member's entry in the allgather: fixed size, plain bytes.
struct Record {
    char host[256];
    uint64_t fingerprint;
    uint64_t mem;
    uint32_t pid;
    uint16_t port;
    uint16_t pad;
};

// The MPI thread's state. Never freed: the thread may be stuck in MPI when
// the daemon exits around it.
struct MpiState {
    std::mutex mu;
    std::condition_variable cv;
    bool joined = false;
    std::string error;
    Group group;
};

MpiState* state() {
    static auto* s = new MpiState;
    return s;
}

std::string token() {
    unsigned char raw[16];
    if (getrandom(raw, sizeof raw, 0) != static_cast<ssize_t>(sizeof raw)) {
        // Still unguessable enough to tell launches apart, not a secret.
        for (auto& c : raw) c = static_cast<unsigned char>(std::rand());
    }
    static const char* hex = "0123456789abcdef";
    std::string t;
    for (unsigned char c : raw) {
        t += hex[c >> 4];
        t += hex[c & 15];
    }
    return t;
}

Record record_of(const Member& me) {
    Record r{};
    std::strncpy(r.host, me.host.c_str(), sizeof r.host - 1);
    r.fingerprint = me.fingerprint;
    r.mem = me.mem;
    r.pid = static_cast<uint32_t>(::getpid());
    r.port = me.port;
    return r;
}

Group group_of(const std::vector<Record>& all, int rank, const char* tok) {
    Group g;
    g.self = rank;
    g.token = tok;
    for (int r = 0; r < static_cast<int>(all.size()); ++r) {
        const Record& x = all[static_cast<size_t>(r)];
        Member m;
        m.rank = r;
        m.host.assign(x.host, strnlen(x.host, sizeof x.host));
        m.port = x.port;
        m.fingerprint = x.fingerprint;
        m.mem = x.mem;
        m.pid = x.pid;
        g.members.push_back(std::move(m));
    }
    return g;
}

// Every member's address, and rank 0's token: "" or why not.
std::string join(const Member& me, Group& out) {
    Api mpi{};
    if (auto why = load(mpi); !why.empty()) return why;
    int provided = 0;
    if (mpi.init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return "MPI_Init_thread failed";
    // A failed call returns its error instead of aborting every member.
    mpi.set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    mpi.rank(MPI_COMM_WORLD, &rank);
    mpi.size(MPI_COMM_WORLD, &size);
    Record mine = record_of(me);
    std::vector<Record> all(static_cast<size_t>(size));
    if (mpi.allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE,
                      MPI_COMM_WORLD) != MPI_SUCCESS)
        return "MPI_Allgather of the members' addresses failed";
    char tok[33] = {};
    if (rank == 0) std::memcpy(tok, token().c_str(), 32);
    if (mpi.bcast(tok, 32, MPI_CHAR, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        return "MPI_Bcast of the group token failed";
    out = group_of(all, rank, tok);
    return "";
}

void run(Member me) {
    pthread_setname_np(pthread_self(), "clairfs-mpi");
    MpiState* s = state();
    Group g;
    std::string why = join(me, g);
    std::lock_guard lk(s->mu);
    if (why.empty()) {
        s->group = std::move(g);
        s->joined = true;
    } else {
        s->error = why;
    }
    s->cv.notify_all();
    // No MPI call after this: MPI_Finalize is a barrier of the process
    // manager, and with MPICH 4.0.2's Hydra a member that exits while one
    // is in flight makes the proxy fail and kill the rest (measured: the
    // daemons unmount at different times, and one may have died). The
    // launcher is told about the exit by the exit itself.
}

} // namespace

bool launched_by_mpi() {
    for (const char* v : {"PMI_RANK", "PMI_FD", "PMI_PORT", "PMIX_RANK"})
        if (std::getenv(v)) return true;
    return false;
}

std::string mpi_join(const Member& me, std::chrono::milliseconds bound, Group& out) {
    MpiState* s = state();
    std::thread(run, me).detach();
    std::unique_lock lk(s->mu);
    bool done = s->cv.wait_for(lk, bound, [&] { return s->joined || !s->error.empty(); });
    if (!done)
        return "the other daemons of this MPI launch did not join within " +
               std::to_string(bound.count() / 1000) +
               " s (did one of them fail to start? see its log)";
    if (!s->error.empty()) return s->error;
    out = s->group;
    return "";
}

} // namespace clairfs::peer
