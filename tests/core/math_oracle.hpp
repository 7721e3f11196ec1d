// tests/core/math_oracle.hpp — correctly rounded float references for exp, exp2,
// log, log2, sin, cos, independent of kvq's implementation.
//
// The reference for float x is the float nearest to f(x). glibc's double function gives
// y ~ f(x) with an error below a few double ulps; unless y lies within 64 double ulps of
// the midpoint between the two floats around it, rounding y to float is the correctly
// rounded result. In that narrow band (about 2^-23 of the inputs) the exact value is
// compared with the midpoint in Boost.Multiprecision (at 50 digits, or ~1000 bits for
// sin/cos of large arguments, whose reduction needs the extra precision).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <boost/multiprecision/cpp_bin_float.hpp>

namespace kvqtest {

using mp50 = boost::multiprecision::cpp_bin_float_50;
using mp_big = boost::multiprecision::number<boost::multiprecision::cpp_bin_float<320>>;

inline std::uint32_t fbits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float ffrom(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
inline std::uint64_t dbits(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, 8);
  return u;
}

enum class fn { exp, exp2, log, log2, sin, cos };

inline const char* fn_name(fn f) {
  switch (f) {
    case fn::exp: return "exp";
    case fn::exp2: return "exp2";
    case fn::log: return "log";
    case fn::log2: return "log2";
    case fn::sin: return "sin";
    default: return "cos";
  }
}

inline double glibc_eval(fn f, double x) {
  switch (f) {
    case fn::exp: return std::exp(x);
    case fn::exp2: return std::exp2(x);
    case fn::log: return std::log(x);
    case fn::log2: return std::log2(x);
    case fn::sin: return std::sin(x);
    default: return std::cos(x);
  }
}

template <class MP>
MP mp_eval(fn f, const MP& x) {
  using std::exp;
  using std::log;
  using std::sin;
  using std::cos;
  switch (f) {
    case fn::exp: return exp(x);
    case fn::exp2: return exp(x * log(MP(2)));
    case fn::log: return log(x);
    case fn::log2: return log(x) / log(MP(2));
    case fn::sin: return sin(x);
    default: return cos(x);
  }
}

// Statistics of how often the multiprecision tie-breaker was needed.
struct oracle_stats {
  std::uint64_t mp_calls = 0;
};

/// The correctly rounded float f(x), for finite x in the function's domain.
inline float correctly_rounded(fn f, float x, oracle_stats* st = nullptr) {
  const double y = glibc_eval(f, static_cast<double>(x));
  if (std::isnan(y)) return std::numeric_limits<float>::quiet_NaN();
  if (y == 0.0) return static_cast<float>(y);
  if (std::isinf(y)) return static_cast<float>(y);
  const bool neg = y < 0.0;
  const double ay = std::fabs(y);
  constexpr double limit = 340282356779733661637539395458142568448.0;  // FLT_MAX + half ulp
  // floats a <= |y| < b around |y|
  float a;
  if (ay >= 3.4028234663852886e38) {
    a = std::numeric_limits<float>::max();
  } else {
    a = static_cast<float>(ay);
    if (static_cast<double>(a) > ay) a = std::nextafter(a, 0.0f);
  }
  const float b = std::nextafter(a, std::numeric_limits<float>::infinity());
  const double mid = std::isinf(b) ? limit : (static_cast<double>(a) + static_cast<double>(b)) * 0.5;  // exact
  int e;
  std::frexp(mid, &e);
  const double band = std::ldexp(64.0, e - 53);
  float r;
  if (std::fabs(ay - mid) > band) {
    r = ay < mid ? a : b;
  } else {
    if (st) ++st->mp_calls;
    int cmp;
    if ((f == fn::sin || f == fn::cos) && std::fabs(x) > 1024.0f) {
      const mp_big v = abs(mp_eval(f, mp_big(static_cast<double>(x))));
      cmp = v < mp_big(mid) ? -1 : (v > mp_big(mid) ? 1 : 0);
    } else {
      const mp50 v = abs(mp_eval(f, mp50(static_cast<double>(x))));
      cmp = v < mp50(mid) ? -1 : (v > mp50(mid) ? 1 : 0);
    }
    if (cmp < 0) {
      r = a;
    } else if (cmp > 0) {
      r = b;
    } else {
      r = (fbits(a) & 1u) ? b : a;  // exact tie: even
    }
  }
  return neg ? -r : r;
}

/// Distance in ulps between two finite floats (ordered-integer distance).
inline std::int64_t ulp_distance(float p, float q) {
  auto key = [](float v) -> std::int64_t {
    const std::uint32_t u = fbits(v);
    return (u & 0x80000000u) ? -static_cast<std::int64_t>(u & 0x7fffffffu) : static_cast<std::int64_t>(u);
  };
  const std::int64_t d = key(p) - key(q);
  return d < 0 ? -d : d;
}

/// Result of comparing kvq against the oracle at one input.
enum class verdict { exact, one_ulp, bad };

inline verdict judge(float got, float want) {
  if (std::isnan(want)) return std::isnan(got) ? verdict::exact : verdict::bad;
  if (std::isinf(want) || std::isinf(got)) {
    if (got == want) return verdict::exact;
    // 1 ulp next to infinity: FLT_MAX vs inf
    if (std::isinf(want) && std::fabs(got) == std::numeric_limits<float>::max() &&
        std::signbit(got) == std::signbit(want))
      return verdict::one_ulp;
    if (std::isinf(got) && std::fabs(want) == std::numeric_limits<float>::max() &&
        std::signbit(got) == std::signbit(want))
      return verdict::one_ulp;
    return verdict::bad;
  }
  if (fbits(got) == fbits(want)) return verdict::exact;
  if (got == 0.0f && want == 0.0f) return verdict::bad;  // wrong sign of zero
  return ulp_distance(got, want) <= 1 ? verdict::one_ulp : verdict::bad;
}

}  // namespace kvqtest
