// The small kvq subcommands: formats, memory, verify.
#pragma once

#include "studies/harness.hpp"

#include <kvq/format.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace kvq::cli {

using kvq::study::usage_error;

// ---------------------------------------------------------------------------
// kvq formats — one row per emulated format, every number read from its traits.
namespace detail {
inline const char* specials_name(kvq::specials s) {
  switch (s) {
    case kvq::specials::ieee: return "ieee (Inf+NaN)";
    case kvq::specials::finite_nan: return "NaN only";
    case kvq::specials::fnuz: return "fnuz (0x80 NaN)";
    case kvq::specials::none: return "none";
  }
  return "?";
}

template <class F>
std::vector<kvq::study::cell> format_row(const char* name, const char* role) {
  using T = kvq::format_of_t<F>;
  std::string layout = std::string(T::is_signed ? "1" : "0") + "-" + std::to_string(T::exponent_bits) + "-" +
                       std::to_string(T::mantissa_bits);
  return {name,
          T::bits,
          layout,
          T::bias,
          specials_name(T::special),
          T::max_finite(),
          T::min_normal(),
          T::min_subnormal(),
          static_cast<long long>(kvq::code_count_v<F>),
          role};
}
}  // namespace detail

inline kvq::study::table formats_table() {
  using namespace kvq::study;
  table t;
  t.title = "Number formats emulated by kvq (values from kvq::fmt traits)";
  t.columns = {{"format", "name"},
               {"bits", "storage bits of one code"},
               {"s-e-m", "sign-exponent-mantissa bit widths"},
               {"bias", "exponent bias"},
               {"specials", "special-value encoding"},
               {"max_finite", "largest finite magnitude"},
               {"min_normal", "smallest normal magnitude"},
               {"min_subnormal", "smallest positive magnitude"},
               {"codes", "number of codes"},
               {"used_for", "where it appears in KV caches"}};
  t.rows.push_back(detail::format_row<kvq::fmt::e4m3>("e4m3", "FP8 KV (vLLM fp8), MXFP8, FA3 FP8 attention"));
  t.rows.push_back(detail::format_row<kvq::fmt::e5m2>("e5m2", "FP8 KV (vLLM fp8_e5m2), MXFP8"));
  t.rows.push_back(detail::format_row<kvq::fmt::e3m2>("e3m2", "MXFP6 elements"));
  t.rows.push_back(detail::format_row<kvq::fmt::e2m3>("e2m3", "MXFP6 elements"));
  t.rows.push_back(detail::format_row<kvq::fmt::e2m1>("e2m1", "NVFP4 / MXFP4 elements"));
  t.rows.push_back(detail::format_row<kvq::fmt::ue8m0>("ue8m0", "MX block scale (power of two)"));
  t.rows.push_back(detail::format_row<kvq::fmt::ue4m3>("ue4m3", "NVFP4 block scale (16 elements)"));
  t.rows.push_back(detail::format_row<kvq::fmt::e4m3fnuz>("e4m3fnuz", "FP8 on AMD MI300"));
  t.rows.push_back(detail::format_row<kvq::fmt::e5m2fnuz>("e5m2fnuz", "FP8 on AMD MI300"));
  return t;
}

inline int cmd_formats(const std::vector<std::string>& args) {
  bool csv = false;
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(
          "usage: kvq formats [--csv]\n\n"
          "Lists the minifloat formats kvq emulates bit-exactly: bit layout, bias, special\n"
          "values, range, and where each appears in KV caches. Every number is read from the\n"
          "format traits (kvq::fmt::*), so the table is the library's own description.\n\n"
          "  --csv   print CSV instead of the aligned table\n",
          stdout);
      return 0;
    }
    if (a == "--csv")
      csv = true;
    else
      throw usage_error("formats: unknown option '" + a + "' (allowed: --csv, --help)");
  }
  auto t = formats_table();
  if (csv)
    std::fputs(kvq::study::to_csv(t).c_str(), stdout);
  else
    kvq::study::print_table(t, stdout);
  return 0;
}

// ---------------------------------------------------------------------------
// kvq memory — filled in by memory.hpp once the planner exists.
int cmd_memory(const std::vector<std::string>& args);

// ---------------------------------------------------------------------------
// kvq verify — the npy verifier of the verify layer.
int cmd_verify(const std::vector<std::string>& args, const char* argv0);

}  // namespace kvq::cli
