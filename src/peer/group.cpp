// SPDX-License-Identifier: MIT
#include "clairfs/peer/group.hpp"

#include <nlohmann/json.hpp>
#include <xxhash.h>

namespace clairfs::peer {

int hash_home(uint32_t id, int members) {
    uint64_t h = XXH3_64bits_withSeed(&id, sizeof id, 0x636c616972667321ULL);
    return static_cast<int>(h % static_cast<uint64_t>(members));
}

std::string group_to_json(const Group& g) {
    nlohmann::json j;
    j["self"] = g.self;
    j["token"] = g.token;
    auto& ms = j["members"] = nlohmann::json::array();
    for (const Member& m : g.members)
        ms.push_back({{"rank", m.rank}, {"host", m.host}, {"port", m.port},
                      {"fingerprint", m.fingerprint}, {"mem", m.mem}, {"pid", m.pid}});
    return j.dump();
}

std::string group_from_json(const std::string& text, Group& out) {
    try {
        auto j = nlohmann::json::parse(text);
        Group g;
        g.self = j.at("self").get<int>();
        g.token = j.at("token").get<std::string>();
        for (const auto& m : j.at("members")) {
            Member x;
            x.rank = m.at("rank").get<int>();
            x.host = m.at("host").get<std::string>();
            x.port = m.at("port").get<uint16_t>();
            x.fingerprint = m.at("fingerprint").get<uint64_t>();
            x.mem = m.at("mem").get<uint64_t>();
            x.pid = m.at("pid").get<uint32_t>();
            if (x.rank != static_cast<int>(g.members.size())) return "members out of rank order";
            g.members.push_back(std::move(x));
        }
        if (g.self < 0 || g.self >= g.size()) return "its own rank is not a member";
        out = std::move(g);
        return "";
    } catch (const std::exception& e) {
        return e.what();
    }
}

} // namespace clairfs::peer
