// SPDX-License-Identifier: MIT
// Forming the group from an MPI launch: every daemon started by one
// mpiexec (or srun) learns the others' listeners and the group's token in
// one allgather and one broadcast, on a thread of its own
// (MPI_THREAD_FUNNELED), and makes no other MPI call, not even
// MPI_Finalize (src/peer/mpi_join.cpp says why).
#pragma once

#include "clairfs/peer/group.hpp"

#include <chrono>
#include <string>

namespace clairfs::peer {

// Whether this process was started by an MPI launcher (Hydra's PMI or
// Slurm's PMI2/PMIx environment). Without one, MPI_Init would make a
// singleton group of one, which is what running without --peers does.
bool launched_by_mpi();

// Starts the MPI thread, which calls MPI_Init_thread and exchanges `me`
// (host, port, fingerprint, mem; rank and pid are filled in) with every
// other member. Returns "" and the group, or why not. Waits at most
// `bound` for the other members; the MPI thread then stays blocked in the
// exchange and the caller exits around it.
std::string mpi_join(const Member& me, std::chrono::milliseconds bound, Group& out);

} // namespace clairfs::peer
