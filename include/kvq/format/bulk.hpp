// kvq/format/bulk.hpp — encode/decode whole arrays.
//
// The loops instantiate the scalar kvq::encode with compile-time policies so the
// compiler can vectorise them; they are bit-identical to the scalar function
// (that *is* the function). Decoding goes through a 256-entry table.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/format/decode.hpp>
#include <kvq/format/encode.hpp>

namespace kvq {
namespace detail {

template <class F, rounding R, overflow O, class X>
KVQ_HD constexpr std::uint8_t encode_fixed(X x) noexcept {
  return encode_impl<F, false>(x, R, O, 0u);
}

template <class F, rounding R, overflow O, class X>
inline void encode_loop(const X* in, std::size_t n, std::uint8_t* out) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = encode_fixed<F, R, O>(in[i]);
}

template <class F, rounding R, class X>
inline void encode_loop_o(const X* in, std::size_t n, std::uint8_t* out, overflow o) noexcept {
  if (o == overflow::satfinite) encode_loop<F, R, overflow::satfinite>(in, n, out);
  else encode_loop<F, R, overflow::nosat>(in, n, out);
}

template <class F, class T>
struct decode_table {
  std::array<T, 256> v{};
  constexpr decode_table() noexcept {
    for (int c = 0; c < 256; ++c) v[static_cast<std::size_t>(c)] = decode<F, T>(static_cast<std::uint8_t>(c));
  }
};
template <class F, class T>
inline constexpr decode_table<F, T> decode_table_v{};

}  // namespace detail

/// out[i] = encode<F>(in[i], r, o) for i < n. X is float or double.
template <class F, class X>
inline void encode_n(const X* in, std::size_t n, std::uint8_t* out, rounding r = rounding::nearest_even,
                     overflow o = overflow::satfinite) noexcept {
  using Fm = format_of_t<F>;
  switch (r) {
    case rounding::nearest_even: detail::encode_loop_o<Fm, rounding::nearest_even>(in, n, out, o); break;
    case rounding::toward_zero: detail::encode_loop_o<Fm, rounding::toward_zero>(in, n, out, o); break;
    case rounding::up: detail::encode_loop_o<Fm, rounding::up>(in, n, out, o); break;
    case rounding::down: detail::encode_loop_o<Fm, rounding::down>(in, n, out, o); break;
    case rounding::nearest_away: detail::encode_loop_o<Fm, rounding::nearest_away>(in, n, out, o); break;
  }
}

/// out[i] = decode<F, T>(in[i]) for i < n, through a 256-entry table.
template <class F, class T = float>
inline void decode_n(const std::uint8_t* in, std::size_t n, T* out) noexcept {
  const auto& table = detail::decode_table_v<format_of_t<F>, T>.v;
  for (std::size_t i = 0; i < n; ++i) out[i] = table[in[i]];
}

}  // namespace kvq
