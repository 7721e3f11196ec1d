/// \file
/// kvq/mma/batch.hpp — many tensor-core inner products in one checked call (dot_batch),
/// evaluated by dot_fast (kvq/mma/fast.hpp: the bits of dot), and the format checks it
/// uses: representable_fast (the answer of representable() in api.hpp, from the float's
/// bits) and a branch-free form of it over arrays that compilers vectorise.
#pragma once

#include <kvq/core/isa.hpp>
#include <kvq/mma/api.hpp>
#include <kvq/mma/block_fma.hpp>
#include <kvq/mma/fast.hpp>
#include <kvq/mma/params.hpp>
#include <kvq/mma/presets.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kvq::mma {

namespace detail {

// representable(x, ...) of api.hpp from the float bits, without the double arithmetic.
inline bool representable_fast(std::uint32_t u, int mantissa_bits, int min_exp, int max_exp, std::uint64_t max_sig,
                               bool has_inf) noexcept {
  if ((u & 0x7f800000u) == 0x7f800000u) return (u & 0x7fffffu) != 0 || has_inf;
  if ((u & 0x7fffffffu) == 0) return true;
  std::uint32_t sig;
  int e;
  bool dropped;
  decode_fast(u, mantissa_bits, min_exp, sig, e, dropped);
  if (dropped || sig == 0) return false;
  return e < max_exp || (e == max_exp && sig <= max_sig);
}

}  // namespace detail

namespace detail {

// representable_fast(u, MB, MIN_EXP, MAX_EXP, MAX_SIG, INF) without branches, so that a
// loop over an array vectorises.
template <int MB, int MIN_EXP, int MAX_EXP, std::uint32_t MAX_SIG, bool INF>
KVQ_FORCEINLINE std::uint32_t not_representable_bits(std::uint32_t u) noexcept {
  const std::uint32_t top = (u & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
  const std::uint32_t special_bad = ((u & 0x7fffffu) == 0 ? 1u : 0u) & (INF ? 0u : 1u);  // Inf without Inf
  const std::uint32_t zero = (u & 0x7fffffffu) == 0 ? 1u : 0u;
  // decode_fast, inline: the format's exponent e and the shift s of the float significand.
  const int biased = static_cast<int>((u >> 23) & 0xffu);
  const std::uint32_t m = biased != 0 ? ((u & 0x7fffffu) | 0x800000u) : (u & 0x7fffffu);
  const int x2 = biased != 0 ? biased - 150 : -149;
  const int t = biased != 0 ? biased - 127 : -127;
  const int e = t > MIN_EXP ? t : MIN_EXP;
  int s = e - MB - x2;
  s = s > 31 ? 31 : s;
  const std::uint32_t sig = m >> s;
  const std::uint32_t dropped = (m & ((std::uint32_t{1} << s) - 1u)) != 0 ? 1u : 0u;
  const std::uint32_t fin_bad =
      dropped | (sig == 0 ? 1u : 0u) | (e > MAX_EXP ? 1u : 0u) | ((e == MAX_EXP ? 1u : 0u) & (sig > MAX_SIG ? 1u : 0u));
  // Bitwise, not short-circuit operators: the loop over an array vectorises.
  return (top & special_bad) | ((1u - top) & (1u - zero) & fin_bad);
}

template <int MB, int MIN_EXP, int MAX_EXP, std::uint32_t MAX_SIG, bool INF>
KVQ_FORCEINLINE bool all_representable_body(const float* x, std::size_t n) noexcept {
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad |= not_representable_bits<MB, MIN_EXP, MAX_EXP, MAX_SIG, INF>(bits_of(x[i]));
  return bad == 0;
}

#if defined(KVQ_ISA_DISPATCH)
// all_representable_body compiled for x86-64-v3 (kvq/core/isa.hpp): its per-lane variable
// shifts are one AVX2 instruction, a scalar loop without it.
template <int MB, int MIN_EXP, int MAX_EXP, std::uint32_t MAX_SIG, bool INF>
KVQ_TARGET_X86_64_V3 bool all_representable_x86_64_v3(const float* x, std::size_t n) noexcept {
  return all_representable_body<MB, MIN_EXP, MAX_EXP, MAX_SIG, INF>(x, n);
}
#endif

template <int MB, int MIN_EXP, int MAX_EXP, std::uint32_t MAX_SIG, bool INF>
inline bool all_representable(const float* x, std::size_t n) noexcept {
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) return all_representable_x86_64_v3<MB, MIN_EXP, MAX_EXP, MAX_SIG, INF>(x, n);
#endif
  return all_representable_body<MB, MIN_EXP, MAX_EXP, MAX_SIG, INF>(x, n);
}

// True when every x[0..n) is a value of input format f (representable_fast).
inline bool all_representable(const float* x, std::size_t n, input_format f) noexcept {
  switch (f) {
    case input_format::e4m3: return all_representable<3, -6, 8, 14, false>(x, n);
    case input_format::e5m2: return all_representable<2, -14, 15, 7, true>(x, n);
    case input_format::bf16: return all_representable<7, -126, 127, 255, true>(x, n);
    case input_format::fp16: return all_representable<10, -14, 15, 2047, true>(x, n);
  }
  return false;
}

// True when every x[0..n) is a value of output format f.
inline bool all_representable(const float* x, std::size_t n, output_format f) noexcept {
  if (f == output_format::fp16) return all_representable<10, -14, 15, 2047, true>(x, n);
  return all_representable<23, -126, 127, 0xffffffu, true>(x, n);
}

}  // namespace detail

namespace detail {

// d[r] = dot_fast(p, in, a + r·K, b + r·K, K, c[r]) for r < n (c null: 0).
KVQ_FORCEINLINE void dot_rows(const block_fma_params& p, input_format in, const float* a, const float* b,
                              const float* c, std::size_t n, int K, float* d) noexcept {
  const std::size_t k = static_cast<std::size_t>(K);
  for (std::size_t r = 0; r < n; ++r) d[r] = dot_fast(p, in, a + r * k, b + r * k, K, c != nullptr ? c[r] : 0.0f);
}

#if defined(KVQ_ISA_DISPATCH)
// dot_rows compiled for x86-64-v3 (kvq/core/isa.hpp).
KVQ_TARGET_X86_64_V3 inline void dot_rows_x86_64_v3(const block_fma_params& p, input_format in, const float* a,
                                                    const float* b, const float* c, std::size_t n, int K,
                                                    float* d) noexcept {
  dot_rows(p, in, a, b, c, n, K, d);
}
#endif

}  // namespace detail

/// representable(x, f) of api.hpp (same answer), from x's bits without double arithmetic.
inline bool representable_fast(float x, input_format f) noexcept {
  const input_format_info i = info(f);
  const std::uint64_t all_ones = (std::uint64_t{2} << i.mantissa_bits) - 1;
  const std::uint32_t u = detail::bits_of(x);
  if (f == input_format::e4m3) return detail::representable_fast(u, i.mantissa_bits, i.min_exp, i.max_exp, all_ones - 1, false);
  return detail::representable_fast(u, i.mantissa_bits, i.min_exp, i.max_exp, all_ones, true);
}

/// representable(x, f) of api.hpp for an output format (same answer).
inline bool representable_fast(float x, output_format f) noexcept {
  const output_format_info i = info(f);
  return detail::representable_fast(detail::bits_of(x), i.mantissa_bits, i.min_exp, i.max_exp,
                                     (std::uint64_t{2} << i.mantissa_bits) - 1, true);
}

/// d[r] = dot(p, in, a + r·K, b + r·K, K, c[r]) for r < n_products: n_products inner
/// products of length K, a and b row-major (row r at offset r·K), c null for c = 0. The
/// same bits as dot of api.hpp, element for element. Throws std::invalid_argument (and
/// writes nothing) when K < 0, a pointer is null while n_products·K (or n_products) > 0,
/// the preset is outside the supported range, or an element is not a value of its format
/// (the message names the product and element).
inline void dot_batch(const preset_info& p, input_format in, const float* a, const float* b, const float* c,
                      std::size_t n_products, int K, float* d) {
  if (K < 0) throw std::invalid_argument("kvq::mma::dot_batch: K = " + std::to_string(K) + " is negative");
  if (p.params.k <= 0 || p.params.k > max_block || p.params.frac_bits > max_frac_bits)
    throw std::invalid_argument("kvq::mma::dot_batch: block size or window out of the supported range");
  if (n_products == 0) return;
  if (d == nullptr) throw std::invalid_argument("kvq::mma::dot_batch: d is null");
  if (K > 0 && (a == nullptr || b == nullptr)) throw std::invalid_argument("kvq::mma::dot_batch: a or b is null");
  const std::size_t k = static_cast<std::size_t>(K);
  if (k != 0 && n_products > static_cast<std::size_t>(-1) / k)
    throw std::invalid_argument("kvq::mma::dot_batch: n_products x K overflows");
  const bool all_ok = detail::all_representable(a, n_products * k, in) &&
                      detail::all_representable(b, n_products * k, in) &&
                      (c == nullptr || detail::all_representable(c, n_products, p.params.out));
  // Only when some element is bad: find the first one and name it.
  for (std::size_t r = 0; r < n_products && !all_ok; ++r) {
    for (std::size_t i = 0; i < k; ++i) {
      if (!representable_fast(a[r * k + i], in))
        throw std::invalid_argument("kvq::mma::dot_batch: product " + std::to_string(r) + ": a[" + std::to_string(i) +
                                    "] is not a " + name(in) + " value");
      if (!representable_fast(b[r * k + i], in))
        throw std::invalid_argument("kvq::mma::dot_batch: product " + std::to_string(r) + ": b[" + std::to_string(i) +
                                    "] is not a " + name(in) + " value");
    }
    if (c != nullptr && !representable_fast(c[r], p.params.out))
      throw std::invalid_argument("kvq::mma::dot_batch: product " + std::to_string(r) + ": c is not a " +
                                  name(p.params.out) + " value");
  }
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) return detail::dot_rows_x86_64_v3(p.params, in, a, b, c, n_products, K, d);
#endif
  detail::dot_rows(p.params, in, a, b, c, n_products, K, d);
}

}  // namespace kvq::mma
