/// \file
/// kvq/core/math_array.hpp — kvq::math::exp, log and sincos over arrays, several elements
/// per instruction, giving for every element exactly the bits of the scalar functions.
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
/// exp_n: host and device, plain IEEE operations, no fma, no table.
///
/// log_n: math::log(double) of arrays, 4 per group of finite positive normal arguments,
/// the same way (plain IEEE operations; Dekker's product for the one fma; the branches as
/// selects); host and device. KL and JS divergences over 128k keys take three logarithms
/// per key.
///
/// sincos_n: math::sincos of float arrays, bit for bit, 8 per group where all are finite
/// (host only, chosen at run time like the other kernel copies, kvq/core/isa.hpp). Every
/// RoPE angle of a long context is one call (about 2 million for 32k keys of head
/// dimension 128), nearly all above pi/4, so the Payne-Hanek reduction is what costs:
/// its 128-bit window of 2/pi is read from a table by the float's exponent, its products
/// formed from 32 x 32-bit halves, its branches as masks, both sides of the range test
/// computed and one kept; the double steps are the scalar function's own.
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/core/isa.hpp>
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

namespace detail {

/// Lanes of one log group (as exp's).
constexpr int log_lanes = 4;

/// log(x) for log_lanes arguments, each a finite positive normal double (the caller
/// checks): the operations of math::log(double) on that path, lane by lane (GCC vector
/// types on the host; the scalar function on the device). Written differently, with the
/// same values: the exponent k as a double from the exponent bits
/// (2^52 + e - 2^52, exact) rather than through an int; the branches (m > sqrt 2, k == 0)
/// as selects of both sides; f * f's rounding error by Dekker's product (Veltkamp split
/// of f, |f| < 0.42, every partial product exact and f^2 >= 2^-106 far from underflow)
/// instead of fma: an exact product's error is unique, so both give the same pair.
KVQ_HD inline void log_group_normal(const double* x, double* y) {
#if KVQ_DEVICE_PASS
  for (int j = 0; j < log_lanes; ++j) y[j] = log(x[j]);
#else
  // GCC vector types: the compiler does not find the lanes of these straight-line steps
  // by itself. Every operation is the lane-wise IEEE operation, as in math::log.
  typedef double vd __attribute__((vector_size(32)));
  typedef std::uint64_t vu __attribute__((vector_size(32)));
  typedef std::int64_t vi __attribute__((vector_size(32)));
  constexpr double two52 = 4503599627370496.0;  // 2^52
  vd xv;
  __builtin_memcpy(&xv, x, sizeof xv);
  const vu u = (vu)(xv);
  const vu eb = (u >> 52) | 0x4330000000000000ull;
  const vd e = (vd)(eb) - two52;  // the biased exponent, exact
  const vu mb = (u & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
  const vd m = (vd)(mb);  // [1, 2)
  const vi big = m > 1.4142135623730951;          // all ones where m > sqrt(2)
  const vd one_if_big = (vd)((vu)(big) & 0x3ff0000000000000ull);
  const vd kd = (e - 1023.0) + one_if_big;
  const vd mh = m * 0.5;
  const vu msel = ((vu)(mh) & (vu)(big)) |
                  ((vu)(m) & ~(vu)(big));
  const vd f = (vd)(msel) - 1.0;
  const vd s = f / (2.0 + f);
  const vd z = s * s;
  vd R;
  log_series(z, R);
  // two_prod(f, f) by Dekker.
  const vd c = 134217729.0 * f;  // 2^27 + 1
  const vd fh = c - (c - f);
  const vd fl = f - fh;
  const vd ff_hi = f * f;
  const vd ff_lo = ((fh * fh - ff_hi) + fh * fl + fl * fh) + fl * fl;
  const vd h_hi = 0.5 * ff_hi;
  const vd h_lo = 0.5 * ff_lo;
  const vd corr = s * (h_hi + R);
  // two_sum(f, -h_hi)
  const vd b = -h_hi;
  const vd a_hi = f + b;
  const vd bb = a_hi - f;
  const vd a_lo = (f - (a_hi - bb)) + (b - bb);
  const vd lo = (a_lo - h_lo) + corr;
  // fast_two_sum(a_hi, lo)
  const vd l_hi = a_hi + lo;
  const vd l_lo = lo - (l_hi - a_hi);
  // k ln2 + l: two_sum(k ln2_head, l_hi), then the tails; k == 0 keeps l_hi + l_lo.
  const vd t_hi = kd * ln2_head;
  const vd s2 = t_hi + l_hi;
  const vd bb2 = s2 - t_hi;
  const vd e2 = (t_hi - (s2 - bb2)) + (l_hi - bb2);
  const vd lo2 = e2 + (l_lo + kd * ln2_tail);
  const vd with_k = s2 + lo2;
  const vd no_k = l_hi + l_lo;
  const vi k0 = kd == 0.0;
  const vu r = ((vu)(no_k) & (vu)(k0)) |
               ((vu)(with_k) & ~(vu)(k0));
  __builtin_memcpy(y, &r, sizeof r);
#endif
}

/// Whether every lane of a group is a finite positive normal double (NaN is not).
KVQ_HD inline bool log_group_fast(const double* x) {
  bool ok = true;
  for (int j = 0; j < log_lanes; ++j) ok = ok & (x[j] >= 2.2250738585072014e-308) & (x[j] <= 1.7976931348623157e308);
  return ok;
}

}  // namespace detail

/// y[i] = math::log(x[i]) for i in [0, n), bit for bit (x and y may be the same array):
/// groups of finite positive normal arguments by detail::log_group_normal, any other
/// group (a zero, a negative, a subnormal, an infinity, a NaN) element by element.
KVQ_HD inline void log_n(const double* x, double* y, std::size_t n) {
  constexpr std::size_t L = detail::log_lanes;
  std::size_t i = 0;
  for (; i + L <= n; i += L) {
    double in[L], out[L];
    for (std::size_t j = 0; j < L; ++j) in[j] = x[i + j];
    if (detail::log_group_fast(in)) {
      detail::log_group_normal(in, out);
    } else {
      for (std::size_t j = 0; j < L; ++j) out[j] = log(in[j]);
    }
    for (std::size_t j = 0; j < L; ++j) y[i + j] = out[j];
  }
  for (; i < n; ++i) y[i] = log(x[i]);
}

namespace detail {

/// double(v) for an integer v <= 2^53, from bits (exact: v >> 2 < 2^52 sits in the low
/// bits of 2^52 + (v >> 2); the sum with v & 3 is v). A lane loop of these vectorises;
/// a 64-bit integer conversion does not on AVX2.
KVQ_HD inline double u53_to_double(std::uint64_t v) {
  const double h = kvq::bit_cast<double>(0x4330000000000000ull | (v >> 2)) - 4503599627370496.0;
  return h * 4.0 + static_cast<double>(static_cast<std::uint32_t>(v & 3u));
}

/// Floats per sincos group.
constexpr int sincos_lanes = 8;

/// The two 64-bit windows of 2/pi that reduce_pio2 reads for a float of biased exponent
/// e: hi at bit position e - 88, lo 64 bits further (every float above pi/4 has e >= 126;
/// smaller e get e = 126's windows, which the caller does not use).
struct pio2_windows {
  std::uint64_t hi[256], lo[256];
};
constexpr pio2_windows make_pio2_windows() {
  pio2_windows w{};
  for (int e = 0; e < 256; ++e) {
    const int pos = (e < 126 ? 126 : e) - 88;
    w.hi[e] = two_over_pi_bits64(pos);
    w.lo[e] = two_over_pi_bits64(pos + 64);
  }
  return w;
}
/// The windows of every exponent (host only).
inline constexpr pio2_windows pio2_window_table = make_pio2_windows();

/// math::sincos of sincos_lanes finite floats, lane by lane: the operations of
/// sincos_reduced, with both sides of its range test computed and one kept per lane, and
/// reduce_pio2's integer steps in 64-bit lanes (its 64 x 24-bit products as 32 x 32-bit
/// ones; its branches as masks). Host only (the table above).
KVQ_FORCEINLINE void sincos_group_finite(const float* x, float* s, float* c) {
  constexpr int L = sincos_lanes;
  std::uint64_t bhi[L], blo[L], mm[L];
  float ax[L];
  for (int j = 0; j < L; ++j) {
    const std::uint32_t u = bits(x[j]) & 0x7fffffffu;
    ax[j] = float_from_bits(u);
    mm[j] = (u & 0x7fffffu) | 0x800000u;
    bhi[j] = pio2_window_table.hi[u >> 23];
    blo[j] = pio2_window_table.lo[u >> 23];
  }
  double rh[L], rl[L];
  std::uint64_t qq[L];
  for (int j = 0; j < L; ++j) {
    // reduce_pio2: P = M * B mod 2^128, then the quadrant and the fraction.
    const std::uint64_t M = mm[j];
    const std::uint64_t lo_lo = (blo[j] & 0xffffffffu) * M;
    const std::uint64_t lo_hi = (blo[j] >> 32) * M;
    const std::uint64_t P_lo = lo_lo + (lo_hi << 32);
    const std::uint64_t carry = (lo_hi >> 32) + (P_lo < lo_lo ? 1u : 0u);
    const std::uint64_t P_hi = (bhi[j] & 0xffffffffu) * M + (((bhi[j] >> 32) * M) << 32) + carry;
    const std::uint64_t G_hi0 = (P_hi << 2) | (P_lo >> 62);
    const std::uint64_t G_lo0 = P_lo << 2;
    const std::uint64_t neg = 0u - (G_hi0 >> 63);  // all ones: fraction >= 1/2, next quadrant
    const std::uint64_t nlo = ~G_lo0 + 1u;
    const std::uint64_t nhi = ~G_hi0 + (nlo == 0u ? 1u : 0u);
    const std::uint64_t G_lo = (nlo & neg) | (G_lo0 & ~neg);
    const std::uint64_t G_hi = (nhi & neg) | (G_hi0 & ~neg);
    const std::uint64_t q = ((P_hi >> 62) + (neg & 1u)) & 3u;
    const double sign = double_from_bits(0x3ff0000000000000ull | (neg & 0x8000000000000000ull));
    const double d1 = u53_to_double(G_hi >> 11) * 0x1p-53;
    const double d2 = u53_to_double(((G_hi & 0x7ffu) << 42) | (G_lo >> 22)) * 0x1p-106;
    const double d3 = u53_to_double(G_lo & 0x3fffffu) * 0x1p-128;
    const dd s12 = two_sum(d1, d2);
    const dd f = fast_two_sum(s12.hi, s12.lo + d3);
    const dd p = two_prod(f.hi, pio2_hi);
    const double lo = p.lo + (f.hi * pio2_lo + f.lo * pio2_hi);
    const dd r = fast_two_sum(p.hi, lo);
    // |x| <= float(pi/4): no reduction (r = |x|, q = 0).
    const std::uint64_t small = 0u - static_cast<std::uint64_t>(ax[j] <= 0.785398163397448309615f);
    rh[j] = double_from_bits((bits(static_cast<double>(ax[j])) & small) | (bits(sign * r.hi) & ~small));
    rl[j] = double_from_bits(bits(sign * r.lo) & ~small);  // +0 when small
    qq[j] = q & ~small;
  }
  for (int j = 0; j < L; ++j) {
    const double ss = sin_core(rh[j], rl[j]);
    const double cc = cos_core(rh[j], rl[j]);
    // q = 0: (sin, cos), 1: (cos, -sin), 2: (-sin, -cos), 3: (-cos, sin); then the sign of x.
    const std::uint64_t q = qq[j];
    const std::uint64_t odd = 0u - (q & 1u);
    const std::uint64_t s_neg = (q >> 1) << 63;                 // q = 2, 3
    const std::uint64_t c_neg = ((q ^ (q >> 1)) & 1u) << 63;    // q = 1, 2
    const double sv = double_from_bits(((bits(cc) & odd) | (bits(ss) & ~odd)) ^ s_neg);
    const double cv = double_from_bits(((bits(ss) & odd) | (bits(cc) & ~odd)) ^ c_neg);
    const float xj = x[j];
    const double sd = xj < 0.0f ? -sv : (xj == 0.0f ? static_cast<double>(xj) : sv);  // keeps sin(-0) = -0
    s[j] = static_cast<float>(sd);
    c[j] = static_cast<float>(cv);
  }
}

/// Cody–Waite split of pi/2 for sincos_group_fast: P1 (31 significant bits) and P2 (32)
/// make k P1 and k P2 exact for |k| < 2^21, P3 = double(pi/2 - P1 - P2) (the rest is
/// below 2^-122).
constexpr double cw_pio2_1 = 0x1.921fb544p+0, cw_pio2_2 = 0x1.0b4611a6p-34, cw_pio2_3 = 0x1.3198a2e037073p-69;

/// sincos_group_finite's floats by a shorter road where it provably gives the same ones:
/// returns false, with nothing written, for a group it cannot decide.
///
/// Why: the floats are sincos_reduced's doubles rounded once, and the Payne–Hanek
/// reduction that makes those doubles exact to 2^-100 is most of their cost; a float needs
/// far less. Here, for |x| < 2^20, the reduction is Cody–Waite's in plain doubles
/// (x - k P1 exact by Sterbenz's lemma for k != 0, x itself for k = 0; the two other steps
/// round once each: |r - (x - k pi/2)| <= 2^-53) and the same sin_core / cos_core take r.
/// Both doubles are within 2^-50 of sin x and cos x (the cores' error on |r| <= pi/4 is a
/// few ulps), so they are within 2^-49 of each other, and for k = 0 they are the same
/// operations on the same r (the cores are odd and even in their arithmetic). A lane's
/// float is taken when every double within delta = 2^-42 |v| (+ 2^-42 for k != 0) of the
/// value v rounds to it (Ziv's rounding test: v - delta and v + delta round to the same
/// float; delta is 2^7 times the bound): then so does the exact path's double. Groups
/// with a zero (whose sine keeps the sign of x, which sin_core's +0 tail would lose), a
/// larger |x|, or a value too near a float rounding boundary (x near a multiple of pi/2)
/// take sincos_group_finite.
template <int L = sincos_lanes>
KVQ_FORCEINLINE bool sincos_group_fast(const float* x, float* s, float* c) {
  constexpr double shifter = 6755399441055744.0;  // 1.5 * 2^52
  constexpr double two_over_pi = 0x1.45f306dc9c883p-1;
  constexpr double rel = 0x1p-42;
  std::uint32_t miss = 0;
  for (int j = 0; j < L; ++j) {
    const std::uint32_t a = bits(x[j]) & 0x7fffffffu;
    miss |= static_cast<std::uint32_t>(a >= 0x49800000u) | static_cast<std::uint32_t>(a == 0u);  // |x| >= 2^20, x = 0
  }
  if (miss) return false;
  double sv[L], cv[L], ab[L];
  for (int j = 0; j < L; ++j) {
    const double xd = static_cast<double>(x[j]);
    const double qs = xd * two_over_pi + shifter;
    const double kd = qs - shifter;
    const std::uint64_t q = (bits(qs) - 0x4338000000000000ull) & 3u;
    const double r = ((xd - kd * cw_pio2_1) - kd * cw_pio2_2) - kd * cw_pio2_3;
    const double ss = sin_core(r, 0.0);
    const double cc = cos_core(r, 0.0);
    // q = 0: (sin, cos), 1: (cos, -sin), 2: (-sin, -cos), 3: (-cos, sin)
    const std::uint64_t odd = 0u - (q & 1u);
    const std::uint64_t s_neg = (q >> 1) << 63;
    const std::uint64_t c_neg = ((q ^ (q >> 1)) & 1u) << 63;
    sv[j] = double_from_bits(((bits(cc) & odd) | (bits(ss) & ~odd)) ^ s_neg);
    cv[j] = double_from_bits(((bits(ss) & odd) | (bits(cc) & ~odd)) ^ c_neg);
    ab[j] = double_from_bits(bits(rel) & (0u - static_cast<std::uint64_t>((bits(kd) << 1) != 0u)));  // 2^-42 for k != 0
  }
  for (int j = 0; j < L; ++j) {
    const double ds = rel * double_from_bits(bits(sv[j]) & 0x7fffffffffffffffull) + ab[j];
    const double dc = rel * double_from_bits(bits(cv[j]) & 0x7fffffffffffffffull) + ab[j];
    miss |= bits(static_cast<float>(sv[j] - ds)) ^ bits(static_cast<float>(sv[j] + ds));
    miss |= bits(static_cast<float>(cv[j] - dc)) ^ bits(static_cast<float>(cv[j] + dc));
  }
  if (miss) return false;
  for (int j = 0; j < L; ++j) {
    s[j] = static_cast<float>(sv[j]);
    c[j] = static_cast<float>(cv[j]);
  }
  return true;
}

/// sincos of sincos_lanes floats (in may alias nothing written): the short road, else
/// the exact group where all are finite, else the scalar function per float.
KVQ_FORCEINLINE void sincos_group(const float* in, float* so, float* co) {
  constexpr int L = sincos_lanes;
  bool finite = true;
  for (int j = 0; j < L; ++j) finite = finite & ((bits(in[j]) & 0x7f800000u) != 0x7f800000u);
  if (finite) {
    if (!sincos_group_fast(in, so, co)) sincos_group_finite(in, so, co);
  } else {
    for (int j = 0; j < L; ++j) sincos(in[j], so[j], co[j]);
  }
}

/// sincos over an array: W floats per group on the short road (sincos_group_fast<W>), a
/// group it refuses and the floats after the last whole group in groups of sincos_lanes
/// (sincos_group), the rest one by one. Each group is read whole before it is written
/// (s or c may be x).
template <int W = sincos_lanes>
KVQ_FORCEINLINE void sincos_n_body(const float* x, float* s, float* c, std::size_t n) {
  constexpr std::size_t L = sincos_lanes;
  static_assert(W % sincos_lanes == 0, "whole groups of sincos_lanes");
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    float in[W], so[W], co[W];
    for (int j = 0; j < W; ++j) in[j] = x[i + j];
    if (W == static_cast<int>(L) || !sincos_group_fast<W>(in, so, co))
      for (int j = 0; j < W; j += static_cast<int>(L)) sincos_group(in + j, so + j, co + j);
    for (int j = 0; j < W; ++j) {
      s[i + j] = so[j];
      c[i + j] = co[j];
    }
  }
  for (; i + L <= n; i += L) {
    float in[L], so[L], co[L];
    for (std::size_t j = 0; j < L; ++j) in[j] = x[i + j];
    sincos_group(in, so, co);
    for (std::size_t j = 0; j < L; ++j) {
      s[i + j] = so[j];
      c[i + j] = co[j];
    }
  }
  for (; i < n; ++i) {
    const float v = x[i];
    sincos(v, s[i], c[i]);
  }
}

/// Floats per short-road group of the x86-64-v3 copy: wider groups overlap the
/// polynomials' dependent chains (as normal_lanes_wide in kvq/inject/normal_array.hpp);
/// 32 needs AVX-512's 32 vector registers.
#if defined(__AVX512F__)
constexpr int sincos_lanes_wide = 32;
#else
constexpr int sincos_lanes_wide = 16;
#endif

#if defined(KVQ_ISA_DISPATCH)
/// sincos_n_body compiled for x86-64-v3 with FMA (two_prod writes fma; kvq/core/isa.hpp).
KVQ_TARGET_X86_64_V3_FMA inline void sincos_n_x86_64_v3(const float* x, float* s, float* c, std::size_t n) {
  sincos_n_body<sincos_lanes_wide>(x, s, c, n);
}
#endif

}  // namespace detail

/// s[i], c[i] = math::sincos(x[i]) for i in [0, n), bit for bit (s or c may be x), in the
/// copy kvq::active_isa() chose. Host only.
inline void sincos_n(const float* x, float* s, float* c, std::size_t n) {
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) {
    detail::sincos_n_x86_64_v3(x, s, c, n);
    return;
  }
#endif
  detail::sincos_n_body(x, s, c, n);
}

}  // namespace math
}  // namespace kvq
