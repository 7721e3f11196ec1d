// tests/format/oracle.hpp — the independent reference encoder of the format tests.
//
// Nothing here includes or calls the code under test. The value of every code is
// derived from the bit layout (sign | exponent | mantissa, bias, special encoding) as
// written in the OCP 8-bit floating point spec v1.0 and the OCP MX spec v1.0
// (section 5.3: E2M1, E2M3, E3M2, E8M0), and an input is encoded by locating it
// between two neighbouring entries of the sorted table of representable magnitudes
// and applying the rounding rule literally:
//   nearest_even  the nearer neighbour; on a tie the one with the even significand
//   nearest_away  the nearer neighbour; on a tie the larger magnitude
//   toward_zero / up / down   the neighbour in that direction
// All comparisons are exact: inputs are float or double, table entries and the
// midpoints between them are short dyadic rationals, exactly representable in double.
//
// Edge policy (kvq's contract, = CUDA's host conversion functions where CUDA has the
// configuration; see docs/design.md "Conversion contract"):
//   * Overflow follows IEEE 754-2019 7.4: a rounding result above max finite (as if the
//     exponent range were unbounded, so the next value above max is max + ulp(max)) is
//     "overflow". Under satfinite it becomes ±max. Under nosat it becomes ±Inf (IEEE
//     formats) or NaN (finite-NaN and FNUZ formats); toward_zero never overflows a finite
//     input, and up/down overflow only in their own direction. ±Inf inputs are exact:
//     ±max under satfinite, ±Inf / NaN under nosat. Formats without Inf/NaN (e2m1,
//     e3m2, e2m3) always saturate.
//   * NaN input: a float NaN gives the positive NaN code (0x7F e4m3/e5m2/ue4m3, 0xFF
//     ue8m0, 0x80 fnuz); a double NaN keeps its sign in e4m3/e5m2 and e5m2 takes the top
//     payload bit (see nan_for_double); formats without NaN give +max (CUDA: "NaN input
//     values result in positive MAXNORM").
//   * Zero and underflow keep the sign (-tiny -> -0) except in FNUZ formats (no -0:
//     0x80 is the NaN) and unsigned formats.
//   * Unsigned formats (ue8m0, ue4m3) encode |x|: the sign is ignored.
//   * ue8m0 has no zero: anything below 2^-127 (including 0) becomes 0x00 = 2^-127.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace kvqtest {

enum class sp { ieee, finite_nan, fnuz, none };

// Written from the format table of docs/design.md, not taken from kvq's traits (the tests
// check kvq's traits against these).
struct layout {
  const char* name;
  bool is_signed;
  int ebits, mbits, bias;
  sp special;
  bool subnormals;
  constexpr int bits() const { return (is_signed ? 1 : 0) + ebits + mbits; }
  constexpr unsigned code_count() const { return 1u << bits(); }
  constexpr unsigned sign_mask() const { return is_signed ? 1u << (ebits + mbits) : 0u; }
  constexpr unsigned mag_mask() const { return (1u << (ebits + mbits)) - 1u; }
};

inline constexpr layout L_e4m3{"e4m3", true, 4, 3, 7, sp::finite_nan, true};
inline constexpr layout L_e5m2{"e5m2", true, 5, 2, 15, sp::ieee, true};
inline constexpr layout L_e3m2{"e3m2", true, 3, 2, 3, sp::none, true};
inline constexpr layout L_e2m3{"e2m3", true, 2, 3, 1, sp::none, true};
inline constexpr layout L_e2m1{"e2m1", true, 2, 1, 1, sp::none, true};
inline constexpr layout L_ue8m0{"ue8m0", false, 8, 0, 127, sp::finite_nan, false};
inline constexpr layout L_ue4m3{"ue4m3", false, 4, 3, 7, sp::finite_nan, true};
inline constexpr layout L_e4m3fnuz{"e4m3fnuz", true, 4, 3, 8, sp::fnuz, true};
inline constexpr layout L_e5m2fnuz{"e5m2fnuz", true, 5, 2, 16, sp::fnuz, true};
inline constexpr layout L_e4m3b11fnuz{"e4m3b11fnuz", true, 4, 3, 11, sp::fnuz, true};

// The oracle's own rounding/overflow enums (mapped onto kvq's in the tests).
enum class rmode { nearest_even, toward_zero, up, down, nearest_away };
enum class ovf { satfinite, nosat };

inline const char* name_of(rmode r) {
  switch (r) {
    case rmode::nearest_even: return "nearest_even";
    case rmode::toward_zero: return "toward_zero";
    case rmode::up: return "up";
    case rmode::down: return "down";
    case rmode::nearest_away: return "nearest_away";
  }
  return "?";
}
inline const char* name_of(ovf o) { return o == ovf::satfinite ? "satfinite" : "nosat"; }

inline bool is_nan_code(const layout& L, unsigned code) {
  const unsigned mag = code & L.mag_mask();
  const unsigned e = mag >> L.mbits;
  const unsigned m = mag & ((1u << L.mbits) - 1u);
  const unsigned eall = (1u << L.ebits) - 1u;
  switch (L.special) {
    case sp::ieee: return e == eall && m != 0;
    case sp::finite_nan: return mag == L.mag_mask();
    case sp::fnuz: return code == L.sign_mask();
    case sp::none: return false;
  }
  return false;
}

inline bool is_inf_code(const layout& L, unsigned code) {
  const unsigned mag = code & L.mag_mask();
  return L.special == sp::ieee && (mag >> L.mbits) == (1u << L.ebits) - 1u &&
         (mag & ((1u << L.mbits) - 1u)) == 0;
}

// Value of a code from the bit layout: (-1)^s * 2^(E-bias) * (1 + M/2^m) for normal
// codes, (-1)^s * 2^(1-bias) * (M/2^m) for E == 0 when the format has subnormals.
inline double ref_decode(const layout& L, unsigned code) {
  if (is_nan_code(L, code)) return std::numeric_limits<double>::quiet_NaN();
  const bool neg = (code & L.sign_mask()) != 0;
  const unsigned mag = code & L.mag_mask();
  const int e = static_cast<int>(mag >> L.mbits);
  const int m = static_cast<int>(mag & ((1u << L.mbits) - 1u));
  double v;
  if (is_inf_code(L, code)) {
    v = std::numeric_limits<double>::infinity();
  } else if (e == 0 && L.subnormals) {
    v = std::ldexp(static_cast<double>(m), 1 - L.bias - L.mbits);
  } else {
    v = std::ldexp(static_cast<double>((1 << L.mbits) + m), e - L.bias - L.mbits);
  }
  return neg ? -v : v;
}

// The sorted table of non-negative finite magnitudes and the special codes.
struct table {
  layout L;
  std::vector<double> v;       // ascending
  std::vector<unsigned> code;  // code[i] encodes v[i]
  unsigned max_code = 0;       // positive max finite
  unsigned nan_code = 0;       // positive NaN (or +max when no NaN)
  unsigned inf_code = 0;       // positive Inf (ieee) / NaN / max: the nosat overflow result
  double next_above_max = 0;   // max + ulp(max): where rounding would go beyond max
  bool has_neg_zero = false;

  explicit table(const layout& l) : L(l) {
    std::vector<std::pair<double, unsigned>> entries;
    for (unsigned c = 0; c < L.code_count(); ++c) {
      if (c & L.sign_mask()) continue;
      const double d = ref_decode(L, c);
      if (std::isnan(d) || std::isinf(d)) continue;
      entries.emplace_back(d, c);
    }
    std::sort(entries.begin(), entries.end());
    for (auto& e : entries) {
      v.push_back(e.first);
      code.push_back(e.second);
    }
    max_code = code.back();
    // Spacing of the top binade: 2^(E_max - bias - m).
    const int emax_field = static_cast<int>(max_code >> L.mbits);
    next_above_max = v.back() + std::ldexp(1.0, emax_field - L.bias - L.mbits);
    switch (L.special) {
      case sp::ieee: nan_code = L.mag_mask(); inf_code = ((1u << L.ebits) - 1u) << L.mbits; break;
      case sp::finite_nan: nan_code = L.mag_mask(); inf_code = nan_code; break;
      case sp::fnuz: nan_code = L.sign_mask(); inf_code = nan_code; break;
      case sp::none: nan_code = max_code; inf_code = max_code; break;
    }
    has_neg_zero = L.is_signed && L.special != sp::fnuz;
  }

  std::size_t size() const { return v.size(); }

  // Largest i with v[i] <= a, or -1 when a < v[0] (only ue8m0, which has no zero).
  long find(double a) const {
    const auto it = std::upper_bound(v.begin(), v.end(), a);
    return static_cast<long>(it - v.begin()) - 1;
  }

  // Magnitude code for a >= 0 (finite, not NaN), given i = find(a). `away` is the
  // direction of a directed rounding on the magnitude; `neg` the sign of the input.
  unsigned select(long i, double a, bool neg, rmode r, ovf o) const {
    // Rounding mode on the magnitude.
    enum { rn, rna, rz, ra } mm;
    switch (r) {
      case rmode::nearest_even: mm = rn; break;
      case rmode::nearest_away: mm = rna; break;
      case rmode::toward_zero: mm = rz; break;
      case rmode::up: mm = neg ? rz : ra; break;
      default: mm = neg ? ra : rz; break;  // down
    }
    unsigned mag;
    if (i < 0) {
      mag = code[0];  // below the smallest value of a zero-less format: clamp
    } else if (a == v[static_cast<std::size_t>(i)]) {
      mag = code[static_cast<std::size_t>(i)];
    } else {
      const std::size_t k = static_cast<std::size_t>(i);
      const bool top = k + 1 == v.size();
      const double lo = v[k];
      const double hi = top ? next_above_max : v[k + 1];
      const double mid = 0.5 * (lo + hi);  // exact: lo, hi have few significant bits
      bool up;
      switch (mm) {
        case rz: up = false; break;
        case ra: up = true; break;
        case rna: up = a >= mid; break;
        default:
          if (a != mid) {
            up = a > mid;
          } else {
            // Tie: the neighbour whose significand (implicit bit included) is even.
            // Neighbouring significands differ by one, so it is enough to look at lo;
            // above max the virtual neighbour max+ulp continues the same sequence.
            up = !significand_even(code[k]);
          }
          break;
      }
      if (!up) {
        mag = code[k];
      } else if (!top) {
        mag = code[k + 1];
      } else {
        mag = (o == ovf::satfinite) ? max_code : inf_code;  // overflow
      }
    }
    return with_sign(mag, neg);
  }

  // Parity of the significand of a magnitude code. With mantissa bits it is the
  // mantissa LSB (= code LSB). ue8m0 has no mantissa: its significand is the implicit
  // 1, always odd, so a tie rounds up (as PyTorch c10/util/Float8_e8m0fnu.h,
  // fp8e8m0fnu_from_fp32_value: "LSB is the implied mantissa bit").
  bool significand_even(unsigned mag) const {
    if (L.mbits > 0) return (mag & 1u) == 0;
    return L.subnormals && mag == 0;
  }

  unsigned with_sign(unsigned mag, bool neg) const {
    if (!L.is_signed || !neg) return mag;
    if (L.special == sp::fnuz && mag == 0) return 0;      // no -0 in FNUZ
    if (L.special == sp::fnuz && mag == nan_code) return mag;  // the one NaN is unsigned
    return mag | L.sign_mask();
  }

  unsigned encode_inf(bool neg, ovf o) const {
    return with_sign(o == ovf::satfinite ? max_code : inf_code, neg);
  }

  // Code of a non-NaN input (double; floats convert exactly).
  unsigned encode_number(double x, rmode r, ovf o) const {
    const bool neg = L.is_signed && std::signbit(x);
    const double a = std::fabs(x);
    if (std::isinf(a)) return encode_inf(neg, o);
    return select(find(a), a, neg, r, o);
  }

  // NaN inputs, as CUDA's host functions treat them. A float NaN is canonicalised to
  // 0x7FFFFFFF first (cuda_fp8.hpp __nv_cvt_float_to_fp8), so it always becomes the
  // positive NaN code; the double entry point keeps the sign and, for e5m2, computes
  // 0x7E | (top mantissa bits of the input) (cuda_fp8.hpp __nv_cvt_double_to_fp8).
  // FP6/FP4: positive max. ue8m0: 0xFF. fnuz: 0x80. ue4m3: 0x7F.
  unsigned nan_for_float() const { return nan_code; }
  unsigned nan_for_double(std::uint64_t bits) const {
    if (!L.is_signed || L.special == sp::none || L.special == sp::fnuz) return nan_code;
    const unsigned sign = (bits >> 63) ? L.sign_mask() : 0u;
    if (L.special == sp::ieee) {
      const unsigned top = static_cast<unsigned>(bits >> (52 - L.mbits)) & ((1u << L.mbits) - 1u);
      return inf_code | (1u << (L.mbits - 1)) | top | sign;
    }
    return nan_code | sign;
  }

  unsigned encode(float x, rmode r, ovf o) const {
    if (std::isnan(x)) return nan_for_float();
    return encode_number(static_cast<double>(x), r, o);
  }
  unsigned encode(double x, rmode r, ovf o) const {
    if (std::isnan(x)) {
      std::uint64_t b;
      std::memcpy(&b, &x, sizeof b);
      return nan_for_double(b);
    }
    return encode_number(x, r, o);
  }
};

inline std::string hex(unsigned long long v, int digits) {
  static const char* d = "0123456789abcdef";
  std::string s = "0x";
  for (int i = digits - 1; i >= 0; --i) s += d[(v >> (4 * i)) & 0xF];
  return s;
}

inline float float_from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline double double_from_bits(std::uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}
inline std::uint64_t bits_of(double d) {
  std::uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

}  // namespace kvqtest
