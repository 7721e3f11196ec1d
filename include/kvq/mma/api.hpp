/// \file
/// kvq/mma/api.hpp — checked host entry points: names for the presets, and inner products
/// over float arrays whose values must be exactly representable in the input format.
#pragma once

#include <kvq/mma/dot.hpp>
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

}  // namespace kvq::mma
