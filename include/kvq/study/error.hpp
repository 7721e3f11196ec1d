/// \file
/// kvq/study/error.hpp — the study layer's error for bad input (exit status 2 in the kvq
/// command: one line naming the problem and the allowed values) and its list helpers.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

/// The study engine: declared grid parameters, result tables, the deterministic task
/// runner, progress, atomic output file sets, and runs split across processes (shards)
/// with their merge. The studies themselves are registered with the kvq command.
namespace kvq::study {

/// One-line error caused by the caller's input (exit status 2 in the kvq command).
struct usage_error : std::runtime_error {
  /// An error with message m (one line naming the problem and the allowed values).
  explicit usage_error(const std::string& m) : std::runtime_error(m) {}
};

/// The strings of v separated by sep.
inline std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string r;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) r += sep;
    r += v[i];
  }
  return r;
}

/// The fields of s between separators sep, with spaces dropped; an empty s gives one
/// empty field.
inline std::vector<std::string> split(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace kvq::study
