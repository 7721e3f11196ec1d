/// \file
/// kvq/core/math_array.hpp — kvq::math::exp over arrays, several elements per
/// instruction, giving for every element exactly the bits of the scalar math::exp.
///
/// Why: a softmax over a 128k-token context spends most of its time in exp, and the
/// scalar function (a double-double argument reduction, a degree-13 polynomial, range
/// branches) runs one element at a time. Here the common case — every element of a group
/// of lanes inside |x| <= 690, so the result needs no overflow, underflow or two-step
/// scaling — runs the same operations as math::exp in lane loops the compiler turns into
/// vector instructions; a group with any other element (NaN, +-inf, a huge or tiny
/// argument) goes through the scalar function element by element. Two operations are
/// written differently and give the same values:
/// ~~~
///  - k ln2_tail as a double-double: math::exp forms the error term with fma, here with
///    Dekker's exact product (k has at most 11 significant bits, ln2_tail is split into a
///    25-bit head and a 27-bit tail, so every partial product is exact). The error of a
///    product is unique, so both give the same pair (checked for every k the fast range
///    reaches, tests/core/test_math_array.cpp).
///  - 2^k: from the bits of the shifter sum x / ln2 + 1.5 * 2^52, whose low bits hold k,
///    instead of a float-to-int conversion (which AVX2 lacks for 64-bit lanes).
/// ~~~
/// Host and device: plain IEEE operations, no fma, no table.
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/core/math.hpp>

namespace kvq {
namespace math {
namespace detail {

/// Lanes of one exp group: 4 doubles, one AVX2 register (narrower units split the loops).
constexpr int exp_lanes = 4;

/// ln2_tail = exp_tail_hi + exp_tail_lo exactly, with 25 and 27 significant bits.
constexpr double exp_tail_hi = 0x1.a39ef3p-33;
constexpr double exp_tail_lo = 0x1.5e4f1d8p-59;

/// e^x for exp_lanes arguments all in [-690, 690] (the caller checks): the operations of
/// math::exp(double) on the path it takes there, lane by lane.
KVQ_HD inline void exp_group_in_range(const double* x, double* y) {
  constexpr int L = exp_lanes;
  constexpr double shifter = 6755399441055744.0;  // 1.5 * 2^52, as round_int
  constexpr std::uint64_t shifter_bits = 0x4338000000000000ull;
  double kd[L], rh[L], rl[L], sc[L];
  for (int j = 0; j < L; ++j) {
    const double t = x[j] * inv_ln2_hi + shifter;
    kd[j] = t - shifter;  // round_int(x * inv_ln2_hi)
    // k = bits(t) - bits(shifter) for |k| < 2^51; 2^k from its biased exponent.
    const std::uint64_t kb = kvq::bit_cast<std::uint64_t>(t) - shifter_bits;
    sc[j] = kvq::bit_cast<double>((kb + 1023u) << 52);
  }
  for (int j = 0; j < L; ++j) {
    const double hi = x[j] - kd[j] * ln2_head;
    // two_prod(kd, ln2_tail) by Dekker's product (exact, see the file comment).
    const double p = kd[j] * ln2_tail;
    const double e = (kd[j] * exp_tail_hi - p) + kd[j] * exp_tail_lo;
    // two_sum(hi, -p)
    const double s = hi - p;
    const double bb = s - hi;
    const double err = (hi - (s - bb)) + (-p - bb);
    const double r_lo = err - e;
    // fast_two_sum(s, r_lo)
    const double h = s + r_lo;
    rh[j] = h;
    rl[j] = r_lo - (h - s);
  }
  // exp_core itself (branch-free, so the lane loop stays one vector loop), then
  // scale_pow2 for |k| <= 1000: one multiply.
  for (int j = 0; j < L; ++j) y[j] = exp_core(rh[j], rl[j]) * sc[j];
}

/// Whether every lane of a group is in the fast range (NaN is not).
KVQ_HD inline bool exp_group_fast(const double* x) {
  bool ok = true;
  for (int j = 0; j < exp_lanes; ++j) ok = ok & (x[j] >= -690.0) & (x[j] <= 690.0);
  return ok;
}

}  // namespace detail

/// y[i] = math::exp(x[i]) for i in [0, n), bit for bit (x and y may be the same array).
KVQ_HD inline void exp_n(const double* x, double* y, std::size_t n) {
  constexpr std::size_t L = detail::exp_lanes;
  std::size_t i = 0;
  for (; i + L <= n; i += L) {
    double in[L], out[L];
    for (std::size_t j = 0; j < L; ++j) in[j] = x[i + j];
    if (detail::exp_group_fast(in)) {
      detail::exp_group_in_range(in, out);
    } else {
      for (std::size_t j = 0; j < L; ++j) out[j] = exp(in[j]);
    }
    for (std::size_t j = 0; j < L; ++j) y[i + j] = out[j];
  }
  for (; i < n; ++i) y[i] = exp(x[i]);
}

/// y[i] = math::exp(x[i]) in float for i in [0, n), bit for bit (x and y may be the same
/// array): the double exp of the widened argument, rounded once, as math::exp(float).
/// In the fast range the result is below float's overflow threshold only for x <= 88;
/// larger arguments take the scalar path.
KVQ_HD inline void exp_n(const float* x, float* y, std::size_t n) {
  constexpr std::size_t L = detail::exp_lanes;
  std::size_t i = 0;
  for (; i + L <= n; i += L) {
    double in[L], out[L];
    bool ok = true;
    for (std::size_t j = 0; j < L; ++j) {
      in[j] = static_cast<double>(x[i + j]);
      ok = ok & (in[j] <= 88.0);
    }
    if (ok && detail::exp_group_fast(in)) {
      detail::exp_group_in_range(in, out);
      for (std::size_t j = 0; j < L; ++j) y[i + j] = static_cast<float>(out[j]);  // to_float below its limit
    } else {
      for (std::size_t j = 0; j < L; ++j) y[i + j] = exp(x[i + j]);
    }
  }
  for (; i < n; ++i) y[i] = exp(x[i]);
}

}  // namespace math
}  // namespace kvq
