// studies/harness.hpp — the small machinery every kvq study shares: declared grid
// parameters with defaults and checked overrides, result tables, a deterministic
// multi-threaded task runner, progress on a terminal, and CSV / JSON / terminal output.
//
// Determinism contract: a study splits its grid into independent tasks; each task is
// a pure function of (its grid cell, the seed) and writes into its own pre-sized slot.
// Threads only decide *when* a task runs, never *what* it computes, and aggregation
// happens afterwards in a fixed order. The CSV is therefore byte-identical for any
// --threads value.
//
// Bad input (unknown names, impossible grids) raises kvq::study::usage_error, whose
// message is one line naming the problem and the allowed values; the kvq command
// prints it and exits with status 2 before anything is written.
#pragma once

#include <kvq/config.hpp>
#include <kvq/kv/registry.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(_WIN32)
#include <io.h>
#define KVQ_STUDY_ISATTY(fd) _isatty(fd)
#else
#include <unistd.h>
#define KVQ_STUDY_ISATTY(fd) isatty(fd)
#endif

namespace kvq::study {

// One-line error caused by the caller's input (exit status 2 in the kvq command).
struct usage_error : std::runtime_error {
  explicit usage_error(const std::string& m) : std::runtime_error(m) {}
};

inline std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string r;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) r += sep;
    r += v[i];
  }
  return r;
}

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

// ---------------------------------------------------------------------------
// JSON value (insertion-ordered objects) — enough to write a study's configuration.
class json {
 public:
  enum class type { null, boolean, number, integer, string, array, object };
  json() = default;
  json(std::nullptr_t) {}
  json(bool b) : t_(type::boolean), b_(b) {}
  json(double d) : t_(type::number), d_(d) {}
  json(int i) : t_(type::integer), i_(i) {}
  json(long i) : t_(type::integer), i_(i) {}
  json(long long i) : t_(type::integer), i_(i) {}
  json(unsigned i) : t_(type::integer), i_(static_cast<long long>(i)) {}
  json(unsigned long i) : t_(type::integer), i_(static_cast<long long>(i)) {}
  json(unsigned long long i) : t_(type::integer), i_(static_cast<long long>(i)) {}
  json(const char* s) : t_(type::string), s_(s) {}
  json(std::string s) : t_(type::string), s_(std::move(s)) {}
  template <class T>
  json(const std::vector<T>& v) : t_(type::array) {
    for (const auto& x : v) a_.emplace_back(x);
  }
  static json array() {
    json j;
    j.t_ = type::array;
    return j;
  }
  static json object() {
    json j;
    j.t_ = type::object;
    return j;
  }
  json& push(json v) {
    t_ = type::array;
    a_.push_back(std::move(v));
    return *this;
  }
  json& set(const std::string& k, json v) {
    t_ = type::object;
    for (auto& kv : o_)
      if (kv.first == k) {
        kv.second = std::move(v);
        return *this;
      }
    o_.emplace_back(k, std::move(v));
    return *this;
  }
  json& operator[](const std::string& k) {
    t_ = type::object;
    for (auto& kv : o_)
      if (kv.first == k) return kv.second;
    o_.emplace_back(k, json());
    return o_.back().second;
  }
  std::string dump(int indent = 2) const {
    std::string out;
    write(out, indent, 0);
    return out;
  }

  static std::string quote(const std::string& s) {
    std::string r = "\"";
    for (unsigned char c : s) {
      switch (c) {
        case '"': r += "\\\""; break;
        case '\\': r += "\\\\"; break;
        case '\n': r += "\\n"; break;
        case '\t': r += "\\t"; break;
        case '\r': r += "\\r"; break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            r += buf;
          } else {
            r += static_cast<char>(c);
          }
      }
    }
    return r + "\"";
  }

 private:
  void write(std::string& out, int indent, int depth) const {
    auto nl = [&](int d) {
      if (indent <= 0) return;
      out += '\n';
      out.append(static_cast<std::size_t>(d * indent), ' ');
    };
    switch (t_) {
      case type::null: out += "null"; break;
      case type::boolean: out += b_ ? "true" : "false"; break;
      case type::integer: out += std::to_string(i_); break;
      case type::number: {
        if (!std::isfinite(d_)) {
          out += "null";
          break;
        }
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", d_);
        out += buf;
        break;
      }
      case type::string: out += quote(s_); break;
      case type::array: {
        // Short arrays of scalars stay on one line.
        bool flat = a_.size() <= 16 && std::all_of(a_.begin(), a_.end(), [](const json& x) {
                      return x.t_ != type::array && x.t_ != type::object;
                    });
        out += '[';
        for (std::size_t i = 0; i < a_.size(); ++i) {
          if (i) out += flat ? ", " : ",";
          if (!flat) nl(depth + 1);
          a_[i].write(out, indent, depth + 1);
        }
        if (!flat && !a_.empty()) nl(depth);
        out += ']';
        break;
      }
      case type::object: {
        out += '{';
        for (std::size_t i = 0; i < o_.size(); ++i) {
          if (i) out += ',';
          nl(depth + 1);
          out += quote(o_[i].first);
          out += ": ";
          o_[i].second.write(out, indent, depth + 1);
        }
        if (!o_.empty()) nl(depth);
        out += '}';
        break;
      }
    }
  }
  type t_ = type::null;
  bool b_ = false;
  double d_ = 0;
  long long i_ = 0;
  std::string s_;
  std::vector<json> a_;
  std::vector<std::pair<std::string, json>> o_;
};

// ---------------------------------------------------------------------------
// Grid parameters: declared by each study with a full and a --quick default, and
// overridable on the command line as `--NAME v1,v2,...`.
enum class param_kind { int_list, real_list, name_list, integer, real };

struct param {
  std::string name;                  // command-line spelling without "--"
  param_kind kind;
  std::string full_default;          // comma-separated
  std::string quick_default;         // comma-separated (empty = same as full)
  std::string help;
  std::vector<std::string> allowed;  // name lists: the allowed names
  double min_value = -1e300;         // numeric lists: smallest allowed value
  double max_value = 1e300;
  std::string what;                  // noun used in errors, e.g. "context length"; name lists
                                     // of what "scheme" or "path" also accept every name and alias
                                     // of the scheme registry and record the canonical name
};

// Integers accept a k/m suffix (1k = 1024 tokens, as context lengths are written).
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

inline bool parse_real(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end == s.c_str() || *end != '\0' || !std::isfinite(v)) return false;
  out = v;
  return true;
}

// The resolved grid of one run.
class config {
 public:
  const std::vector<long long>& ints(const std::string& n) const { return get(n).i; }
  const std::vector<double>& reals(const std::string& n) const { return get(n).r; }
  const std::vector<std::string>& names(const std::string& n) const { return get(n).s; }
  long long integer(const std::string& n) const { return get(n).i.at(0); }
  double real(const std::string& n) const { return get(n).r.at(0); }

  std::uint64_t seed = 0;
  bool quick = false;

  // The grid as JSON, in declaration order.
  json to_json() const {
    json j = json::object();
    for (const auto& e : entries_) {
      const param& p = e.second.p;
      switch (p.kind) {
        case param_kind::int_list: j.set(p.name, json(e.second.i)); break;
        case param_kind::real_list: j.set(p.name, json(e.second.r)); break;
        case param_kind::name_list: j.set(p.name, json(e.second.s)); break;
        case param_kind::integer: j.set(p.name, json(e.second.i.at(0))); break;
        case param_kind::real: j.set(p.name, json(e.second.r.at(0))); break;
      }
    }
    return j;
  }
  // "contexts=1k,4k magnitudes=..." — the grid in one line for terminal headers.
  std::string describe() const {
    std::vector<std::string> parts;
    for (const auto& e : entries_) parts.push_back(e.second.p.name + "=" + e.second.text);
    return join(parts, " ");
  }

  // Parse one parameter value (already split from argv); throws usage_error.
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

// ---------------------------------------------------------------------------
// Result tables.
struct cell {
  enum class kind { integer, real, text } k = kind::text;
  long long i = 0;
  double d = 0;
  std::string s;
  cell() = default;
  cell(int v) : k(kind::integer), i(v) {}
  cell(long v) : k(kind::integer), i(v) {}
  cell(long long v) : k(kind::integer), i(v) {}
  cell(unsigned v) : k(kind::integer), i(static_cast<long long>(v)) {}
  cell(unsigned long v) : k(kind::integer), i(static_cast<long long>(v)) {}
  cell(unsigned long long v) : k(kind::integer), i(static_cast<long long>(v)) {}
  cell(double v) : k(kind::real), d(v) {}
  cell(const char* v) : k(kind::text), s(v) {}
  cell(std::string v) : k(kind::text), s(std::move(v)) {}
};

struct column {
  std::string name;  // CSV header
  std::string help;  // one line: meaning and unit
  bool brief = true; // shown in the terminal table
};

struct table {
  std::string name;   // file suffix: "" = <study>.csv, otherwise <study>_<name>.csv
  std::string title;  // terminal heading
  std::vector<column> columns;
  std::vector<std::vector<cell>> rows;
  bool terminal = true;  // printed in the terminal
};

// Index of a column by name (std::logic_error if absent: a bug in the study).
inline std::size_t column_index(const table& t, const std::string& name) {
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].name == name) return i;
  throw std::logic_error("no column " + name + " in table " + t.title);
}

struct result {
  std::vector<table> tables;
  std::vector<std::string> findings;  // plain-words lines computed from the numbers
  json setup = json::object();        // shapes, generator settings, scheme details
};

// CSV: doubles with 10 significant digits — deterministic text of deterministic bits.
inline std::string csv_cell(const cell& c) {
  switch (c.k) {
    case cell::kind::integer: return std::to_string(c.i);
    case cell::kind::real: {
      if (std::isnan(c.d)) return "nan";
      if (std::isinf(c.d)) return c.d > 0 ? "inf" : "-inf";
      char b[40];
      std::snprintf(b, sizeof b, "%.10g", c.d);
      return b;
    }
    case cell::kind::text: {
      bool q = c.s.find_first_of(",\"\n") != std::string::npos;
      if (!q) return c.s;
      std::string r = "\"";
      for (char ch : c.s) r += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      return r + "\"";
    }
  }
  return {};
}

inline std::string to_csv(const table& t) {
  std::string out;
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    if (i) out += ',';
    out += t.columns[i].name;
  }
  out += '\n';
  for (const auto& r : t.rows) {
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (i) out += ',';
      out += csv_cell(r[i]);
    }
    out += '\n';
  }
  return out;
}

inline std::string term_cell(const cell& c) {
  switch (c.k) {
    case cell::kind::integer: return std::to_string(c.i);
    case cell::kind::real: {
      if (std::isnan(c.d)) return "nan";
      char b[40];
      double a = std::fabs(c.d);
      if (c.d == 0)
        return "0";
      else if (a < 1e7 && c.d == std::floor(c.d))
        std::snprintf(b, sizeof b, "%.0f", c.d);
      else if (a >= 1e-3 && a < 1e5)
        std::snprintf(b, sizeof b, "%.5g", c.d);
      else
        std::snprintf(b, sizeof b, "%.3e", c.d);
      return b;
    }
    case cell::kind::text: return c.s;
  }
  return {};
}

inline void print_table(const table& t, std::FILE* f) {
  std::vector<std::size_t> show;
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].brief) show.push_back(i);
  std::vector<std::size_t> w(show.size());
  std::vector<std::vector<std::string>> txt;
  for (std::size_t j = 0; j < show.size(); ++j) w[j] = t.columns[show[j]].name.size();
  for (const auto& r : t.rows) {
    std::vector<std::string> line;
    for (std::size_t j = 0; j < show.size(); ++j) {
      line.push_back(term_cell(r[show[j]]));
      w[j] = std::max(w[j], line.back().size());
    }
    txt.push_back(std::move(line));
  }
  if (!t.title.empty()) std::fprintf(f, "\n%s\n", t.title.c_str());
  auto row = [&](const std::vector<std::string>& cells, bool header) {
    for (std::size_t j = 0; j < cells.size(); ++j) {
      bool num = !header && !t.rows.empty() && t.rows[0][show[j]].k != cell::kind::text;
      std::string pad(w[j] - std::min(w[j], cells[j].size()), ' ');
      std::string text = "  " + (num ? pad + cells[j] : cells[j] + (j + 1 < cells.size() ? pad : ""));
      std::fputs(text.c_str(), f);
    }
    std::fputs("\n", f);
  };
  std::vector<std::string> head;
  for (auto i : show) head.push_back(t.columns[i].name);
  row(head, true);
  std::size_t total = 0;
  for (auto x : w) total += x + 2;
  std::fprintf(f, "  %s\n", std::string(total > 2 ? total - 2 : 0, '-').c_str());
  for (const auto& l : txt) row(l, false);
}

// ---------------------------------------------------------------------------
// Progress on stderr, only when stderr is a terminal (never pollutes pipes or logs).
class progress {
 public:
  progress(std::string label, bool enabled) : label_(std::move(label)), on_(enabled) {
    t0_ = std::chrono::steady_clock::now();
  }
  static bool stderr_is_terminal() { return KVQ_STUDY_ISATTY(2) != 0; }
  // A study with several phases announces the whole work first; otherwise each
  // run_tasks call restarts the bar with its own total.
  void plan(double work) {
    total_ = work;
    done_ = 0;
    planned_ = true;
  }
  bool planned() const { return planned_; }
  void set_total(double work) {
    total_ = work;
    done_ = 0;
  }
  void advance(double work) {
    if (!on_) return;
    std::lock_guard<std::mutex> lock(m_);
    done_ += work;
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(200) && done_ < total_) return;
    last_ = now;
    double secs = std::chrono::duration<double>(now - t0_).count();
    double frac = total_ > 0 ? std::min(1.0, done_ / total_) : 1.0;
    std::fprintf(stderr, "\r\033[K[%s] %5.1f%%  %.1f s", label_.c_str(), 100 * frac, secs);
    if (frac > 0.02 && frac < 1) std::fprintf(stderr, "  (~%.0f s left)", secs / frac - secs);
    std::fflush(stderr);
  }
  void finish() {
    if (!on_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }

 private:
  std::string label_;
  bool on_;
  bool planned_ = false;
  double total_ = 0, done_ = 0;
  std::mutex m_;
  std::chrono::steady_clock::time_point t0_, last_{};
};

// ---------------------------------------------------------------------------
// Deterministic task runner. Task i may run on any thread, in any order; it must
// write only to its own slot. Tasks are started largest-cost first so that long
// contexts do not end up last on one core.
inline unsigned default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

template <class Fn>
void run_tasks(std::size_t n, const std::vector<double>& cost, unsigned threads, progress* prog, Fn&& fn) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (cost.size() == n)
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
  if (prog && !prog->planned()) {
    double tot = 0;
    for (std::size_t i = 0; i < n; ++i) tot += cost.size() == n ? cost[i] : 1.0;
    prog->set_total(tot);
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr err;
  std::mutex err_m;
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (;;) {
      std::size_t k = next.fetch_add(1);
      if (k >= n || failed.load()) return;
      std::size_t i = order[k];
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(err_m);
        if (!err) err = std::current_exception();
        failed = true;
        return;
      }
      if (prog) prog->advance(cost.size() == n ? cost[i] : 1.0);
    }
  };
  unsigned t = std::max(1u, std::min<unsigned>(threads ? threads : default_threads(),
                                               static_cast<unsigned>(std::max<std::size_t>(n, 1))));
  if (t == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(t);
    for (unsigned k = 0; k < t; ++k) pool.emplace_back(worker);
    for (auto& th : pool) th.join();
  }
  if (err) std::rethrow_exception(err);
}

// What a study gets to run: the resolved grid and the execution resources.
struct context {
  const config& cfg;
  unsigned threads;
  progress* prog;
};

// A study: name, one-line summary, longer description, declared parameters, an
// extra grid check (may throw usage_error), and the run.
struct study_def {
  std::string name;
  std::string summary;
  std::string description;
  std::vector<param> params;
  std::vector<table> outputs;  // the tables it writes (columns only): the stated CSV schema
  std::function<void(const config&)> validate;
  std::function<result(const context&)> run;
};

// Resolve defaults (+ --quick) and overrides into a config; throws usage_error.
inline config resolve(const study_def& s, bool quick, std::uint64_t seed,
                      const std::vector<std::pair<std::string, std::string>>& overrides) {
  config c;
  c.seed = seed;
  c.quick = quick;
  for (const auto& p : s.params)
    c.assign(p, quick && !p.quick_default.empty() ? p.quick_default : p.full_default);
  for (const auto& o : overrides) {
    auto it = std::find_if(s.params.begin(), s.params.end(), [&](const param& p) { return p.name == o.first; });
    if (it == s.params.end()) {
      std::vector<std::string> names;
      for (const auto& p : s.params) names.push_back("--" + p.name);
      throw usage_error("study " + s.name + ": unknown option '--" + o.first + "' (grid options: " +
                        join(names) + ")");
    }
    c.assign(*it, o.second);
  }
  if (s.validate) s.validate(c);
  return c;
}

// ---------------------------------------------------------------------------
// Files: written to a temporary name in the target directory, then renamed, so a
// reader never sees a half-written file and a failed run leaves nothing behind.
inline void write_file_atomic(const std::string& path, const std::string& data) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write " + tmp);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    f.flush();
    if (!f) {
      f.close();
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot write " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename " + tmp + " to " + path);
  }
}

// Standalone-program helper: run a study with its defaults (or --quick) and print it.
inline int run_standalone(const study_def& s, int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: %s [--quick]   (the full option set is in `kvq study %s --help`)\n",
                   argv[0], s.name.c_str());
      return 2;
    }
  }
  config cfg = resolve(s, quick, 1, {});
  progress prog(s.name, progress::stderr_is_terminal());
  context ctx{cfg, default_threads(), &prog};
  std::printf("kvq %s study %s — seed %llu, %s\n", KVQ_VERSION_STRING, s.name.c_str(),
              static_cast<unsigned long long>(cfg.seed), cfg.describe().c_str());
  result r = s.run(ctx);
  prog.finish();
  for (const auto& t : r.tables)
    if (t.terminal) print_table(t, stdout);
  if (!r.findings.empty()) std::printf("\n");
  for (const auto& f : r.findings) std::printf("  * %s\n", f.c_str());
  return 0;
}

}  // namespace kvq::study
