/// \file
/// kvq/core/math.hpp — deterministic elementary functions: exp, exp2, log, log2
/// (float and double), sin, cos, sincos (float), and the turn-based sin/cos used by the
/// Box–Muller generator.
///
/// Why: glibc's expf, CUDA's expf (which goes through the approximate ex2.approx unit)
/// and MSVC's expf are three different functions. kvq needs the same bits on every host
/// and device compiler, so it carries its own, built only from IEEE-754 basic operations
/// (+ - * /, sqrt, fma — all correctly rounded on every IEEE platform and on the GPU
/// without fast-math) and integer bit manipulation. Nothing here depends on the
/// rounding-mode environment beyond the default round-to-nearest-even, nor on FTZ/DAZ
/// (kvq keeps denormals on both sides).
///
/// This header only needs config.hpp and core/bits.hpp, so the lower layers
/// (inject/, metrics/) may include it.
///
/// Accuracy (proved by tests/attention/test_math*.cpp):
/// ~~~
///  - float exp, exp2, log, log2, sin, cos: at most 1 ulp from the correctly rounded
///    result for every float input (exhaustive test over the whole used range against
///    a correctly rounded oracle: glibc's double functions, with Boost.Multiprecision
///    deciding the inputs whose double result lies near a float rounding boundary).
///    They are computed in double (about 2^-60 relative error before the final
///    rounding), so the float result is correctly rounded except where the exact value
///    lies within ~2^-30 ulp of a rounding boundary; the exhaustive test counts those.
///  - double exp, exp2, log, log2: < 1 ulp (double-double argument reduction and
///    final step), checked on many random and edge inputs against cpp_bin_float_50.
/// ~~~
/// Special values follow C99 Annex F: exp(NaN)=NaN, exp(+inf)=+inf, exp(-inf)=+0,
/// overflow -> +inf, underflow -> subnormal or +0 (correctly rounded); log(+-0)=-inf,
/// log(x<0)=NaN, log(+inf)=+inf, log(1)=+0; sin(+-inf)=cos(+-inf)=NaN, sin(-0)=-0.
///
/// Methods (the standard ones; no code taken from any library):
/// ~~~
///  - exp: x = k ln2 + r, |r| <= ~0.35, with ln2 split in a 32-bit head (k*ln2_hi exact
///    for |k| < 2^21) and a tail; r carried as a double-double; e^r = 1 + r + r^2 Q(r)
///    with the Taylor coefficients 1/n!, n = 2..13 (truncation < 2^-57); the sum
///    1 + r is formed exactly (two_sum), the rest added once. Scaling by 2^k goes in
///    two exact steps plus one final rounding so subnormal results round once.
///  - exp2: x = k + f, |f| <= 1/2 exact; r = f ln2 as double-double (fma), same core.
///  - log: x = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1 exact, s = f/(2+f),
///    log(1+f) = f - f^2/2 + s (f^2/2 + R(s^2)), R(z) = sum_{j=1..11} 2 z^j/(2j+1)
///    (truncation < 2^-60); f - f^2/2 formed exactly (fma, two_sum); the result of
///    k ln2 + log(1+f) is kept as a double-double. log2 = k + log(1+f) * (1/ln2) in
///    double-double, so log2 of a power of two is exact.
///  - sin/cos (float): |x| <= pi/4 is used directly; otherwise Payne–Hanek reduction
///    with an integer window of 128 bits of 2/pi (exact integer arithmetic, valid for
///    every finite float), giving r in [-pi/4, pi/4] as a double-double and the
///    quadrant; Taylor polynomials to r^19 / r^18.
/// ~~~
#pragma once

#include <cmath>
#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>

namespace kvq {
namespace math {
namespace detail {

// ---------------------------------------------------------------------------
// IEEE helpers usable on host and device.

KVQ_HD inline double fma_d(double a, double b, double c) {
#if KVQ_DEVICE_PASS
  return ::fma(a, b, c);
#else
  return std::fma(a, b, c);  // correctly rounded (hardware or glibc's exact emulation)
#endif
}

KVQ_HD inline float fma_f(float a, float b, float c) {
#if KVQ_DEVICE_PASS
  return ::fmaf(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

KVQ_HD inline double sqrt_d(double x) {
#if KVQ_DEVICE_PASS
  return ::sqrt(x);  // IEEE correctly rounded (nvcc default -prec-sqrt=true)
#else
  return std::sqrt(x);
#endif
}

KVQ_HD inline float sqrt_f(float x) {
#if KVQ_DEVICE_PASS
  return ::sqrtf(x);
#else
  return std::sqrt(x);
#endif
}

KVQ_HD constexpr std::uint64_t bits(double x) { return kvq::bit_cast<std::uint64_t>(x); }
KVQ_HD constexpr std::uint32_t bits(float x) { return kvq::bit_cast<std::uint32_t>(x); }
KVQ_HD constexpr double double_from_bits(std::uint64_t u) { return kvq::bit_cast<double>(u); }
KVQ_HD constexpr float float_from_bits(std::uint32_t u) { return kvq::bit_cast<float>(u); }

KVQ_HD constexpr double inf_d() { return double_from_bits(0x7ff0000000000000ULL); }
KVQ_HD constexpr double nan_d() { return double_from_bits(0x7ff8000000000000ULL); }
KVQ_HD constexpr float inf_f() { return float_from_bits(0x7f800000u); }
KVQ_HD constexpr float nan_f() { return float_from_bits(0x7fc00000u); }

using kvq::is_finite;
using kvq::is_nan;

/// 2^p for p in [-1022, 1023] (normal doubles), from bits.
KVQ_HD constexpr double pow2_d(int p) {
  return double_from_bits(static_cast<std::uint64_t>(p + 1023) << 52);
}

/// Round-to-nearest-even integer of |x| < 2^51 via the 1.5*2^52 shifter. The two
/// operations are separate IEEE roundings (contraction is off); no libm call.
KVQ_HD inline double round_int(double x) {
  constexpr double shifter = 6755399441055744.0;  // 1.5 * 2^52
  const double t = x + shifter;
  return t - shifter;
}

/// Double -> float with round-to-nearest-even, overflow to +-inf done explicitly
/// (a C++ conversion of an out-of-range value is undefined behaviour).
KVQ_HD inline float to_float(double y) {
  // float max + half an ulp: (2 - 2^-24) * 2^127. Values at or above it round to
  // infinity (the tie goes to the even neighbour, which is infinity).
  constexpr double limit = 340282356779733661637539395458142568448.0;
  if (y >= limit) return inf_f();
  if (y <= -limit) return -inf_f();
  return static_cast<float>(y);
}

// Double-double helpers (exact error-free transformations).
struct dd {
  double hi, lo;
};

KVQ_HD inline dd two_sum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  const double err = (a - (s - bb)) + (b - bb);
  return {s, err};
}

/// |a| >= |b| (or a == 0).
KVQ_HD inline dd fast_two_sum(double a, double b) {
  const double s = a + b;
  const double err = b - (s - a);
  return {s, err};
}

KVQ_HD inline dd two_prod(double a, double b) {
  const double p = a * b;
  return {p, fma_d(a, b, -p)};
}

// ---------------------------------------------------------------------------
// Constants (each checked against Boost.Multiprecision in tests/attention/test_math.cpp).

// ln2 split: the head has 32 significant bits, so k*head is exact for |k| < 2^21.
constexpr double ln2_head = 0x1.62e42feep-1;
constexpr double ln2_tail = 0x1.a39ef35793c76p-33;
// ln2 as a double-double (53 + 53 bits).
constexpr double ln2_hi = 0x1.62e42fefa39efp-1;
constexpr double ln2_lo = 0x1.abc9e3b39803fp-56;
constexpr double inv_ln2_hi = 0x1.71547652b82fep+0;  // 1/ln2 = log2(e)
constexpr double inv_ln2_lo = 0x1.777d0ffda0d24p-56;
constexpr double pio2_hi = 0x1.921fb54442d18p+0;
constexpr double pio2_lo = 0x1.1a62633145c07p-54;
constexpr double twopi_hi = 0x1.921fb54442d18p+2;
constexpr double twopi_lo = 0x1.1a62633145c07p-52;

/// Bits of 2/pi after the binary point, most significant first (b_1 .. b_256).
/// Two zero words in front stand for the integer part and the padding the window
/// extraction needs for small arguments.
KVQ_HD constexpr std::uint32_t two_over_pi_word(int i) {
  // i = 0, 1: padding (bits with index <= 0 of 2/pi are zero); i >= 2: b_{32(i-2)+1}...
  constexpr std::uint32_t table[10] = {0x00000000u, 0x00000000u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u,
                                       0xf534ddc0u, 0xdb629599u, 0x3c439041u, 0xfe5163abu, 0xdebbc561u};
  return table[i];
}

// ---------------------------------------------------------------------------
// exp core: e^(r_hi + r_lo) for |r| <= ~0.35, returned as a double (not yet scaled).
KVQ_HD inline double exp_core(double r_hi, double r_lo) {
  // Q(r) = sum_{n=2}^{13} r^(n-2)/n!   (1/n! correctly rounded by the compiler).
  constexpr double c2 = 1.0 / 2.0, c3 = 1.0 / 6.0, c4 = 1.0 / 24.0, c5 = 1.0 / 120.0, c6 = 1.0 / 720.0,
                   c7 = 1.0 / 5040.0, c8 = 1.0 / 40320.0, c9 = 1.0 / 362880.0, c10 = 1.0 / 3628800.0,
                   c11 = 1.0 / 39916800.0, c12 = 1.0 / 479001600.0, c13 = 1.0 / 6227020800.0;
  const double r = r_hi;
  double q = c13;
  q = c12 + r * q;
  q = c11 + r * q;
  q = c10 + r * q;
  q = c9 + r * q;
  q = c8 + r * q;
  q = c7 + r * q;
  q = c6 + r * q;
  q = c5 + r * q;
  q = c4 + r * q;
  q = c3 + r * q;
  q = c2 + r * q;
  const double t = (r * r) * q;               // r^2 Q(r), |t| < 0.07
  const dd s = two_sum(1.0, r);                // 1 + r exactly
  const double tail = s.lo + (t + (r_lo + r_lo * r));  // e^(r+lo) ~ e^r (1 + lo)
  return s.hi + tail;
}

/// y * 2^k with one rounding (y in [0.5, 2), k any integer in [-1100, 1100]).
KVQ_HD inline double scale_pow2(double y, int k) {
  if (k > 1000) return (y * pow2_d(1000)) * pow2_d(k - 1000);      // may overflow to inf: correct
  if (k < -1000) return (y * pow2_d(k + 1000)) * pow2_d(-1000);    // first step exact, one rounding
  return y * pow2_d(k);
}

/// R = R(z) = sum_{j=1}^{11} 2 z^j / (2j+1) in Horner's order: log_core's series, written once
/// for the scalar function and its lane copies (T: double, or a GCC vector of doubles,
/// whose operations are the same ones lane by lane; T{} + a11 is a11 exactly).
template <class T>
KVQ_HD inline void log_series(const T& z, T& R) {
  constexpr double a1 = 2.0 / 3.0, a2 = 2.0 / 5.0, a3 = 2.0 / 7.0, a4 = 2.0 / 9.0, a5 = 2.0 / 11.0,
                   a6 = 2.0 / 13.0, a7 = 2.0 / 15.0, a8 = 2.0 / 17.0, a9 = 2.0 / 19.0, a10 = 2.0 / 21.0,
                   a11 = 2.0 / 23.0;
  R = T{} + a11;
  R = a10 + z * R;
  R = a9 + z * R;
  R = a8 + z * R;
  R = a7 + z * R;
  R = a6 + z * R;
  R = a5 + z * R;
  R = a4 + z * R;
  R = a3 + z * R;
  R = a2 + z * R;
  R = a1 + z * R;
  R = z * R;
}

// log core: log(x) = k ln2 + log(1+f) as a double-double, for finite x > 0.
// Returns k separately and log(1+f) as a double-double so log2 can add k exactly.
struct log_parts {
  int k;
  dd l;  // log(1+f), f = m - 1, m in [sqrt(1/2), sqrt(2))
};

KVQ_HD inline log_parts log_core(double x) {
  std::uint64_t u = bits(x);
  int k = 0;
  if ((u >> 52) == 0) {  // subnormal: scale by 2^54 (exact)
    x = x * 18014398509481984.0;
    u = bits(x);
    k = -54;
  }
  k += static_cast<int>(u >> 52) - 1023;
  double m = double_from_bits((u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);  // [1, 2)
  if (m > 1.4142135623730951) {  // sqrt(2) rounded; the choice only needs to be consistent
    m = m * 0.5;
    k += 1;
  }
  const double f = m - 1.0;  // exact (Sterbenz)
  const double s = f / (2.0 + f);
  const double z = s * s;
  double R;
  log_series(z, R);
  const dd ff = two_prod(f, f);
  const double h_hi = 0.5 * ff.hi;  // exact
  const double h_lo = 0.5 * ff.lo;  // exact (no underflow: f is 0 or >= 2^-53)
  const double corr = s * (h_hi + R);
  const dd a = two_sum(f, -h_hi);
  const double lo = (a.lo - h_lo) + corr;
  return {k, fast_two_sum(a.hi, lo)};
}

// ---------------------------------------------------------------------------
// sin/cos core on a reduced argument r = r_hi + r_lo, |r| <= pi/4 (+ tiny).
KVQ_HD inline double sin_core(double r_hi, double r_lo) {
  // S(z) = sum_{j=1}^{9} (-1)^j z^(j-1) / (2j+1)!, sin r = r + r z S(z)
  constexpr double s1 = -1.0 / 6.0, s2 = 1.0 / 120.0, s3 = -1.0 / 5040.0, s4 = 1.0 / 362880.0,
                   s5 = -1.0 / 39916800.0, s6 = 1.0 / 6227020800.0, s7 = -1.0 / 1307674368000.0,
                   s8 = 1.0 / 355687428096000.0, s9 = -1.0 / 121645100408832000.0;
  const double z = r_hi * r_hi;
  double S = s9;
  S = s8 + z * S;
  S = s7 + z * S;
  S = s6 + z * S;
  S = s5 + z * S;
  S = s4 + z * S;
  S = s3 + z * S;
  S = s2 + z * S;
  S = s1 + z * S;
  return r_hi + (r_lo + (r_hi * z) * S);
}

KVQ_HD inline double cos_core(double r_hi, double r_lo) {
  // cos r = 1 - z/2 + z^2 C(z), C(z) = sum_{j=2}^{9} (-1)^j z^(j-2) / (2j)!
  constexpr double c2 = 1.0 / 24.0, c3 = -1.0 / 720.0, c4 = 1.0 / 40320.0, c5 = -1.0 / 3628800.0,
                   c6 = 1.0 / 479001600.0, c7 = -1.0 / 87178291200.0, c8 = 1.0 / 20922789888000.0,
                   c9 = -1.0 / 6402373705728000.0;
  const double z = r_hi * r_hi;
  double C = c9;
  C = c8 + z * C;
  C = c7 + z * C;
  C = c6 + z * C;
  C = c5 + z * C;
  C = c4 + z * C;
  C = c3 + z * C;
  C = c2 + z * C;
  const double hz = 0.5 * z;
  const double w = 1.0 - hz;
  const double corr = ((1.0 - w) - hz) + ((z * z) * C - r_hi * r_lo);
  return w + corr;
}

/// Payne–Hanek reduction of a finite float |x| > pi/4: x = (4j + q) pi/2 + r with
/// q in 0..3 and |r| <= pi/4 (to ~2^-100 absolute).
struct reduced {
  int q;
  dd r;
};

KVQ_HD constexpr std::uint64_t two_over_pi_bits64(int p) {
  // 64 bits of the padded table starting at bit position p >= 0 (MSB first).
  const int w = p >> 5;
  const int o = p & 31;
  const std::uint64_t a = (static_cast<std::uint64_t>(two_over_pi_word(w)) << 32) | two_over_pi_word(w + 1);
  if (o == 0) return a;
  return (a << o) | (static_cast<std::uint64_t>(two_over_pi_word(w + 2)) >> (32 - o));
}

KVQ_HD inline reduced reduce_pio2(float ax) {
  const std::uint32_t u = bits(ax);
  const int e = static_cast<int>(u >> 23);  // ax is normal here (> pi/4)
  const std::uint64_t M = (u & 0x7fffffu) | 0x800000u;
  const int E = e - 127 - 23;  // ax = M 2^E
  // Window of W = 128 bits of 2/pi starting at b_{E-1}; bit b_i sits at padded
  // position i - 1 + 64. E >= -24 here, so the position is >= 38.
  const int pos = E - 1 - 1 + 64;
  const std::uint64_t B_hi = two_over_pi_bits64(pos);
  const std::uint64_t B_lo = two_over_pi_bits64(pos + 64);
  // P = M * B mod 2^128.
  const std::uint64_t lo_lo = (B_lo & 0xffffffffu) * M;  // < 2^56
  const std::uint64_t lo_hi = (B_lo >> 32) * M;          // < 2^56
  const std::uint64_t P_lo = lo_lo + (lo_hi << 32);
  const std::uint64_t carry = (lo_hi >> 32) + (P_lo < lo_lo ? 1u : 0u);
  const std::uint64_t P_hi = B_hi * M + carry;
  // x * 2/pi mod 4 = P / 2^126: two integer bits, then 126 fraction bits.
  int q = static_cast<int>(P_hi >> 62);
  std::uint64_t G_hi = (P_hi << 2) | (P_lo >> 62);
  std::uint64_t G_lo = P_lo << 2;
  double sign = 1.0;
  if (G_hi >> 63) {  // fraction >= 1/2: take the next quadrant, fraction - 1
    q = (q + 1) & 3;
    G_lo = ~G_lo + 1u;
    G_hi = ~G_hi + (G_lo == 0 ? 1u : 0u);
    sign = -1.0;
  }
  // f = G / 2^128 in [0, 1/2]: split into exact pieces of 53, 53 and 22 bits.
  const double d1 = static_cast<double>(G_hi >> 11) * 0x1p-53;
  const double d2 = static_cast<double>(((G_hi & 0x7ffu) << 42) | (G_lo >> 22)) * 0x1p-106;
  const double d3 = static_cast<double>(G_lo & 0x3fffffu) * 0x1p-128;
  const dd s12 = two_sum(d1, d2);
  const dd f = fast_two_sum(s12.hi, s12.lo + d3);
  // r = f * pi/2 as a double-double
  const dd p = two_prod(f.hi, pio2_hi);
  const double lo = p.lo + (f.hi * pio2_lo + f.lo * pio2_hi);
  const dd r = fast_two_sum(p.hi, lo);
  return {q, {sign * r.hi, sign * r.lo}};
}

KVQ_HD inline void sincos_reduced(float x, double& s, double& c) {
  const float ax = x < 0.0f ? -x : x;
  double sv, cv;
  if (ax <= 0.785398163397448309615f) {  // float(pi/4) = pi/4 + 2.2e-8: no reduction needed
    const double r = static_cast<double>(ax);
    sv = sin_core(r, 0.0);
    cv = cos_core(r, 0.0);
  } else {
    const reduced red = reduce_pio2(ax);
    const double ss = sin_core(red.r.hi, red.r.lo);
    const double cc = cos_core(red.r.hi, red.r.lo);
    switch (red.q) {
      case 0: sv = ss; cv = cc; break;
      case 1: sv = cc; cv = -ss; break;
      case 2: sv = -ss; cv = -cc; break;
      default: sv = -cc; cv = ss; break;
    }
  }
  s = x < 0.0f ? -sv : (x == 0.0f ? static_cast<double>(x) : sv);  // keeps sin(-0) = -0
  c = cv;
}

}  // namespace detail

// ===========================================================================
// double precision

/// e^x, < 1 ulp.
KVQ_HD inline double exp(double x) {
  if (detail::is_nan(x)) return x + x;
  if (x > 710.0) return detail::inf_d();
  if (x < -746.0) return 0.0;
  const double kd = detail::round_int(x * detail::inv_ln2_hi);
  const int k = static_cast<int>(kd);
  const double hi = x - kd * detail::ln2_head;  // exact: kd*ln2_head exact, Sterbenz for k != 0
  const detail::dd lp = detail::two_prod(kd, detail::ln2_tail);
  const detail::dd r = detail::two_sum(hi, -lp.hi);
  const double r_lo = r.lo - lp.lo;
  const detail::dd rr = detail::fast_two_sum(r.hi, r_lo);
  return detail::scale_pow2(detail::exp_core(rr.hi, rr.lo), k);
}

/// 2^x, < 1 ulp; exact for integer x in range.
KVQ_HD inline double exp2(double x) {
  if (detail::is_nan(x)) return x + x;
  if (x >= 1024.0) return detail::inf_d();
  if (x < -1080.0) return 0.0;
  const double kd = detail::round_int(x);
  const double f = x - kd;  // exact, |f| <= 1/2
  const detail::dd p = detail::two_prod(f, detail::ln2_hi);
  const detail::dd r = detail::fast_two_sum(p.hi, p.lo + f * detail::ln2_lo);
  return detail::scale_pow2(detail::exp_core(r.hi, r.lo), static_cast<int>(kd));
}

/// Natural logarithm, < 1 ulp.
KVQ_HD inline double log(double x) {
  if (detail::is_nan(x)) return x + x;
  if (x < 0.0) return detail::nan_d();
  if (x == 0.0) return -detail::inf_d();
  if (!detail::is_finite(x)) return x;
  const detail::log_parts lp = detail::log_core(x);
  if (lp.k == 0) return lp.l.hi + lp.l.lo;
  const double kd = static_cast<double>(lp.k);
  const double t_hi = kd * detail::ln2_head;  // exact
  const detail::dd s = detail::two_sum(t_hi, lp.l.hi);
  const double lo = s.lo + (lp.l.lo + kd * detail::ln2_tail);
  return s.hi + lo;
}

/// Base-2 logarithm, < 1 ulp; exact for powers of two.
KVQ_HD inline double log2(double x) {
  if (detail::is_nan(x)) return x + x;
  if (x < 0.0) return detail::nan_d();
  if (x == 0.0) return -detail::inf_d();
  if (!detail::is_finite(x)) return x;
  const detail::log_parts lp = detail::log_core(x);
  // log(1+f) / ln2 as a double-double
  const detail::dd p = detail::two_prod(lp.l.hi, detail::inv_ln2_hi);
  const double plo = p.lo + (lp.l.hi * detail::inv_ln2_lo + lp.l.lo * detail::inv_ln2_hi);
  const detail::dd l2 = detail::fast_two_sum(p.hi, plo);
  if (lp.k == 0) return l2.hi + l2.lo;
  const detail::dd s = detail::two_sum(static_cast<double>(lp.k), l2.hi);
  return s.hi + (s.lo + l2.lo);
}

/// IEEE square root (correctly rounded on every platform), for symmetry.
KVQ_HD inline double sqrt(double x) { return detail::sqrt_d(x); }
/// IEEE square root of a float (correctly rounded).
KVQ_HD inline float sqrt(float x) { return detail::sqrt_f(x); }

/// sin(2 pi t) and cos(2 pi t) for t in turns (any finite t with |t| < 2^52; the
/// generators pass t in [0, 1)). The reduction t - q/4 is exact, so there is no pi
/// reduction error. About 1 ulp (tested against Boost.Multiprecision).
KVQ_HD inline void sincos_turns(double t, double& s, double& c) {
  const double qd = detail::round_int(4.0 * t);  // exact product
  const double f = t - 0.25 * qd;                // exact, |f| <= 1/8
  const detail::dd p = detail::two_prod(f, detail::twopi_hi);
  const detail::dd r = detail::fast_two_sum(p.hi, p.lo + f * detail::twopi_lo);
  const double ss = detail::sin_core(r.hi, r.lo);
  const double cc = detail::cos_core(r.hi, r.lo);
  const long long q = static_cast<long long>(qd) & 3;
  switch (q) {
    case 0: s = ss; c = cc; break;
    case 1: s = cc; c = -ss; break;
    case 2: s = -ss; c = -cc; break;
    default: s = -cc; c = ss; break;
  }
}

// ===========================================================================
// float: computed in double, rounded once.

/// e^x in float: computed in double and rounded once (at most 1 ulp from the correctly
/// rounded result for every float; NaN in, NaN out).
KVQ_HD inline float exp(float x) {
  if (detail::is_nan(x)) return x + x;
  return detail::to_float(exp(static_cast<double>(x)));
}

/// 2^x in float: computed in double and rounded once (at most 1 ulp; NaN in, NaN out).
KVQ_HD inline float exp2(float x) {
  if (detail::is_nan(x)) return x + x;
  return detail::to_float(exp2(static_cast<double>(x)));
}

/// Natural logarithm in float: computed in double and rounded once (at most 1 ulp;
/// log(+-0) = -inf, log(x < 0) = NaN).
KVQ_HD inline float log(float x) {
  if (detail::is_nan(x)) return x + x;
  return static_cast<float>(log(static_cast<double>(x)));  // |log| < 104: in range
}

/// Base-2 logarithm in float: computed in double and rounded once (at most 1 ulp; exact
/// for powers of two).
KVQ_HD inline float log2(float x) {
  if (detail::is_nan(x)) return x + x;
  return static_cast<float>(log2(static_cast<double>(x)));
}

/// sin(x) into `s` and cos(x) into `c` for a float in radians: Payne–Hanek reduction
/// for |x| > pi/4 (valid for every finite float), evaluated in double, each rounded once
/// (at most 1 ulp). Inf or NaN input gives NaN in both.
KVQ_HD inline void sincos(float x, float& s, float& c) {
  if (!detail::is_finite(x)) {
    s = c = detail::is_nan(x) ? x + x : detail::nan_f();
    return;
  }
  double sd, cd;
  detail::sincos_reduced(x, sd, cd);
  s = static_cast<float>(sd);
  c = static_cast<float>(cd);
}

/// sin(x) for x in radians (see sincos).
KVQ_HD inline float sin(float x) {
  float s, c;
  sincos(x, s, c);
  return s;
}

/// cos(x) for x in radians (see sincos).
KVQ_HD inline float cos(float x) {
  float s, c;
  sincos(x, s, c);
  return c;
}

}  // namespace math
}  // namespace kvq
