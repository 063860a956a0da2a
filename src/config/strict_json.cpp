// SPDX-License-Identifier: MIT
#include "clairfs/config/strict_json.hpp"

#include "clairfs/config/utf8_text.hpp"

#include <string>
#include <unordered_set>
#include <vector>

namespace clairfs::config {
namespace {

// Thrown from the parser callback to stop at the first refused construct;
// it never leaves this file.
struct Refused {
    std::string why;
};

// Keeps one set of keys per open object (arrays hold an empty one), so a
// key is compared only with its siblings.
template <class Json> class Checker {
public:
    bool operator()(int, typename Json::parse_event_t event, Json& parsed) {
        using E = typename Json::parse_event_t;
        if (event == E::object_start || event == E::array_start) open();
        if (event == E::object_end || event == E::array_end) open_.pop_back();
        if (event == E::key) key(parsed.template get_ref<const std::string&>());
        if (event == E::value && parsed.is_string())
            check_length(parsed.template get_ref<const std::string&>());
        return true;
    }

private:
    std::vector<std::unordered_set<std::string>> open_;

    void open() {
        if (open_.size() >= max_json_depth)
            throw Refused{"JSON nested deeper than " + std::to_string(max_json_depth) + " levels"};
        open_.emplace_back();
    }

    void key(const std::string& k) {
        check_length(k);
        if (!open_.back().insert(k).second)
            throw Refused{"duplicate key '" + message_text(k) + "' (give each key once)"};
    }

    static void check_length(const std::string& s) {
        if (s.size() > max_json_string)
            throw Refused{"JSON string longer than " + std::to_string(max_json_string) + " bytes"};
    }
};

// nlohmann's message without its "[json.exception...] " tag.
std::string untagged(const nlohmann::json::exception& e) {
    std::string what = e.what();
    if (auto tag_end = what.find("] "); tag_end != std::string::npos) what.erase(0, tag_end + 2);
    return what;
}

std::string parse_error_text(const nlohmann::json::parse_error& e) {
    std::string what = untagged(e);
    if (what.starts_with("parse error ")) what.erase(0, 12);
    return "not valid JSON (" + message_text(what, 200) + ")";
}

// "number overflow parsing '1e999'" names the number between quotes.
std::string out_of_range_text(const nlohmann::json::out_of_range& e) {
    std::string what = untagged(e);
    size_t open = what.find('\''), close = what.rfind('\'');
    if (e.id != 406 || open == std::string::npos || close <= open)
        return "not valid JSON (" + message_text(what, 200) + ")";
    return "not valid JSON (number out of range: " +
           message_text(std::string_view(what).substr(open + 1, close - open - 1)) + ")";
}

// Whether s[i..] is the start of a multi-byte character cut by the end of
// the text, as a write split inside "é" leaves it.
bool cut_at_end(std::string_view s, size_t i) {
    auto lead = static_cast<unsigned char>(s[i]);
    size_t n = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    if (lead < 0xC2 || lead > 0xF4 || i + n <= s.size()) return false;
    for (size_t k = i + 1; k < s.size(); ++k)
        if ((static_cast<unsigned char>(s[k]) & 0xC0) != 0x80) return false;
    return true;
}

std::string precheck(std::string_view text, bool* ended_early) {
    if (text.size() > max_json_bytes)
        return "JSON text larger than " + std::to_string(max_json_bytes) + " bytes";
    size_t bad = first_invalid_utf8(text);
    if (bad == std::string_view::npos) return "";
    if (ended_early) *ended_early = cut_at_end(text, bad);
    return "not valid JSON (invalid UTF-8 at byte " + std::to_string(bad) + ")";
}

template <class Json> std::string parse(std::string_view text, Json& out, bool* ended_early) {
    if (ended_early) *ended_early = false;
    if (auto why = precheck(text, ended_early); !why.empty()) return why;
    try {
        out = Json::parse(text, Checker<Json>{});
        return "";
    } catch (const Refused& r) {
        return r.why;
    } catch (const nlohmann::json::parse_error& e) {
        // The parser stops at the first byte no continuation can fix; past
        // the end means it ran out of input first.
        if (ended_early) *ended_early = e.byte > text.size();
        return parse_error_text(e);
    } catch (const nlohmann::json::out_of_range& e) {
        return out_of_range_text(e);
    } catch (const nlohmann::json::exception& e) {
        return "not valid JSON (" + message_text(untagged(e), 200) + ")";
    } catch (const std::bad_alloc&) {
        return "JSON text too large to hold in memory";
    }
}

} // namespace

std::string parse_strict_json(std::string_view text, nlohmann::json& out, bool* ended_early) {
    return parse(text, out, ended_early);
}

std::string parse_strict_json(std::string_view text, nlohmann::ordered_json& out,
                              bool* ended_early) {
    return parse(text, out, ended_early);
}

} // namespace clairfs::config
