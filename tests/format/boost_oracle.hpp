// tests/format/boost_oracle.hpp — a second reference encoder, in exact arithmetic.
//
// Unlike oracle.hpp (which searches the sorted code table), this one rounds the
// input to the format's precision the textbook way: with e = max(floor(log2|x|), emin)
// and quantum 2^(e-M), n = |x| / quantum is split into an integer part and a fraction
// in Boost.Multiprecision binary floating point. Every step is exact: dividing by a
// power of two only moves the exponent, floor(n) and n - floor(n) have no more
// significant bits than n (at most 53, a double's), and the working precision is 128
// bits. The rounded significand then gives the code's exponent and mantissa fields
// directly, without any table. Special inputs (NaN, Inf) and the sign/zero policy are
// shared with oracle.hpp because they are policy, not arithmetic.
#pragma once

#include <boost/multiprecision/cpp_bin_float.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "oracle.hpp"

namespace kvqtest {

using exact_float = boost::multiprecision::number<
    boost::multiprecision::cpp_bin_float<128, boost::multiprecision::digit_base_2>, boost::multiprecision::et_off>;

// Largest finite magnitude code from the special-value encoding alone.
inline unsigned max_finite_mag_code(const layout& L) {
  switch (L.special) {
    case sp::ieee: return (((1u << L.ebits) - 1u) << L.mbits) - 1u;
    case sp::finite_nan: return L.mag_mask() - 1u;
    default: return L.mag_mask();
  }
}

// Value of a magnitude code computed in exact arithmetic from its fields.
inline exact_float exact_value(const layout& L, unsigned mag) {
  const int e = static_cast<int>(mag >> L.mbits);
  const int m = static_cast<int>(mag & ((1u << L.mbits) - 1u));
  if (e == 0 && L.subnormals) return ldexp(exact_float(m), 1 - L.bias - L.mbits);
  return ldexp(exact_float((1 << L.mbits) + m), e - L.bias - L.mbits);
}

// Encode a double exactly. `T` supplies the NaN/Inf/sign policy only.
inline unsigned boost_encode(const table& T, double x, rmode r, ovf o) {
  const layout& L = T.L;
  if (std::isnan(x) || std::isinf(x)) return T.encode(x, r, o);
  const bool neg = L.is_signed && std::signbit(x);
  enum { rn, rna, rz, ra } mm;
  switch (r) {
    case rmode::nearest_even: mm = rn; break;
    case rmode::nearest_away: mm = rna; break;
    case rmode::toward_zero: mm = rz; break;
    case rmode::up: mm = neg ? rz : ra; break;
    default: mm = neg ? ra : rz; break;
  }
  const int M = L.mbits;
  // Unbiased exponent of the lowest binade: 1-bias with subnormals, else -bias
  // (ue8m0: field 0 is 2^-127).
  const int emin = L.subnormals ? 1 - L.bias : -L.bias;
  const exact_float a = abs(exact_float(x));
  unsigned mag = 0;
  if (x != 0.0) {
    const int lg = std::ilogb(x);
    const int e = lg < emin ? emin : lg;
    const exact_float n = ldexp(a, M - e);  // |x| / 2^(e-M)
    const exact_float fl = floor(n);
    const exact_float frac = n - fl;
    const long s0 = fl.convert_to<long>();  // < 2^(M+1): at most 8 bits
    bool up = false;
    if (frac != 0) {
      switch (mm) {
        case rz: up = false; break;
        case ra: up = true; break;
        case rna: up = frac >= exact_float(0.5); break;
        default: up = frac > exact_float(0.5) || (frac == exact_float(0.5) && (s0 & 1) != 0); break;
      }
    }
    const long s = s0 + (up ? 1 : 0);
    const exact_float value = ldexp(exact_float(s), e - M);
    const unsigned maxc = max_finite_mag_code(L);
    if (value > exact_value(L, maxc)) {
      mag = (mm == rz || o == ovf::satfinite) ? maxc : T.inf_code;
    } else if (s == 0) {
      mag = 0;  // zero, or ue8m0's smallest code (no zero: clamp)
    } else if (s < (1L << M)) {
      mag = static_cast<unsigned>(s);  // subnormal binade: field 0
    } else {
      // s in [2^M, 2^(M+1)]: a carry (s == 2^(M+1)) moves into the next binade.
      const int ee = (s == (2L << M)) ? e + 1 : e;
      const long mant = (s == (2L << M)) ? 0 : s - (1L << M);
      const int field = ee + L.bias;
      mag = (static_cast<unsigned>(field) << M) | static_cast<unsigned>(mant);
    }
  } else {
    mag = 0;
  }
  return T.with_sign(mag, neg);
}

}  // namespace kvqtest
