/// \file
/// kvq/format/decode.hpp — minifloat code -> exact float or double value.
///
/// Every value of every kvq format is exactly representable in float (ue8m0's
/// 2^-127 is a float subnormal), so decode is exact. NaN codes decode to a quiet
/// NaN carrying the code's sign bit; bits above the format's width are ignored.
#pragma once

#include <cstdint>
#include <type_traits>

#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/format/formats.hpp>

namespace kvq {

/// True if `code` is a NaN of format F (bits above F's width are ignored).
template <class F>
KVQ_HD constexpr bool is_nan_code(std::uint8_t code) noexcept {
  using T = format_of_t<F>;
  code = static_cast<std::uint8_t>(code & T::code_mask);
  const std::uint8_t mag = static_cast<std::uint8_t>(code & T::magnitude_mask);
  if constexpr (T::special == specials::fnuz) return code == T::sign_mask;
  else if constexpr (T::special == specials::finite_nan) return mag == T::magnitude_mask;
  else if constexpr (T::special == specials::ieee) return mag > T::inf_code;
  else return false;
}

/// True if `code` is +Inf or -Inf of format F (only IEEE-style formats have Inf).
template <class F>
KVQ_HD constexpr bool is_inf_code(std::uint8_t code) noexcept {
  using T = format_of_t<F>;
  if constexpr (T::has_inf) return (code & T::magnitude_mask) == T::inf_code;
  else return false;
}

/// The exact value of `code` in format F, as float (default) or double.
template <class F, class T = float>
KVQ_HD constexpr T decode(std::uint8_t code) noexcept {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kvq::decode returns float or double");
  using Fm = format_of_t<F>;
  using U = typename ieee_layout<T>::uint;
  constexpr int M = Fm::mantissa_bits;
  code = static_cast<std::uint8_t>(code & Fm::code_mask);
  const bool neg = (code & Fm::sign_mask) != 0;
  const U sign_bit = neg ? (U(1) << (ieee_layout<T>::total_bits - 1)) : U(0);
  if (is_nan_code<Fm>(code)) {
    const U qnan = static_cast<U>(((U(1) << (ieee_layout<T>::exponent_bits + 1)) - 1)
                                  << (ieee_layout<T>::mantissa_bits - 1));
    return bit_cast<T>(static_cast<U>(qnan | sign_bit));
  }
  if (is_inf_code<Fm>(code)) {
    const U inf = static_cast<U>(((U(1) << ieee_layout<T>::exponent_bits) - 1) << ieee_layout<T>::mantissa_bits);
    return bit_cast<T>(static_cast<U>(inf | sign_bit));
  }
  const int mag = code & Fm::magnitude_mask;
  const int e = mag >> M;
  const int m = mag & ((1 << M) - 1);
  int sig = 0;
  int p = 0;
  if (Fm::has_subnormals && e == 0) {
    sig = m;
    p = Fm::emin - M;
  } else {
    sig = (1 << M) | m;
    p = e - Fm::bias - M;
  }
  // sig * 2^p: sig < 2^8 converts exactly, and the product is a format value,
  // hence exactly representable in T.
  const T v = static_cast<T>(sig) * exact_pow2<T>(p);
  return bit_cast<T>(static_cast<U>(bit_cast<U>(v) | sign_bit));
}

}  // namespace kvq
