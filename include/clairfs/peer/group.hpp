// SPDX-License-Identifier: MIT
// The daemons of one launch: who they are and where each listens. MPI
// (peer/mpi_join.cpp) fills it in once, at start-up; tests fill it in by hand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace clairfs::peer {

struct Member {
    int rank = 0;
    std::string host; // where its listener is reached: a name or an address
    uint16_t port = 0;
    uint64_t fingerprint = 0; // of its dataset index: peers must serve the same files
    uint64_t mem = 0;         // its RAM tier budget, bytes
    uint32_t pid = 0;
};

struct Group {
    int self = 0;
    std::vector<Member> members; // by rank
    // A secret every member of this launch knows (rank 0 draws it, MPI
    // hands it out): a connection that does not present it is refused, so
    // the listener serves the dataset to this launch only.
    std::string token;

    int size() const { return static_cast<int>(members.size()); }
};

// A file's home before any schedule places it: a seeded hash of its id
// over `members` daemons, not id % members, so that neighbouring ids (one
// class folder) spread over every member.
int hash_home(uint32_t id, int members);

// One line of JSON, for handing the group from the process that joined it
// to the daemon it forked.
std::string group_to_json(const Group& g);
// "" or why `text` is not a group.
std::string group_from_json(const std::string& text, Group& out);

} // namespace clairfs::peer
