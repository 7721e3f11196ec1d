// The small kvq subcommands: formats, memory, verify.
#pragma once

#include <kvq/study.hpp>

#include <kvq/format.hpp>
#include <kvq/format/info.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace kvq::cli {

using kvq::study::usage_error;

// ---------------------------------------------------------------------------
// kvq formats — one row per emulated format, from kvq::all_format_infos() (numbers
// computed from the traits and the encoder, so the table cannot disagree with the code).
namespace detail {
inline const char* format_role(const std::string& name) {
  if (name == "e4m3") return "FP8 KV (vLLM fp8), MXFP8, FP8 attention";
  if (name == "e5m2") return "FP8 KV (vLLM fp8_e5m2), MXFP8";
  if (name == "e3m2" || name == "e2m3") return "MXFP6 elements";
  if (name == "e2m1") return "NVFP4 / MXFP4 elements";
  if (name == "ue8m0") return "MX block scale (power of two)";
  if (name == "ue4m3") return "NVFP4 block scale (16 elements)";
  if (name == "e4m3fnuz" || name == "e5m2fnuz") return "FP8 on AMD MI300";
  if (name == "e4m3b11fnuz") return "FP8 with bias 11 (TPU, ml_dtypes)";
  return "";
}
}  // namespace detail

inline kvq::study::table formats_table() {
  using namespace kvq::study;
  table t;
  t.title = "Number formats emulated by kvq";
  t.columns = {{"format", "name"},
               {"s-e-m", "sign-exponent-mantissa bit widths"},
               {"bias", "exponent bias"},
               {"max_finite", "largest finite magnitude"},
               {"min_normal", "smallest normal magnitude"},
               {"min_subnormal", "smallest positive magnitude"},
               {"specials", "special-value encoding"},
               {"float_nan", "what a float NaN encodes to", false},
               {"inf_satfinite", "-Inf with satfinite", false},
               {"inf_nosat", "-Inf with nosat", false},
               {"overflow_nosat", "3e38 with nosat", false},
               {"neg_zero", "what -0 encodes to", false},
               {"used_for", "where it appears in KV caches"}};
  for (const auto& i : kvq::all_format_infos()) {
    std::string sem = std::to_string(i.sign_bits) + "-" + std::to_string(i.exponent_bits) + "-" +
                      std::to_string(i.mantissa_bits);
    t.rows.push_back({std::string(i.name), sem, i.bias, i.max_finite, i.min_normal, i.min_subnormal,
                      std::string(i.specials), i.nan_float, i.inf_sat, i.inf_nosat, i.overflow_nosat, i.neg_zero,
                      std::string(detail::format_role(i.name))});
  }
  return t;
}

inline int cmd_formats(const std::vector<std::string>& args) {
  bool csv = false;
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(
          "usage: kvq formats [--csv | --markdown]\n\n"
          "Lists the minifloat formats kvq emulates bit-exactly: bit layout, bias, range,\n"
          "special values, what NaN/Inf/overflow/-0 encode to, and where each format appears\n"
          "in KV caches. Every number is computed from the format traits and the encoder.\n\n"
          "  --csv        CSV with every column (edge cases included)\n"
          "  --markdown   the Markdown table of docs/formats.md\n",
          stdout);
      return 0;
    }
    if (a == "--csv") {
      csv = true;
    } else if (a == "--markdown") {
      std::fputs(kvq::format_table_markdown().c_str(), stdout);
      return 0;
    } else {
      throw usage_error("formats: unknown option '" + a + "' (allowed: --csv, --markdown, --help)");
    }
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
// kvq cost — prefill time with a quantized KV cache (cost.cpp, kvq/cost/prefill.hpp).
int cmd_cost(const std::vector<std::string>& args);

// ---------------------------------------------------------------------------
// kvq verify — the npy verifier of the verify layer.
int cmd_verify(const std::vector<std::string>& args, const char* argv0);

}  // namespace kvq::cli
