// kvq._study — the study engine behind `kvq.run_study` and `kvq.studies`.
//
// Bindings only: the studies are the ones the kvq command runs (studies/, the kvq_studies library,
// kvq::study::all_studies()), the grid is resolved by kvq::study::resolve from the same
// option texts the command line gives, and the tables are returned cell by cell, so a
// run here and `kvq study NAME` with the same grid, seed and threads compute the same
// numbers. A separate module from kvq._kvq so the element-format bindings do not wait
// for the studies to compile, and load without them.
//
// Bad input (unknown study or option, a value the grid rejects, a bad --kv file) raises
// ValueError with the study engine's message.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
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

// kv_path empty: synthetic Q/K/V; otherwise the --kv run of the command line, with the
// same checks and grid (kvq/study/cli.hpp: check_kv_overrides, load_kv_input,
// resolve_run_grid).
nb::dict run_study_py(const std::string& name, bool quick, std::uint64_t seed, unsigned threads,
                      const std::vector<std::pair<std::string, std::string>>& overrides, const std::string& kv_path,
                      std::size_t kv_layer, std::size_t kv_head_index, const std::string& kv_rope,
                      bool kv_treatments, bool non_causal) {
  const auto& def = study_named(name);
  kvq::study::config cfg;
  kvq::study::kv_head kv;
  try {
    if (!kv_path.empty()) {
      if (!def.kv.accepted)
        throw kvq::study::usage_error("study " + def.name + " does not take kv (it builds its own Q/K/V; see docs/kv-input.md)");
      kvq::study::kv_request req;
      req.path = kv_path;
      req.layer = kv_layer;
      req.head = kv_head_index;
      if (kv_rope == "post") req.rope = kvq::study::kv_rope::post;
      else if (kv_rope == "pre") req.rope = kvq::study::kv_rope::pre;
      else throw kvq::study::usage_error("kv_rope: unknown value '" + kv_rope + "' (allowed: post, pre)");
      req.treatments = kv_treatments;
      req.causal = !non_causal;
      kvq::study::check_kv_overrides(def, overrides, req.treatments);
      kv = kvq::study::load_kv_input(req);
    }
    cfg = kvq::study::resolve_run_grid(def, quick, seed, overrides, kv_path.empty() ? nullptr : &kv);
  } catch (const kvq::study::usage_error& e) {
    throw nb::value_error(e.what());
  }
  if (threads == 0) threads = kvq::study::default_threads();
  kvq::study::result r;
  {
    // The studies touch no Python object: other Python threads run meanwhile.
    nb::gil_scoped_release release;
    kvq::study::context ctx{cfg, threads, nullptr, nullptr, kv_path.empty() ? nullptr : &kv};
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
        nb::arg("overrides"), nb::arg("kv_path") = "", nb::arg("kv_layer") = 0, nb::arg("kv_head") = 0,
        nb::arg("kv_rope") = "post", nb::arg("kv_treatments") = false, nb::arg("non_causal") = false,
        "Resolve the grid from option texts (name without '--', value as on the command line) and run the study; "
        "kv_path: a captured head as --kv FILE (empty: synthetic Q/K/V). Tables as rows of Python values, setup and "
        "grid as JSON text.");
}
