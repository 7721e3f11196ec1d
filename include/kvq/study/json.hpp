/// \file
/// kvq/study/json.hpp — the JSON of study results: nlohmann::ordered_json (keys in
/// insertion order, so a study's JSON reads in the order it was written), and the one
/// way kvq writes it: invalid UTF-8 in a string (a command-line argument, say) is
/// replaced by U+FFFD instead of failing, so every file kvq writes is valid JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kvq::study {

/// The JSON type of study results: keys stay in insertion order.
using json = nlohmann::ordered_json;

/// The text of j: indent < 0 gives one line, otherwise that many spaces per level.
inline std::string dump_json(const json& j, int indent = 2) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

}  // namespace kvq::study
