// SPDX-License-Identifier: MIT
#include "clairfs/sim/sim_config.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

namespace clairfs::sim {

std::string dataset_sizes(const SimConfig& cfg, std::vector<uint32_t>& sizes) {
    sizes.clear();
    if (cfg.dataset.manifest.empty()) {
        // Log-normal, as image datasets are: the median sets mu, the mean
        // sets sigma (mean = median * exp(sigma^2 / 2)).
        const double mu = std::log(cfg.dataset.median_bytes);
        const double sigma =
            std::sqrt(2.0 * std::log(cfg.dataset.mean_bytes / cfg.dataset.median_bytes));
        std::mt19937_64 g(cfg.dataset.size_seed);
        std::lognormal_distribution<double> d(mu, sigma);
        sizes.resize(cfg.dataset.files);
        for (uint32_t& s : sizes)
            s = static_cast<uint32_t>(std::clamp(std::llround(d(g)), 1LL, 0xFFFFFFFELL));
        return "";
    }
    std::ifstream in(cfg.dataset.manifest);
    if (!in) return "dataset.manifest: cannot read '" + cfg.dataset.manifest + "'";
    std::string line;
    uint64_t lineno = 0;
    while (std::getline(in, line)) {
        ++lineno;
        size_t a = line.find_first_not_of(" \t");
        if (a == std::string::npos || line[a] == '#') continue;
        size_t b = line.find_first_of(" \t", a);
        std::string field = line.substr(a, b == std::string::npos ? b : b - a);
        uint64_t v = 0;
        bool ok = !field.empty() && field.size() <= 10;
        for (char ch : field) ok = ok && ch >= '0' && ch <= '9';
        if (ok) v = std::stoull(field);
        if (!ok || v == 0 || v > 0xFFFFFFFEULL)
            return cfg.dataset.manifest + ":" + std::to_string(lineno) +
                   ": the first field must be a file size in bytes, 1 to 4294967294";
        if (sizes.size() == UINT32_MAX - 1)
            return cfg.dataset.manifest + ": more than 4294967294 files";
        sizes.push_back(static_cast<uint32_t>(v));
    }
    if (sizes.empty()) return cfg.dataset.manifest + ": no files listed";
    return "";
}

} // namespace clairfs::sim
