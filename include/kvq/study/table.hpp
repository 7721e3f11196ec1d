// kvq/study/table.hpp — result tables: cells, columns, the CSV text (10 significant
// digits: deterministic text of deterministic bits) and the terminal table.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <kvq/study/json.hpp>

namespace kvq::study {

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

}  // namespace kvq::study
