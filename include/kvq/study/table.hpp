/// \file
/// kvq/study/table.hpp — result tables: cells, columns, the CSV text (10 significant
/// digits: deterministic text of deterministic bits) and the terminal table.
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
/// One table cell: an integer, a real or a text.
struct cell {
  /// \enum kind
  /// Which of i, d and s holds the value.
  /// \var k
  /// The kind of this cell.
  enum class kind { integer, real, text } k = kind::text;
  /// The value of an integer cell.
  long long i = 0;
  /// The value of a real cell.
  double d = 0;
  /// The value of a text cell.
  std::string s;
  /// An empty text cell.
  cell() = default;
  /// Integer cell.
  cell(int v) : k(kind::integer), i(v) {}
  /// Integer cell.
  cell(long v) : k(kind::integer), i(v) {}
  /// Integer cell.
  cell(long long v) : k(kind::integer), i(v) {}
  /// Integer cell.
  cell(unsigned v) : k(kind::integer), i(static_cast<long long>(v)) {}
  /// Integer cell (values above 2^63 - 1 wrap).
  cell(unsigned long v) : k(kind::integer), i(static_cast<long long>(v)) {}
  /// Integer cell (values above 2^63 - 1 wrap).
  cell(unsigned long long v) : k(kind::integer), i(static_cast<long long>(v)) {}
  /// Real cell.
  cell(double v) : k(kind::real), d(v) {}
  /// Text cell.
  cell(const char* v) : k(kind::text), s(v) {}
  /// Text cell.
  cell(std::string v) : k(kind::text), s(std::move(v)) {}
};

/// A column of a result table.
struct column {
  /// CSV header.
  std::string name;  // CSV header
  /// One line: meaning and unit.
  std::string help;  // one line: meaning and unit
  /// Shown in the terminal table.
  bool brief = true; // shown in the terminal table
};

/// A result table: written to CSV, and optionally printed in the terminal.
struct table {
  /// File suffix: "" gives \<study\>.csv, otherwise \<study\>_\<name\>.csv.
  std::string name;   // file suffix: "" = <study>.csv, otherwise <study>_<name>.csv
  /// Terminal heading.
  std::string title;  // terminal heading
  /// The columns, in CSV order.
  std::vector<column> columns;
  /// The rows; each has one cell per column.
  std::vector<std::vector<cell>> rows;
  /// Printed in the terminal.
  bool terminal = true;  // printed in the terminal
};

/// Index of a column by name (std::logic_error if absent: a bug in the study).
inline std::size_t column_index(const table& t, const std::string& name) {
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].name == name) return i;
  throw std::logic_error("no column " + name + " in table " + t.title);
}

/// What a study run returns.
struct result {
  /// The tables, the first one written to \<study\>.csv.
  std::vector<table> tables;
  /// Plain-words lines computed from the numbers.
  std::vector<std::string> findings;  // plain-words lines computed from the numbers
  /// Shapes, generator settings, scheme details (written into the JSON).
  json setup = json::object();        // shapes, generator settings, scheme details
};

/// The significant digits of reals in a study's CSV unless --digits says otherwise.
inline constexpr int csv_default_digits = 10;
/// The digits that round-trip every double (printf "%.17g" read back gives the same bits).
inline constexpr int csv_exact_digits = 17;

/// CSV: doubles with `digits` significant digits (10 by default: deterministic text of
/// deterministic bits; 17 writes every double so that it reads back to the same bits,
/// which is what the cross-build tests compare).
inline std::string csv_cell(const cell& c, int digits = csv_default_digits) {
  switch (c.k) {
    case cell::kind::integer: return std::to_string(c.i);
    case cell::kind::real: {
      if (std::isnan(c.d)) return "nan";
      if (std::isinf(c.d)) return c.d > 0 ? "inf" : "-inf";
      char b[40];
      std::snprintf(b, sizeof b, "%.*g", digits, c.d);
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

/// The CSV text of t: the header line, then one line per row (cells by csv_cell() with
/// `digits` significant digits for reals).
inline std::string to_csv(const table& t, int digits = csv_default_digits) {
  std::string out;
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    if (i) out += ',';
    out += t.columns[i].name;
  }
  out += '\n';
  for (const auto& r : t.rows) {
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (i) out += ',';
      out += csv_cell(r[i], digits);
    }
    out += '\n';
  }
  return out;
}

/// A cell as the terminal table shows it (integers in full, reals with about five
/// significant digits).
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

/// Prints the brief columns of t to f as an aligned table under its title (numbers
/// right-aligned).
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
