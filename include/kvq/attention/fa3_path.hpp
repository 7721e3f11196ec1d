/// \file
/// kvq/attention/fa3_path.hpp — the names of FlashAttention-3 FP8 accumulation paths, one
/// vocabulary for the accumulation study, kvq.fa3_fp8_attention and the model study:
///
/// ~~~
///   ideal_fp32        q.k and P8.V in kvq's fixed fp32 tree (exact FP8 products, one
///                     rounding per addition): what FA3 would compute with an exact fp32
///                     accumulator
///   sm90              Hopper's fp8 tensor core (kvq::mma preset sm_90: 32 products per
///                     step, 13 fraction bits, truncation), every step chained, never
///                     promoted: FA3 as released
///   sm90_promote_N    the same, with P.V added into an fp32 accumulator every N steps of
///                     32 tokens (flash-attention PRs #2250/#2323, vLLM flash-attention
///                     #104/#122: two-level accumulation); N >= 1
/// ~~~
///
/// q.k is never promoted on these paths: with head_dim <= 256 it takes at most 8 steps,
/// and FA3's fix concerns P.V, whose step count grows with the context.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <kvq/attention/variants.hpp>

namespace kvq {
namespace attention {

/// One accumulation path: tensor_core false is ideal_fp32; promote 0 is never.
struct fa3_path {
  bool tensor_core = false;  ///< false: ideal_fp32; true: the sm_90 fp8 tensor-core model
  std::size_t promote = 0;   ///< P.V promoted to fp32 every `promote` steps of 32 tokens (0: never)
};

/// Parses a path name (the list above) into p; false for anything else (p unchanged).
/// N is a decimal count from 1 to 1,000,000 without sign or leading zeros.
inline bool parse_fa3_path(const std::string& s, fa3_path& p) {
  if (s == "ideal_fp32") {
    p = {false, 0};
    return true;
  }
  if (s == "sm90") {
    p = {true, 0};
    return true;
  }
  const std::string pre = "sm90_promote_";
  if (s.compare(0, pre.size(), pre) != 0 || s.size() == pre.size() || s.size() > pre.size() + 7) return false;
  if (s[pre.size()] == '0') return false;
  std::size_t v = 0;
  for (std::size_t i = pre.size(); i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + static_cast<std::size_t>(s[i] - '0');
  }
  if (v > 1000000) return false;
  p = {true, v};
  return true;
}

/// The canonical name of p (parse_fa3_path's inverse).
inline std::string fa3_path_name(const fa3_path& p) {
  if (!p.tensor_core) return "ideal_fp32";
  if (p.promote == 0) return "sm90";
  return "sm90_promote_" + std::to_string(p.promote);
}

/// The paths the studies offer by default (any sm90_promote_N parses).
inline const std::vector<std::string>& fa3_path_names() {
  static const std::vector<std::string> v = {"ideal_fp32",     "sm90",           "sm90_promote_1", "sm90_promote_4",
                                             "sm90_promote_7", "sm90_promote_16", "sm90_promote_64"};
  return v;
}

/// Sets o's accumulation model to path p on the sm_90 fp8 preset (the other options are
/// left as they are).
inline void apply_fa3_path(const fa3_path& p, fa3_options& o) {
  if (!p.tensor_core) {
    o.accumulation = fa3_accumulation::ideal_fp32;
    o.pv_promote_every = 0;
    return;
  }
  o.accumulation = fa3_accumulation::tensor_core;
  o.mma_arch = kvq::mma::arch::sm_90;
  o.pv_promote_every = p.promote;
  o.qk_promote_every = 0;
}

}  // namespace attention
}  // namespace kvq
