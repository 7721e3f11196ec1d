/// \file
/// kvq/block/parallel.hpp — the checked quantize / dequantize of kvq/block/api.hpp on
/// several threads.
///
/// The blocks are cut into `threads` contiguous chunks (boundaries at multiples of 64
/// blocks, kvq::detail::parallel_chunks) and each chunk runs the single-thread loop of
/// api.hpp: the host fast path of block/bulk.hpp where the recipe has one, the per-block
/// functor otherwise. Blocks are independent given the tensor-level constants, so every
/// code, scale and zero point is the same for every thread count; only the time changes.
///
/// The tensor value (NVFP4 two-level: the tensor amax) is one value for the whole input,
/// computed before any block is quantized: each thread takes the amax of its chunk with
/// the recipe's NaN rule, and the calling thread combines the partial results with the
/// same rule. A max is exact and order-independent, and each rule composes over a
/// partition (ignore: the max of the non-NaN partials; NaN only if all elements are NaN:
/// only if every partial is NaN; NaN if any element is: if any partial is), so the
/// result is the single-thread tensor_amax bit for bit, whatever the thread count
/// (tests/block/test_block_parallel.cpp). Host only (std::thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <kvq/block/api.hpp>
#include <kvq/block/bulk.hpp>
#include <kvq/block/scheme.hpp>
#include <kvq/core/error.hpp>
#include <kvq/core/parallel.hpp>

namespace kvq {
namespace block {

namespace detail {
/// Blocks per partition unit: the fast paths' chunk, so a thread's range is whole chunks.
constexpr std::size_t parallel_grain_blocks = 64;

/// tensor_amax<In>(x, n, rule) on `threads` threads, bit for bit (see the file comment).
template <class In>
float tensor_amax_parallel(const char* where, const typename In::storage* x, std::size_t n, amax_nan rule,
                           unsigned threads) {
  constexpr std::size_t grain = 4096;  // elements per unit of the partition; only the time depends on it
  const std::size_t units = (n + grain - 1) / grain;
  if (units <= 1 || threads <= 1) return tensor_amax<In>(x, n, rule);
  const std::size_t k = threads < units ? threads : units;  // chunks, one partial amax each
  const std::size_t step = (units + k - 1) / k * grain;
  std::vector<float> part(k, 0.0f);
  float* pp = part.data();
  // One chunk per thread: chunk c is x[c * step, min(n, (c + 1) * step)).
  kvq::detail::parallel_chunks(where, k, static_cast<unsigned>(k), 1, [=](std::size_t c0, std::size_t c1) noexcept {
    for (std::size_t c = c0; c < c1; ++c) {
      const std::size_t b = c * step;
      const std::size_t e = n - b < step ? n : b + step;
      pp[c] = b < n ? tensor_amax<In>(x + b, e - b, rule) : 0.0f;
    }
  });
  // The partials are |amax| values or the canonical NaN; combining them with the same
  // rule gives the amax of the whole input (file comment). A chunk past the end (possible
  // only when rounding leaves the last chunks empty) contributes +0, which changes no
  // max, and is left out of the all-NaN test below by counting only real chunks.
  std::size_t real = 0;
  while (real < k && real * step < n) ++real;
  return tensor_amax<f32_input>(part.data(), real, rule);
}
}  // namespace detail

/// quantize(s, x, n, tv, ...) on `threads` threads (the calling thread and threads - 1
/// more), with the same outputs and return value for every thread count. Throws
/// std::invalid_argument, writing nothing, on what quantize() rejects and on threads == 0;
/// std::system_error if a thread cannot be started.
template <class S, class In = f32_input>
float quantize_parallel(const S& s, const typename In::storage* x, std::size_t n, tensor_value tv,
                        std::uint8_t* codes, std::size_t code_bytes, typename S::scale_type* scales,
                        std::size_t n_scales, float* zeros, std::size_t n_zeros, unsigned threads) {
  const std::string who = std::string("kvq::block::quantize_parallel(") + S::name + ")";
  detail::check_sizes("quantize_parallel", s, n, code_bytes, codes == nullptr, n_scales, scales == nullptr, n_zeros,
                      zeros == nullptr);
  if (n > 0 && x == nullptr) throw std::invalid_argument(who + ": input is null");
  if (threads == 0) throw std::invalid_argument(who + ": threads is 0 (use 1 for the calling thread only)");
  float t = 1.0f;
  if (S::tensor != tensor_kind::none)
    t = tv.from_data ? S::tensor_value_from_amax(
                           detail::tensor_amax_parallel<In>(who.c_str(), x, n, S::tensor_amax_rule, threads))
                     : tv.value;
  const quantize_block_fn<S, In> f{s, S::prepare(t), x, codes, S::scale_bytes ? scales : nullptr,
                                   S::has_zero_point ? zeros : nullptr};
  const std::size_t nb = n / s.block_size();
  kvq::detail::parallel_chunks(who.c_str(), nb, threads, detail::parallel_grain_blocks,
                               [&f](std::size_t b, std::size_t e) noexcept {
#if defined(KVQ_BLOCK_SIMD)
                                 if constexpr (bulk::has_quantize<S, In>::value) {
                                   const std::size_t bs = f.scheme.block_size();
                                   bulk::quantize_blocks(f.scheme, f.params, f.x + b * bs, e - b,
                                                         f.codes + b * bs * S::storage_bits / 8, f.scales + b);
                                   return;
                                 }
#endif
                                 for (std::size_t i = b; i < e; ++i) f(i);
                               });
  return t;
}

/// quantize_parallel without zero points (every recipe but KIVI).
template <class S, class In = f32_input>
float quantize_parallel(const S& s, const typename In::storage* x, std::size_t n, tensor_value tv,
                        std::uint8_t* codes, std::size_t code_bytes, typename S::scale_type* scales,
                        std::size_t n_scales, unsigned threads) {
  return quantize_parallel<S, In>(s, x, n, tv, codes, code_bytes, scales, n_scales, nullptr, 0, threads);
}

/// dequantize(s, ...) on `threads` threads, with the same output for every thread count.
/// Throws std::invalid_argument, writing nothing, on what dequantize() rejects and on
/// threads == 0; std::system_error if a thread cannot be started.
template <class S>
void dequantize_parallel(const S& s, const std::uint8_t* codes, std::size_t code_bytes,
                         const typename S::scale_type* scales, std::size_t n_scales, const float* zeros,
                         std::size_t n_zeros, float tensor_val, float* out, std::size_t n, unsigned threads) {
  const std::string who = std::string("kvq::block::dequantize_parallel(") + S::name + ")";
  detail::check_sizes("dequantize_parallel", s, n, code_bytes, codes == nullptr, n_scales, scales == nullptr, n_zeros,
                      zeros == nullptr);
  if (n > 0 && out == nullptr) throw std::invalid_argument(who + ": output is null");
  if (threads == 0) throw std::invalid_argument(who + ": threads is 0 (use 1 for the calling thread only)");
  const dequantize_block_fn<S> f{s, S::prepare(S::tensor == tensor_kind::none ? 1.0f : tensor_val), codes,
                                 S::scale_bytes ? scales : nullptr, S::has_zero_point ? zeros : nullptr, out};
  const std::size_t nb = n / s.block_size();
  kvq::detail::parallel_chunks(who.c_str(), nb, threads, detail::parallel_grain_blocks,
                               [&f](std::size_t b, std::size_t e) noexcept {
#if defined(KVQ_BLOCK_SIMD)
                                 if constexpr (bulk::has_dequantize<S>::value) {
                                   const std::size_t bs = f.scheme.block_size();
                                   bulk::dequantize_blocks(f.scheme, f.params, f.codes + b * bs * S::storage_bits / 8,
                                                           f.scales + b, e - b, f.out + b * bs);
                                   return;
                                 }
#endif
                                 for (std::size_t i = b; i < e; ++i) f(i);
                               });
}

}  // namespace block
}  // namespace kvq
