/// \file
/// kvq/study/params.hpp — grid parameters: declared by each study with a full and a
/// --quick default, overridable as `--NAME v1,v2,...`, checked (ranges, allowed names;
/// scheme names resolve in the scheme registry and are recorded canonical), and the
/// resolved grid of one run (config).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <kvq/kv/registry.hpp>
#include <kvq/study/error.hpp>
#include <kvq/study/json.hpp>

namespace kvq::study {

// ---------------------------------------------------------------------------
/// Kind of value a grid parameter takes: `int_list` (integers, parse_int: k/m suffixes
/// allowed), `real_list` (finite doubles, parse_real), `name_list` (names from
/// param::allowed or the scheme registry, no repeats) take a comma-separated list
/// (`--NAME v1,v2,...`); `integer` and `real` take exactly one value.
enum class param_kind { int_list, real_list, name_list, integer, real };

/// A grid parameter as a study declares it: declared with a full and a --quick default,
/// and overridable on the command line as `--NAME v1,v2,...` (checked by config::assign).
struct param {
  std::string name;                  ///< command-line spelling without "--"
  param_kind kind;                   ///< kind of value(s) it takes
  std::string full_default;          ///< default value text, comma-separated
  std::string quick_default;         ///< --quick default, comma-separated (empty = same as full)
  std::string help;                  ///< one-line help text, also quoted in parse errors
  std::vector<std::string> allowed;  ///< name lists: the allowed names
  double min_value = -1e300;         ///< numeric kinds: smallest allowed value (inclusive)
  double max_value = 1e300;          ///< numeric kinds: largest allowed value (inclusive)
  /// Noun used in errors, e.g. "context length". Name lists of what "scheme" or "path"
  /// also accept every name and alias of the scheme registry (kvq::kv::canonical_name)
  /// and record the canonical name.
  std::string what;
};

/// Parses a decimal integer with an optional k/m (or K/M) suffix: 1k = 1024 and
/// 1m = 1024*1024 (binary, as context lengths in tokens are written).
/// \param s   the text, with no surrounding space
/// \param out receives the value; left unchanged on failure
/// \return false for empty text, trailing characters, or a value whose magnitude
///         exceeds about 2^40 after the multiplier (nothing is thrown)
inline bool parse_int(const std::string& s, long long& out) {
  if (s.empty()) return false;
  std::string body = s;
  long long mult = 1;
  char last = body.back();
  if (last == 'k' || last == 'K') {
    mult = 1024;
    body.pop_back();
  } else if (last == 'm' || last == 'M') {
    mult = 1024 * 1024;
    body.pop_back();
  }
  if (body.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(body.c_str(), &end, 10);
  if (errno != 0 || end == body.c_str() || *end != '\0') return false;
  if (v > (1LL << 40) / mult || v < -(1LL << 40) / mult) return false;
  out = v * mult;
  return true;
}

/// Parses a finite double (std::strtod syntax, the whole text must be consumed).
///
/// strtod sets ERANGE on overflow and also on any result in the subnormal range (glibc
/// does so even for exact ones), so ERANGE alone does not make a text bad: a subnormal
/// result such as 1e-320 is a valid number and is accepted (a grid value that small acts
/// as 0 wherever the study converts it to float, as any value below float's range
/// does); an overflow (inf), "inf"/"nan", or a nonzero text that rounds to 0 is refused.
/// \param s   the text
/// \param out receives the value; left unchanged on failure
/// \return whether the text was accepted (nothing is thrown)
inline bool parse_real(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  const int e = errno;
  if (end == s.c_str() || *end != '\0' || !std::isfinite(v)) return false;
  if (e == ERANGE && v == 0.0) return false;  // below the smallest subnormal: not representable
  if (e != 0 && e != ERANGE) return false;
  out = v;
  return true;
}

/// The resolved grid of one run: the value(s) of each parameter, in the order they
/// were assigned, plus the run's seed and --quick flag.
///
/// The accessors take the parameter's name (param::name) and throw std::logic_error if
/// no parameter of that name was assigned (a study asking for a parameter it did not
/// declare is a bug, not a usage error). Asking with the wrong kind's accessor returns
/// an empty list (or, for integer()/real(), throws std::out_of_range).
class config {
 public:
  /// Values of an int_list (or integer) parameter.
  const std::vector<long long>& ints(const std::string& n) const { return get(n).i; }
  /// Values of a real_list (or real) parameter.
  const std::vector<double>& reals(const std::string& n) const { return get(n).r; }
  /// Values of a name_list parameter (scheme names canonical).
  const std::vector<std::string>& names(const std::string& n) const { return get(n).s; }
  /// Value of an integer parameter (the first of an int_list).
  long long integer(const std::string& n) const { return get(n).i.at(0); }
  /// Value of a real parameter (the first of a real_list).
  double real(const std::string& n) const { return get(n).r.at(0); }

  std::uint64_t seed = 0;  ///< the run's random seed
  bool quick = false;      ///< whether the run uses the --quick defaults

  /// The grid as a JSON object, one key per parameter in assignment order: lists as
  /// arrays, integer/real kinds as a single number. Seed and quick are not included.
  json to_json() const {
    json j = json::object();
    for (const auto& e : entries_) {
      const param& p = e.second.p;
      switch (p.kind) {
        case param_kind::int_list: j[p.name] = e.second.i; break;
        case param_kind::real_list: j[p.name] = e.second.r; break;
        case param_kind::name_list: j[p.name] = e.second.s; break;
        case param_kind::integer: j[p.name] = e.second.i.at(0); break;
        case param_kind::real: j[p.name] = e.second.r.at(0); break;
      }
    }
    return j;
  }
  /// "contexts=1k,4k magnitudes=..." — the grid in one line for terminal headers
  /// (each value as the text it was given, not re-formatted).
  std::string describe() const {
    std::vector<std::string> parts;
    for (const auto& e : entries_) parts.push_back(e.second.p.name + "=" + e.second.text);
    return join(parts, " ");
  }

  /// Parses and checks one parameter's value text (already split from argv) and sets
  /// it, replacing an earlier value of the same parameter.
  /// \param p    the declared parameter
  /// \param text comma-separated for list kinds, exactly one value otherwise
  /// \throws usage_error for a wrong value count, an empty item, a text that does not
  ///         parse, a number outside [p.min_value, p.max_value], an unknown name, or a
  ///         name given twice; the message names the option and the bad item
  void assign(const param& p, const std::string& text) {
    entry e{p, text, {}, {}, {}};
    std::vector<std::string> items = split(text);
    bool list = p.kind == param_kind::int_list || p.kind == param_kind::real_list ||
                p.kind == param_kind::name_list;
    if (!list && items.size() != 1)
      throw usage_error("--" + p.name + " takes one value, got '" + text + "'");
    for (const auto& it : items) {
      if (it.empty())
        throw usage_error("--" + p.name + ": empty value in '" + text + "'");
      switch (p.kind) {
        case param_kind::int_list:
        case param_kind::integer: {
          long long v;
          if (!parse_int(it, v))
            throw usage_error("--" + p.name + ": '" + it + "' is not an integer (" + p.help + ")");
          if (static_cast<double>(v) < p.min_value || static_cast<double>(v) > p.max_value)
            throw usage_error("--" + p.name + ": " + it + " is not a valid " + p.what + " (allowed: " +
                              range_text(p) + ")");
          e.i.push_back(v);
          break;
        }
        case param_kind::real_list:
        case param_kind::real: {
          double v;
          if (!parse_real(it, v))
            throw usage_error("--" + p.name + ": '" + it + "' is not a number (" + p.help + ")");
          if (v < p.min_value || v > p.max_value)
            throw usage_error("--" + p.name + ": " + it + " is not a valid " + p.what + " (allowed: " +
                              range_text(p) + ")");
          e.r.push_back(v);
          break;
        }
        case param_kind::name_list: {
          std::string name = it;
          const bool listed = std::find(p.allowed.begin(), p.allowed.end(), it) != p.allowed.end();
          if (!listed && (p.what == "scheme" || p.what == "path")) {
            // An alias, or a scheme a user registered after the study was defined.
            try {
              name = kvq::kv::canonical_name(it);
            } catch (const std::invalid_argument&) {
              throw usage_error("--" + p.name + ": unknown " + p.what + " '" + it +
                                "' (allowed: " + join(p.allowed) + ", or a scheme registered with "
                                "kvq::kv::register_scheme)");
            }
          } else if (!listed) {
            throw usage_error("--" + p.name + ": unknown " + p.what + " '" + it +
                              "' (allowed: " + join(p.allowed) + ")");
          }
          if (std::find(e.s.begin(), e.s.end(), name) != e.s.end())
            throw usage_error("--" + p.name + ": " + p.what + " '" + it + "' given twice");
          e.s.push_back(name);
          break;
        }
      }
    }
    for (auto& x : entries_)
      if (x.first == p.name) {
        x.second = e;
        return;
      }
    entries_.emplace_back(p.name, e);
  }

  /// The allowed range of a numeric parameter as text for error messages: "A to B",
  /// ">= A", "<= B", or "any" (bounds at the ±1e300 defaults count as absent); integer
  /// kinds print the bounds with no fraction, real kinds with %g.
  static std::string range_text(const param& p) {
    auto fmt = [&](double v) {
      char b[40];
      if (p.kind == param_kind::int_list || p.kind == param_kind::integer)
        std::snprintf(b, sizeof b, "%.0f", v);
      else
        std::snprintf(b, sizeof b, "%g", v);
      return std::string(b);
    };
    bool lo = p.min_value > -1e299, hi = p.max_value < 1e299;
    if (lo && hi) return fmt(p.min_value) + " to " + fmt(p.max_value);
    if (lo) return ">= " + fmt(p.min_value);
    if (hi) return "<= " + fmt(p.max_value);
    return "any";
  }

 private:
  struct entry {
    param p;
    std::string text;
    std::vector<long long> i;
    std::vector<double> r;
    std::vector<std::string> s;
  };
  const entry& get(const std::string& n) const {
    for (const auto& e : entries_)
      if (e.first == n) return e.second;
    throw std::logic_error("study parameter not declared: " + n);
  }
  std::vector<std::pair<std::string, entry>> entries_;
};


}  // namespace kvq::study
