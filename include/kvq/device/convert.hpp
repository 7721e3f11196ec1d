/// \file
/// kvq/device/convert.hpp — element-wise encode/decode on any Thrust device system.
///
/// Each algorithm is one thrust::transform over a functor of kvq/device/functors.hpp,
/// so element i of the output depends on element i of the input only: the result is
/// the same on CPP, OMP, TBB and CUDA, for any thread count, and equal to the serial
/// emulator's. The iterators' system selects the backend (pass thrust::device_vector
/// iterators for the device system); the overloads taking an execution policy first
/// (thrust::device, thrust::host, thrust::cuda::par.on(stream), ...) choose it explicitly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>

#include <kvq/device/functors.hpp>
#include <kvq/device/system.hpp>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>
#include <thrust/type_traits/is_execution_policy.h>

namespace kvq {
namespace device {
namespace detail {
template <class It>
using value_t = typename std::iterator_traits<It>::value_type;

template <class It>
constexpr void check_float_input() {
  static_assert(std::is_same<value_t<It>, float>::value || std::is_same<value_t<It>, double>::value,
                "kvq::device: inputs to encode are float or double");
}
template <class P>
using if_policy = std::enable_if_t<thrust::is_execution_policy<std::decay_t<P>>::value, int>;
}  // namespace detail

// ---- encode ------------------------------------------------------------------

/// out[i] = kvq::encode<F>(first[i], r, o) for i in [0, last - first).
template <class F, class Policy, class InIt, class OutIt, detail::if_policy<Policy> = 0>
OutIt encode(Policy&& exec, InIt first, InIt last, OutIt out, rounding r = rounding::nearest_even,
             overflow o = overflow::satfinite) {
  detail::check_float_input<InIt>();
  return thrust::transform(exec, first, last, out, encode_fn<F, detail::value_t<InIt>>{r, o});
}

/// encode() on the iterators' own system.
template <class F, class InIt, class OutIt>
OutIt encode(InIt first, InIt last, OutIt out, rounding r = rounding::nearest_even,
             overflow o = overflow::satfinite) {
  detail::check_float_input<InIt>();
  return thrust::transform(first, last, out, encode_fn<F, detail::value_t<InIt>>{r, o});
}

/// out[i] = kvq::encode_stochastic<F>(first[i], bits[i], o): the caller supplies one
/// 32-bit random word per element (e.g. from a counter-based generator).
template <class F, class InIt, class BitsIt, class OutIt>
OutIt encode_stochastic(InIt first, InIt last, BitsIt bits, OutIt out, overflow o = overflow::satfinite) {
  detail::check_float_input<InIt>();
  return thrust::transform(first, last, bits, out, encode_stochastic_fn<F, detail::value_t<InIt>>{o});
}

// ---- decode ------------------------------------------------------------------

/// out[i] = kvq::decode<F, T>(first[i]); T = float (default) or double.
template <class F, class T = float, class Policy, class InIt, class OutIt, detail::if_policy<Policy> = 0>
OutIt decode(Policy&& exec, InIt first, InIt last, OutIt out) {
  return thrust::transform(exec, first, last, out, decode_fn<F, T>{});
}

/// decode() on the iterators' own system.
template <class F, class T = float, class InIt, class OutIt>
OutIt decode(InIt first, InIt last, OutIt out) {
  return thrust::transform(first, last, out, decode_fn<F, T>{});
}

/// out[i] = decode(encode(first[i])) in the input's type ("fake quantization").
template <class F, class InIt, class OutIt>
OutIt round_trip(InIt first, InIt last, OutIt out, rounding r = rounding::nearest_even,
                 overflow o = overflow::satfinite) {
  detail::check_float_input<InIt>();
  return thrust::transform(first, last, out, round_trip_fn<F, detail::value_t<InIt>>{r, o});
}

// ---- packed 4-bit codes ------------------------------------------------------

/// Encodes n = last - first values of a 4-bit format (e2m1) two per byte, element 2i
/// in the low nibble; writes (n + 1) / 2 bytes and returns the end of the output.
template <class F, class InIt, class OutIt>
OutIt encode_packed(InIt first, InIt last, OutIt out, rounding r = rounding::nearest_even,
                    overflow o = overflow::satfinite) {
  detail::check_float_input<InIt>();
  static_assert(format_of_t<F>::bits <= 4, "kvq::device::encode_packed: 4-bit formats only");
  const auto n = static_cast<std::size_t>(last - first);
  const encode_pack4_fn<F, InIt, detail::value_t<InIt>> fn{first, n, r, o};
  return thrust::transform(thrust::counting_iterator<std::size_t>(0), thrust::counting_iterator<std::size_t>((n + 1) / 2),
                           out, fn);
}

/// Decodes n values from a packed 4-bit stream (see encode_packed).
template <class F, class T = float, class PackedIt, class OutIt>
OutIt decode_packed(PackedIt packed, std::size_t n, OutIt out) {
  return thrust::transform(thrust::counting_iterator<std::size_t>(0), thrust::counting_iterator<std::size_t>(n), out,
                           decode_unpack4_fn<F, PackedIt, T>{packed});
}

}  // namespace device
}  // namespace kvq
