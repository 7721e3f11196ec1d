// kvq._study — the study engine behind `kvq.run_study` and `kvq.studies`.
//
// Bindings only: the studies are the ones the kvq command runs (studies/, the kvq_studies library,
// kvq::study::all_studies()), the grid is resolved by kvq::study::resolve from the same
// option texts the command line gives, and the tables are returned cell by cell, so a
// run here and `kvq study NAME` with the same grid, seed and threads compute the same
// numbers. A separate module from kvq._kvq so the element-format bindings do not wait
// for the studies to compile, and load without them.
//
// Bad input (unknown study or option, a value the grid rejects) raises ValueError with
// the study engine's message.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <kvq/study.hpp>
#include "studies.hpp"

namespace nb = nanobind;

namespace {

const kvq::study::study_def& study_named(const std::string& name) {
  if (const auto* d = kvq::study::find_study(name)) return *d;
  std::vector<std::string> names;
  for (const auto& d : kvq::study::all_studies()) names.push_back(d.name);
  throw nb::value_error(("unknown study '" + name + "' (studies: " + kvq::study::join(names) + ")").c_str());
}

const char* kind_name(kvq::study::param_kind k) {
  switch (k) {
    case kvq::study::param_kind::int_list: return "int_list";
    case kvq::study::param_kind::real_list: return "real_list";
    case kvq::study::param_kind::name_list: return "name_list";
    case kvq::study::param_kind::integer: return "integer";
    case kvq::study::param_kind::real: return "real";
  }
  return "?";
}

nb::list studies_py() {
  nb::list out;
  for (const auto& d : kvq::study::all_studies()) {
    nb::list params;
    for (const auto& p : d.params) {
      nb::dict pd;
      pd["name"] = p.name;
      pd["kind"] = kind_name(p.kind);
      pd["default"] = p.full_default;
      pd["quick_default"] = p.quick_default.empty() ? p.full_default : p.quick_default;
      pd["help"] = p.help;
      pd["allowed"] = p.allowed;
      params.append(pd);
    }
    nb::dict sd;
    sd["name"] = d.name;
    sd["summary"] = d.summary;
    sd["description"] = d.description;
    sd["params"] = params;
    out.append(sd);
  }
  return out;
}

// One table as {"name", "title", "columns": [(name, help)], "kinds": [...], "rows": [[cell...]]}
// with cells as Python int / float / str; the Python side builds the arrays.
nb::dict table_py(const kvq::study::table& t) {
  nb::dict td;
  td["name"] = t.name;
  td["title"] = t.title;
  nb::list cols;
  for (const auto& c : t.columns) cols.append(nb::make_tuple(c.name, c.help));
  td["columns"] = cols;
  nb::list rows;
  for (const auto& r : t.rows) {
    nb::list row;
    for (const auto& c : r) {
      switch (c.k) {
        case kvq::study::cell::kind::integer: row.append(nb::int_(c.i)); break;
        case kvq::study::cell::kind::real: row.append(nb::float_(c.d)); break;
        case kvq::study::cell::kind::text: row.append(nb::str(c.s.c_str(), c.s.size())); break;
      }
    }
    rows.append(row);
  }
  td["rows"] = rows;
  return td;
}

nb::dict run_study_py(const std::string& name, bool quick, std::uint64_t seed, unsigned threads,
                      const std::vector<std::pair<std::string, std::string>>& overrides) {
  const auto& def = study_named(name);
  kvq::study::config cfg;
  try {
    cfg = kvq::study::resolve(def, quick, seed, overrides);
  } catch (const kvq::study::usage_error& e) {
    throw nb::value_error(e.what());
  }
  if (threads == 0) threads = kvq::study::default_threads();
  kvq::study::result r;
  {
    // The studies touch no Python object: other Python threads run meanwhile.
    nb::gil_scoped_release release;
    kvq::study::context ctx{cfg, threads, nullptr};
    r = def.run(ctx);
  }
  nb::dict out;
  nb::list tables;
  for (const auto& t : r.tables) tables.append(table_py(t));
  out["tables"] = tables;
  out["findings"] = r.findings;
  out["setup"] = kvq::study::dump_json(r.setup, -1);
  out["grid"] = kvq::study::dump_json(cfg.to_json(), -1);
  out["threads"] = threads;
  return out;
}

}  // namespace

NB_MODULE(_study, m) {
  m.doc() = "The kvq study engine (the studies of the kvq command).";
  m.def("studies", &studies_py, "The studies: name, summary, description and grid parameters (defaults as option text).");
  m.def("run_study", &run_study_py, nb::arg("name"), nb::arg("quick"), nb::arg("seed"), nb::arg("threads"),
        nb::arg("overrides"),
        "Resolve the grid from option texts (name without '--', value as on the command line) and run the study; "
        "tables as rows of Python values, setup and grid as JSON text.");
}
