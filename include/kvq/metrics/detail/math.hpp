// kvq/metrics/detail/math.hpp — the few elementary functions the metrics need, built
// from IEEE add/mul/div and bit operations only, so they give the same bits on every
// host and device compiler (glibc's log and CUDA's log are different functions).
//
// log_d is a local stand-in until kvq/attention/math.hpp provides the library's
// double-precision log. Accuracy: a few ulp (the metrics only need determinism and
// ~1e-15 relative accuracy). sqrt is IEEE correctly rounded everywhere (IEEE 754
// requires it; nvcc's default -prec-sqrt=true keeps it so on the device).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include <kvq/config.hpp>

namespace kvq::metrics::detail {

KVQ_HD inline std::uint64_t bits_of(double x) {
#if KVQ_DEVICE_PASS
  return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

KVQ_HD inline double from_bits(std::uint64_t u) {
#if KVQ_DEVICE_PASS
  return __longlong_as_double(static_cast<long long>(u));
#else
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

KVQ_HD inline double sqrt_d(double x) {
#if KVQ_DEVICE_PASS
  return ::sqrt(x);
#else
  return std::sqrt(x);
#endif
}

KVQ_HD inline double abs_d(double x) { return from_bits(bits_of(x) & 0x7fffffffffffffffULL); }

KVQ_HD inline bool is_finite_d(double x) {
  return (bits_of(x) & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL;
}

// Natural logarithm of a double.
// Method: x = 2^k * m with m in [sqrt(1/2), sqrt(2)); f = m - 1 (exact, Sterbenz);
// s = f / (2 + f), so log(m) = 2 atanh(s) = 2s + s*R(s^2) with
// R(z) = sum_{j>=1} 2 z^j / (2j+1) (|s| <= 0.1716, z <= 0.0295: 11 terms leave a
// truncation error below 2^-60 relative). Written as f - f^2/2 + s*(f^2/2 + R), the
// classic arrangement that keeps the large part f exact. k*ln2 is added in two pieces
// (ln2_hi has 32 trailing zero bits, so k*ln2_hi is exact for |k| < 2^20).
// Special cases: log(+0) = -inf, log(x<0) = NaN, log(+inf) = +inf, log(NaN) = NaN.
KVQ_HD inline double log_d(double x) {
  if (!(x == x)) return x;
  if (x < 0.0) return from_bits(0x7ff8000000000000ULL);
  if (x == 0.0) return -from_bits(0x7ff0000000000000ULL);
  if (!is_finite_d(x)) return x;
  std::uint64_t u = bits_of(x);
  int k = 0;
  if ((u >> 52) == 0) {  // subnormal: scale by 2^54 (exact)
    x = x * 18014398509481984.0;
    u = bits_of(x);
    k = -54;
  }
  k += static_cast<int>(u >> 52) - 1023;
  // m = mantissa with exponent 0, i.e. in [1, 2)
  std::uint64_t mbits = (u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
  double m = from_bits(mbits);
  if (m > 1.4142135623730951) {  // move to [sqrt(1/2), sqrt(2))
    m = m * 0.5;
    k += 1;
  }
  const double f = m - 1.0;
  const double s = f / (2.0 + f);
  const double z = s * s;
  double r = 2.0 / 23.0;
  r = r * z + 2.0 / 21.0;
  r = r * z + 2.0 / 19.0;
  r = r * z + 2.0 / 17.0;
  r = r * z + 2.0 / 15.0;
  r = r * z + 2.0 / 13.0;
  r = r * z + 2.0 / 11.0;
  r = r * z + 2.0 / 9.0;
  r = r * z + 2.0 / 7.0;
  r = r * z + 2.0 / 5.0;
  r = r * z + 2.0 / 3.0;
  r = r * z;
  const double hfsq = 0.5 * f * f;
  const double ln2_hi = 6.93147180369123816490e-01;  // 0x3FE62E42FEE00000
  const double ln2_lo = 1.90821492927058770002e-10;  // ln2 - ln2_hi
  const double dk = static_cast<double>(k);
  return dk * ln2_hi + ((f - hfsq) + (s * (hfsq + r) + dk * ln2_lo));
}

}  // namespace kvq::metrics::detail
