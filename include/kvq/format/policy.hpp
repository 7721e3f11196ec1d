/// \file
/// kvq/format/policy.hpp — rounding and overflow policies of a conversion.
#pragma once

#include <stdexcept>
#include <string>

namespace kvq {

/// How a value between two representable neighbours is resolved.
/// `nearest_even` is what every GPU `cvt.rn` conversion does and is the default;
/// the directed modes match IEEE 754 roundTowardZero/Positive/Negative and
/// `nearest_away` is roundTiesToAway. CUDA offers RZ for e2m1/FP6 and RZ/RP for
/// ue8m0; the rest are research modes with the same semantics on every format.
/// Stochastic rounding has its own entry point, kvq::encode_stochastic.
enum class rounding : unsigned char { nearest_even, toward_zero, up, down, nearest_away };

/// What a finite value beyond the largest finite code becomes.
///  - satfinite: the largest finite value of the same sign (PTX `.satfinite`).
///  - nosat: Inf where the format has one (e5m2), else NaN where it has one
///    (e4m3: 0x7F|sign, fnuz: 0x80, ue8m0: 0xFF); formats with neither (e2m1,
///    e3m2, e2m3) always saturate. As in IEEE 754, directed rounding toward the
///    finite side (toward_zero; up for negatives; down for positives) never
///    produces Inf/NaN from a finite input.
enum class overflow : unsigned char { satfinite, nosat };

/// The enumerator's name ("nearest_even", "toward_zero", "up", "down", "nearest_away").
inline constexpr const char* to_string(rounding r) noexcept {
  switch (r) {
    case rounding::nearest_even: return "nearest_even";
    case rounding::toward_zero: return "toward_zero";
    case rounding::up: return "up";
    case rounding::down: return "down";
    case rounding::nearest_away: return "nearest_away";
  }
  return "?";
}

/// The enumerator's name ("satfinite" or "nosat").
inline constexpr const char* to_string(overflow o) noexcept {
  return o == overflow::satfinite ? "satfinite" : "nosat";
}

/// The rounding named `name`: its enumerator name or the PTX suffix (nearest_even|rn,
/// toward_zero|rz, up|ru, down|rd, nearest_away|rna). The one parser of rounding
/// names: the kvq command, the verifier and the Python module all call it.
/// \throws std::invalid_argument naming the accepted names.
inline rounding parse_rounding(const std::string& name) {
  if (name == "nearest_even" || name == "rn") return rounding::nearest_even;
  if (name == "toward_zero" || name == "rz") return rounding::toward_zero;
  if (name == "up" || name == "ru") return rounding::up;
  if (name == "down" || name == "rd") return rounding::down;
  if (name == "nearest_away" || name == "rna") return rounding::nearest_away;
  throw std::invalid_argument("unknown rounding '" + name +
                              "' (nearest_even|rn, toward_zero|rz, up|ru, down|rd, nearest_away|rna)");
}

/// The overflow policy named `name`: satfinite (or sat) or nosat.
/// \throws std::invalid_argument naming the accepted names.
inline overflow parse_overflow(const std::string& name) {
  if (name == "satfinite" || name == "sat") return overflow::satfinite;
  if (name == "nosat") return overflow::nosat;
  throw std::invalid_argument("unknown overflow '" + name + "' (satfinite, nosat)");
}

}  // namespace kvq
