/// \file
/// kvq/mma/api.hpp — checked host entry points: names for the presets, and inner products
/// over float arrays whose values must be exactly representable in the input format.
#pragma once

#include <kvq/mma/block_scale.hpp>
#include <kvq/mma/dot.hpp>
#include <kvq/mma/mfma.hpp>
#include <kvq/mma/params.hpp>
#include <kvq/mma/presets.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvq::mma {

/// The architecture's name: "sm_80", "sm_89", "sm_90" or "sm_100".
inline const char* name(arch a) {
  switch (a) {
    case arch::sm_80: return "sm_80";
    case arch::sm_89: return "sm_89";
    case arch::sm_90: return "sm_90";
    case arch::sm_100: return "sm_100";
  }
  return "?";
}
/// The input format's name: "e4m3", "e5m2", "bf16" or "fp16".
inline const char* name(input_format f) {
  switch (f) {
    case input_format::e4m3: return "e4m3";
    case input_format::e5m2: return "e5m2";
    case input_format::bf16: return "bf16";
    case input_format::fp16: return "fp16";
  }
  return "?";
}
/// The output format's name: "fp32" or "fp16".
inline const char* name(output_format f) { return f == output_format::fp32 ? "fp32" : "fp16"; }
/// "recorded" or "inferred".
inline const char* name(exactness e) { return e == exactness::recorded ? "recorded" : "inferred"; }

/// The arch named s (as name() writes it). Throws std::invalid_argument for any other string.
inline arch parse_arch(const std::string& s) {
  if (s == "sm_80") return arch::sm_80;
  if (s == "sm_89") return arch::sm_89;
  if (s == "sm_90") return arch::sm_90;
  if (s == "sm_100") return arch::sm_100;
  throw std::invalid_argument("kvq::mma: unknown arch '" + s + "' (allowed: sm_80, sm_89, sm_90, sm_100)");
}
/// The input format named s ("e4m3"/"E4M3", "e5m2"/"E5M2", "bf16", "fp16"). Throws
/// std::invalid_argument for any other string.
inline input_format parse_input_format(const std::string& s) {
  if (s == "e4m3" || s == "E4M3") return input_format::e4m3;
  if (s == "e5m2" || s == "E5M2") return input_format::e5m2;
  if (s == "bf16") return input_format::bf16;
  if (s == "fp16") return input_format::fp16;
  throw std::invalid_argument("kvq::mma: unknown input format '" + s + "' (allowed: e4m3, e5m2, bf16, fp16)");
}
/// The output format named s ("fp32", "fp16"). Throws std::invalid_argument otherwise.
inline output_format parse_output_format(const std::string& s) {
  if (s == "fp32") return output_format::fp32;
  if (s == "fp16") return output_format::fp16;
  throw std::invalid_argument("kvq::mma: unknown output format '" + s + "' (allowed: fp32, fp16)");
}

/// The preset of (a, in, out) (find_preset). Throws std::invalid_argument when there is
/// none (fp8 on sm_80; fp16 output for inputs other than fp16).
inline preset_info get_preset(arch a, input_format in, output_format out) {
  preset_info p{};
  if (!find_preset(a, in, out, p))
    throw std::invalid_argument(std::string("kvq::mma: no preset for ") + name(a) + " " + name(in) + " -> " +
                                name(out) + " (fp8 needs sm_89 or later; fp16 output needs fp16 input)");
  return p;
}

/// True when x (finite, NaN or Inf) is a value of the format; NaN/Inf count as values of
/// formats that have them (E4M3 has NaN but no Inf).
/// max_sig: the largest significand at max_exp (E4M3 stops at 1.75 x 2^8 = 448, its
/// all-ones code being NaN).
inline bool representable(float x, int mantissa_bits, int min_exp, int max_exp, std::uint64_t max_sig,
                          bool has_inf) {
  if (std::isnan(x)) return true;
  if (std::isinf(x)) return has_inf;
  if (x == 0.0f) return true;
  const detail::decoded d = detail::decode(x, mantissa_bits, min_exp);
  if (d.exp > max_exp || (d.exp == max_exp && d.sig > max_sig)) return false;
  return std::ldexp(static_cast<double>(d.sig), d.lsb_exp) == std::fabs(static_cast<double>(x));
}

/// True when x is a value of input format f (E4M3: finite up to 448, NaN, no Inf).
inline bool representable(float x, input_format f) {
  const input_format_info i = info(f);
  const std::uint64_t all_ones = (std::uint64_t{2} << i.mantissa_bits) - 1;
  if (f == input_format::e4m3) return representable(x, i.mantissa_bits, i.min_exp, i.max_exp, all_ones - 1, false);
  return representable(x, i.mantissa_bits, i.min_exp, i.max_exp, all_ones, true);
}
/// True when x is a value of output format f (fp32: every float; fp16: the binary16 values).
inline bool representable(float x, output_format f) {
  const output_format_info i = info(f);
  return representable(x, i.mantissa_bits, i.min_exp, i.max_exp, (std::uint64_t{2} << i.mantissa_bits) - 1, true);
}

/// d = a · b + c through the preset's block sequence. Throws std::invalid_argument when
/// the sizes differ or an element is not a value of its format.
inline float dot(const preset_info& p, input_format in, const std::vector<float>& a, const std::vector<float>& b,
                 float c) {
  if (a.size() != b.size())
    throw std::invalid_argument("kvq::mma::dot: a has " + std::to_string(a.size()) + " elements, b has " +
                                std::to_string(b.size()));
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!representable(a[i], in))
      throw std::invalid_argument("kvq::mma::dot: a[" + std::to_string(i) + "] is not a " + name(in) + " value");
    if (!representable(b[i], in))
      throw std::invalid_argument("kvq::mma::dot: b[" + std::to_string(i) + "] is not a " + name(in) + " value");
  }
  if (!representable(c, p.params.out))
    throw std::invalid_argument(std::string("kvq::mma::dot: c is not a ") + name(p.params.out) + " value");
  if (p.params.k <= 0 || p.params.k > max_block || p.params.frac_bits > max_frac_bits)
    throw std::invalid_argument("kvq::mma::dot: block size or window out of the supported range");
  return dot(p.params, in, a.data(), b.data(), static_cast<int>(a.size()), c);
}

/// d = a · b + c with the preset of (a_, in, out) (get_preset); throws as get_preset and
/// the preset overload.
inline float dot(arch a_, input_format in, output_format out, const std::vector<float>& a,
                 const std::vector<float>& b, float c) {
  return dot(get_preset(a_, in, out), in, a, b, c);
}

// ---- block-scaled kinds (block_scale.hpp) ------------------------------------------

/// The element format's name: "e4m3", "e5m2", "e3m2", "e2m3" or "e2m1".
inline const char* name(element_format f) {
  switch (f) {
    case element_format::e4m3: return "e4m3";
    case element_format::e5m2: return "e5m2";
    case element_format::e3m2: return "e3m2";
    case element_format::e2m3: return "e2m3";
    case element_format::e2m1: return "e2m1";
  }
  return "?";
}
/// The scale format's name: "ue8m0" or "ue4m3".
inline const char* name(scale_format f) { return f == scale_format::ue8m0 ? "ue8m0" : "ue4m3"; }
/// The kind's name: "mxf8f6f4" or "mxf4nvf4".
inline const char* name(block_scale_kind k) { return k == block_scale_kind::mxf8f6f4 ? "mxf8f6f4" : "mxf4nvf4"; }
/// "simulated" or "assumed".
inline const char* name(block_scale_evidence e) { return e == block_scale_evidence::simulated ? "simulated" : "assumed"; }

/// The element format named s (as name() writes it). Throws std::invalid_argument otherwise.
inline element_format parse_element_format(const std::string& s) {
  for (element_format f : {element_format::e4m3, element_format::e5m2, element_format::e3m2, element_format::e2m3,
                           element_format::e2m1})
    if (s == name(f)) return f;
  throw std::invalid_argument("kvq::mma: unknown element format '" + s + "' (allowed: e4m3, e5m2, e3m2, e2m3, e2m1)");
}
/// The scale format named s ("ue8m0", "ue4m3"). Throws std::invalid_argument otherwise.
inline scale_format parse_scale_format(const std::string& s) {
  if (s == "ue8m0") return scale_format::ue8m0;
  if (s == "ue4m3") return scale_format::ue4m3;
  throw std::invalid_argument("kvq::mma: unknown scale format '" + s + "' (allowed: ue8m0, ue4m3)");
}
/// The kind named s ("mxf8f6f4", "mxf4nvf4"). Throws std::invalid_argument otherwise.
inline block_scale_kind parse_block_scale_kind(const std::string& s) {
  if (s == "mxf8f6f4") return block_scale_kind::mxf8f6f4;
  if (s == "mxf4nvf4") return block_scale_kind::mxf4nvf4;
  throw std::invalid_argument("kvq::mma: unknown block-scaled kind '" + s + "' (allowed: mxf8f6f4, mxf4nvf4)");
}

/// The preset of (kind, s, block) (find_block_scale_preset). Throws std::invalid_argument
/// when PTX has no such instruction.
inline block_scale_params get_block_scale_preset(block_scale_kind kind, scale_format s, int block) {
  block_scale_params p{};
  if (!find_block_scale_preset(kind, s, block, p))
    throw std::invalid_argument(std::string("kvq::mma: no block-scaled preset for ") + name(kind) + " with " + name(s) +
                                " scales per " + std::to_string(block) +
                                " elements (mxf8f6f4: ue8m0 per 32; mxf4nvf4: ue8m0 per 32 or 16, ue4m3 per 16)");
  return p;
}

/// How firmly MMA-Sim decides the preset for these element formats: simulated for e4m3 /
/// e5m2 in mxf8f6f4 and e2m1 in mxf4nvf4; assumed otherwise (MMA-Sim has no model).
inline block_scale_evidence evidence(const block_scale_params& p, element_format fa, element_format fb) {
  if (p.kind == block_scale_kind::mxf4nvf4) return block_scale_evidence::simulated;
  const auto mmasim = [](element_format f) { return f == element_format::e4m3 || f == element_format::e5m2; };
  return mmasim(fa) && mmasim(fb) ? block_scale_evidence::simulated : block_scale_evidence::assumed;
}

/// True when x is a value of element format f (e4m3: NaN, finite up to 448; e5m2: also
/// Inf; e3m2, e2m3, e2m1: finite only, up to 28, 7.5, 6).
inline bool representable(float x, element_format f) {
  const input_format_info i = info(f);
  const std::uint64_t all_ones = (std::uint64_t{2} << i.mantissa_bits) - 1;
  switch (f) {
    case element_format::e4m3: return representable(x, input_format::e4m3);
    case element_format::e5m2: return representable(x, input_format::e5m2);
    default: return std::isfinite(x) && representable(x, i.mantissa_bits, i.min_exp, i.max_exp, all_ones, false);
  }
}
/// True when x is a value of scale format f: ue8m0 a power of two in [2^-127, 2^127] or NaN;
/// ue4m3 a non-negative e4m3 value (0 .. 448) or NaN.
inline bool representable(float x, scale_format f) {
  if (std::isnan(x)) return true;
  if (f == scale_format::ue4m3) return !(x < 0.0f) && representable(x, input_format::e4m3);
  if (!(x > 0.0f) || std::isinf(x)) return false;
  return representable(x, 0, -127, 127, 1, false);
}

/// d = Σ_k (a_k sa)(b_k sb) + c through block-scaled instructions of preset p, K = a.size()
/// a multiple of p.k, the d of one instruction being the c of the next (a K loop of MMA
/// instructions). sa, sb: K / p.block scales. Throws std::invalid_argument when the sizes
/// do not fit, an element is not a value of its format, or the formats do not fit the kind
/// (mxf4nvf4, and any params with group > 1, take e2m1 only: the 64-bit accumulator is
/// sized for e2m1 group sums).
inline float block_scale_dot(const block_scale_params& p, element_format fa, element_format fb,
                             const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& sa,
                             const std::vector<float>& sb, float c) {
  if (p.k <= 0 || p.k > max_block || p.block <= 0 || p.k % p.block != 0 || p.group <= 0 || p.k % p.group != 0 ||
      (p.group > 1 && p.block % p.group != 0) || p.frac_bits <= 0 || p.frac_bits > 35)
    throw std::invalid_argument("kvq::mma::block_scale_dot: k, block, group or window out of the supported range");
  if ((p.kind == block_scale_kind::mxf4nvf4 || p.group > 1) &&
      (fa != element_format::e2m1 || fb != element_format::e2m1))
    throw std::invalid_argument(std::string("kvq::mma::block_scale_dot: ") +
                                (p.kind == block_scale_kind::mxf4nvf4 ? "mxf4nvf4" : "a group of more than one product") +
                                " takes e2m1 operands, not " + name(fa) + " x " + name(fb));
  if (a.size() != b.size())
    throw std::invalid_argument("kvq::mma::block_scale_dot: a has " + std::to_string(a.size()) + " elements, b has " +
                                std::to_string(b.size()));
  const std::size_t k = static_cast<std::size_t>(p.k), blk = static_cast<std::size_t>(p.block);
  if (a.empty() || a.size() % k != 0)
    throw std::invalid_argument("kvq::mma::block_scale_dot: K = " + std::to_string(a.size()) +
                                " is not a positive multiple of " + std::to_string(k));
  if (sa.size() != a.size() / blk || sb.size() != a.size() / blk)
    throw std::invalid_argument("kvq::mma::block_scale_dot: expected " + std::to_string(a.size() / blk) +
                                " scales per operand, got " + std::to_string(sa.size()) + " and " +
                                std::to_string(sb.size()));
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!representable(a[i], fa))
      throw std::invalid_argument("kvq::mma::block_scale_dot: a[" + std::to_string(i) + "] is not a " + name(fa) +
                                  " value");
    if (!representable(b[i], fb))
      throw std::invalid_argument("kvq::mma::block_scale_dot: b[" + std::to_string(i) + "] is not a " + name(fb) +
                                  " value");
  }
  for (std::size_t j = 0; j < sa.size(); ++j) {
    if (!representable(sa[j], p.scale))
      throw std::invalid_argument("kvq::mma::block_scale_dot: sa[" + std::to_string(j) + "] is not a " +
                                  name(p.scale) + " value");
    if (!representable(sb[j], p.scale))
      throw std::invalid_argument("kvq::mma::block_scale_dot: sb[" + std::to_string(j) + "] is not a " +
                                  name(p.scale) + " value");
  }
  float acc = c;
  for (std::size_t i = 0; i < a.size(); i += k)
    acc = block_scale_fma(p, fa, fb, a.data() + i, b.data() + i, sa.data() + i / blk, sb.data() + i / blk, acc);
  return acc;
}

/// Canonical name of an MFMA preset ("cdna3_fp8", "cdna3_bf16", "cdna3_bf16_k4", "cdna3_fp16",
/// "cdna3_fp16_k4", "cdna3_xf32", "cdna3_fp32").
inline const char* name(mfma_preset p) {
  switch (p) {
    case mfma_preset::cdna3_fp8: return "cdna3_fp8";
    case mfma_preset::cdna3_bf16: return "cdna3_bf16";
    case mfma_preset::cdna3_bf16_k4: return "cdna3_bf16_k4";
    case mfma_preset::cdna3_fp16: return "cdna3_fp16";
    case mfma_preset::cdna3_fp16_k4: return "cdna3_fp16_k4";
    case mfma_preset::cdna3_xf32: return "cdna3_xf32";
    case mfma_preset::cdna3_fp32: return "cdna3_fp32";
  }
  return "?";
}

/// Canonical name of an MFMA operand format ("e4m3fnuz", "e5m2fnuz", "bf16", "fp16", "fp32").
inline const char* name(mfma_input f) {
  switch (f) {
    case mfma_input::e4m3fnuz: return "e4m3fnuz";
    case mfma_input::e5m2fnuz: return "e5m2fnuz";
    case mfma_input::bf16: return "bf16";
    case mfma_input::fp16: return "fp16";
    case mfma_input::fp32: return "fp32";
  }
  return "?";
}

/// The MFMA preset named s; std::invalid_argument listing the names otherwise.
inline mfma_preset parse_mfma_preset(const std::string& s) {
  for (mfma_preset p : {mfma_preset::cdna3_fp8, mfma_preset::cdna3_bf16, mfma_preset::cdna3_bf16_k4,
                        mfma_preset::cdna3_fp16, mfma_preset::cdna3_fp16_k4, mfma_preset::cdna3_xf32,
                        mfma_preset::cdna3_fp32})
    if (s == name(p)) return p;
  throw std::invalid_argument("kvq::mma: unknown MFMA preset '" + s +
                              "' (allowed: cdna3_fp8, cdna3_bf16, cdna3_bf16_k4, cdna3_fp16, cdna3_fp16_k4, "
                              "cdna3_xf32, cdna3_fp32)");
}

/// The MFMA operand format named s; std::invalid_argument listing the names otherwise.
inline mfma_input parse_mfma_input(const std::string& s) {
  for (mfma_input f : {mfma_input::e4m3fnuz, mfma_input::e5m2fnuz, mfma_input::bf16, mfma_input::fp16,
                       mfma_input::fp32})
    if (s == name(f)) return f;
  throw std::invalid_argument("kvq::mma: unknown MFMA operand format '" + s +
                              "' (allowed: e4m3fnuz, e5m2fnuz, bf16, fp16, fp32)");
}

/// True when x is a value of MFMA operand format f. The fnuz formats have NaN but no Inf
/// and no -0 (a -0.0 is taken as their zero); fp32 takes every float.
inline bool representable(float x, mfma_input f) {
  const input_format_info i = info(f);
  const std::uint64_t all_ones = (std::uint64_t{2} << i.mantissa_bits) - 1;
  switch (f) {
    case mfma_input::e4m3fnuz:
    case mfma_input::e5m2fnuz:
      return representable(x, i.mantissa_bits, i.min_exp, i.max_exp, all_ones, false);
    case mfma_input::fp32: return true;
    default: return representable(x, i.mantissa_bits, i.min_exp, i.max_exp, all_ones, true);
  }
}

/// d = a · b + c through the MFMA steps of preset p (mfma.hpp), K = a.size() (a last
/// partial step acts as if padded with 0 × 0 products), c and d fp32. Throws
/// std::invalid_argument when the sizes differ, a format is not one the preset takes, or
/// an element is not a value of its format.
inline float mfma_dot(mfma_preset p, mfma_input fa, mfma_input fb, const std::vector<float>& a,
                      const std::vector<float>& b, float c) {
  const mfma_params q = get_mfma_params(p);
  for (mfma_input f : {fa, fb})
    if (f != q.in0 && f != q.in1)
      throw std::invalid_argument(std::string("kvq::mma::mfma_dot: ") + name(p) + " takes " + name(q.in0) +
                                  (q.in1 != q.in0 ? std::string(" or ") + name(q.in1) : std::string()) +
                                  " operands, not " + name(f));
  if (a.size() != b.size())
    throw std::invalid_argument("kvq::mma::mfma_dot: a has " + std::to_string(a.size()) + " elements, b has " +
                                std::to_string(b.size()));
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!representable(a[i], fa))
      throw std::invalid_argument("kvq::mma::mfma_dot: a[" + std::to_string(i) + "] is not a " + name(fa) + " value");
    if (!representable(b[i], fb))
      throw std::invalid_argument("kvq::mma::mfma_dot: b[" + std::to_string(i) + "] is not a " + name(fb) + " value");
  }
  return mfma_dot(q, fa, fb, a.data(), b.data(), static_cast<int>(a.size()), c);
}

}  // namespace kvq::mma
