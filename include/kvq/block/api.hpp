/// \file
/// kvq/block/api.hpp — the generic quantize/dequantize over any block scheme.
///
/// Buffer layout (what a GPU kernel author compares against), for n input elements
/// in blocks of B = scheme.block_size() consecutive elements (row-major tensors whose
/// row length is a multiple of B are the same thing: block b = row r, column block c at
/// b = r * (cols / B) + c):
/// ~~~
///   codes   packed_bytes(n, storage_bits) bytes; block b occupies bytes
///           [b*B*bits/8, (b+1)*B*bits/8): e2m1/INT4 two per byte with element 2i in the LOW
///           nibble, INT2 four per byte from bit 0, e4m3/e5m2/FP6/INT8 one byte per element.
///   scales  one per block, row-major: a code byte (NVFP4: e4m3 with sign 0; MX: ue8m0) or
///           an fp32 value (per-token-head, KIVI); none for per-tensor FP8.
///   zeros   one fp32 zero point per block (KIVI: the group minimum), else none.
///   tensor  one fp32 value whose meaning is scheme.tensor (TE: amax; vLLM: k_scale;
///           torchao two-level: per_tensor_scale), else unused.
/// ~~~
///
/// Two levels:
/// ~~~
///  - quantize_block_fn / dequantize_block_fn: unchecked per-block functors on raw
///    pointers, KVQ_HD, no allocation; wrap them in thrust::for_each over block indices.
///  - quantize / dequantize: checked host entry points; on bad sizes they throw
///    std::invalid_argument naming the sizes and write nothing.
///  - `quantized_tensor<S>`: an owning host container with exact memory accounting.
/// ~~~
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <kvq/block/bulk.hpp>
#include <kvq/block/io16.hpp>
#include <kvq/block/pack.hpp>
#include <kvq/block/scheme.hpp>
#include <kvq/config.hpp>
#include <kvq/core/error.hpp>

namespace kvq {
namespace block {

/// Storage sizes of n elements under scheme s (n must be a multiple of the block size).
struct buffer_sizes {
  /// \var blocks
  /// Number of blocks, n / block_size().

  /// \var code_bytes
  /// Bytes of the packed codes, packed_bytes(n, storage_bits).

  /// \var scales
  /// Number of block scales (one per block; 0 without block scales).

  /// \var zeros
  /// Number of zero points (one per block with has_zero_point, else 0).

  /// Number of elements n.
  std::size_t elements = 0, blocks = 0, code_bytes = 0, scales = 0, zeros = 0;
  /// \var zero_bytes
  /// Bytes of the zero points (4 each).

  /// \var tensor_bytes
  /// Bytes of the tensor value: 4, or 0 for tensor_kind::none.

  /// Bytes of the block scales (scales * S::scale_bytes).
  std::size_t scale_bytes = 0, zero_bytes = 0, tensor_bytes = 0;
  /// Every byte the quantized tensor holds: codes + scales + zero points + tensor value.
  constexpr std::size_t total_bytes() const noexcept { return code_bytes + scale_bytes + zero_bytes + tensor_bytes; }
};

/// The buffer sizes of n elements under scheme s (no checks; see the checked API).
template <class S>
KVQ_HD constexpr buffer_sizes sizes_of(const S& s, std::size_t n) noexcept {
  buffer_sizes z;
  const std::size_t bs = s.block_size();
  z.elements = n;
  z.blocks = bs ? n / bs : 0;
  z.code_bytes = packed_bytes(n, S::storage_bits);
  z.scales = S::scale_bytes ? z.blocks : 0;
  z.zeros = S::has_zero_point ? z.blocks : 0;
  z.scale_bytes = z.scales * static_cast<std::size_t>(S::scale_bytes);
  z.zero_bytes = z.zeros * sizeof(float);
  z.tensor_bytes = S::tensor == tensor_kind::none ? 0 : sizeof(float);
  return z;
}

/// Average stored bits per element for long tensors (scale overhead included,
/// the single tensor value excluded), e.g. 4.5 for NVFP4, 4.25 for MXFP4.
template <class S>
constexpr double bits_per_value(const S& s) noexcept {
  const double bs = static_cast<double>(s.block_size());
  return static_cast<double>(S::storage_bits) + 8.0 * static_cast<double>(S::scale_bytes) / bs +
         (S::has_zero_point ? 32.0 / bs : 0.0);
}

/// Tensor amax under a NaN rule (max is exact, so the order does not matter).
template <class In = f32_input>
KVQ_HD inline float tensor_amax(const typename In::storage* x, std::size_t n, amax_nan rule) noexcept {
#if defined(KVQ_BLOCK_SIMD)
  // Host fp32: the 8-lane pass of bulk.hpp, the same bits (tests/block/test_block_bulk.cpp).
  if constexpr (std::is_same<In, f32_input>::value) return bulk::tensor_amax(x, n, rule);
  else
#endif
  return block_amax<In>(x, n, rule);
}

// ----------------------------------------------------------------------------- functors
/// Quantizes block b of a buffer: the KVQ_HD functor of the host loop and the device
/// paths (one call per block index, blocks independent).
template <class S, class In = f32_input>
struct quantize_block_fn {
  /// The scheme.
  S scheme;
  /// Tensor-level constants (S::prepare of the tensor value).
  typename S::params params;
  /// Input elements, block b at x + b * block_size().
  const typename In::storage* x;
  /// Packed output codes, block b at byte b * block_size() * storage_bits / 8.
  std::uint8_t* codes;
  /// Block scales, one per block; may be null when S::scale_bytes == 0.
  typename S::scale_type* scales;  // may be null when S::scale_bytes == 0
  /// Zero points, one per block; may be null unless S::has_zero_point.
  float* zeros;                    // may be null unless S::has_zero_point
  /// Quantizes block b.
  KVQ_HD void operator()(std::size_t b) const noexcept {
    const std::size_t bs = scheme.block_size();
    typename S::scale_type scale_tmp{};
    float zero_tmp = 0.0f;
    scheme.template quantize_block<In>(x + b * bs, params, codes + b * bs * S::storage_bits / 8,
                                       scales ? scales + b : &scale_tmp, zeros ? zeros + b : &zero_tmp);
  }
};

/// Dequantizes block b of a buffer (the counterpart of quantize_block_fn).
template <class S>
struct dequantize_block_fn {
  /// The scheme.
  S scheme;
  /// Tensor-level constants (S::prepare of the tensor value).
  typename S::params params;
  /// Packed codes, block b at byte b * block_size() * storage_bits / 8.
  const std::uint8_t* codes;
  /// Block scales; null reads a zero-initialised scale.
  const typename S::scale_type* scales;
  /// Zero points; null reads 0.
  const float* zeros;
  /// Output values, block b at out + b * block_size().
  float* out;
  /// Dequantizes block b.
  KVQ_HD void operator()(std::size_t b) const noexcept {
    const std::size_t bs = scheme.block_size();
    scheme.dequantize_block(codes + b * bs * S::storage_bits / 8, scales ? scales[b] : typename S::scale_type{},
                            zeros ? zeros[b] : 0.0f, params, out + b * bs);
  }
};

// ----------------------------------------------------------------------------- checked API
namespace detail {
template <class S>
inline void check_sizes(const char* fn, const S& s, std::size_t n, std::size_t code_bytes, bool codes_null,
                        std::size_t n_scales, bool scales_null, std::size_t n_zeros, bool zeros_null) {
  const std::size_t bs = s.block_size();
  const std::string who = std::string("kvq::block::") + fn + "(" + S::name + "): ";
  if (bs == 0) throw std::invalid_argument(who + "block size is 0");
  // sizes_of computes n * storage_bits; a length whose bit count wraps would ask for a
  // tiny buffer.
  kvq::detail::checked_mul(n, static_cast<std::size_t>(S::storage_bits), who + "code bits of " + std::to_string(n) + " elements");
  if (n % bs != 0)
    throw std::invalid_argument(who + "length " + std::to_string(n) + " is not a multiple of the block size " +
                                std::to_string(bs));
  const buffer_sizes z = sizes_of(s, n);
  if (code_bytes < z.code_bytes)
    throw std::invalid_argument(who + "codes buffer holds " + std::to_string(code_bytes) + " bytes, " +
                                std::to_string(z.code_bytes) + " needed for " + std::to_string(n) + " elements");
  if (n > 0 && codes_null) throw std::invalid_argument(who + "codes buffer is null");
  if (z.scales && (scales_null || n_scales < z.scales))
    throw std::invalid_argument(who + "scales buffer holds " + std::to_string(scales_null ? 0 : n_scales) +
                                " scales, " + std::to_string(z.scales) + " needed for " + std::to_string(z.blocks) +
                                " blocks");
  if (z.zeros && (zeros_null || n_zeros < z.zeros))
    throw std::invalid_argument(who + "zero-point buffer holds " + std::to_string(zeros_null ? 0 : n_zeros) +
                                " values, " + std::to_string(z.zeros) + " needed for " + std::to_string(z.blocks) +
                                " blocks");
}
}  // namespace detail

/// Quantize n elements. Returns the tensor value used (computed from the data or the
/// given one; 1 for schemes without one). Throws std::invalid_argument, writing nothing,
/// if n is not a multiple of the block size or a buffer is too small.
template <class S, class In = f32_input>
float quantize(const S& s, const typename In::storage* x, std::size_t n, tensor_value tv, std::uint8_t* codes,
               std::size_t code_bytes, typename S::scale_type* scales, std::size_t n_scales, float* zeros = nullptr,
               std::size_t n_zeros = 0) {
  detail::check_sizes("quantize", s, n, code_bytes, codes == nullptr, n_scales, scales == nullptr, n_zeros,
                      zeros == nullptr);
  if (n > 0 && x == nullptr) throw std::invalid_argument(std::string("kvq::block::quantize(") + S::name + "): input is null");
  float t = 1.0f;
  if (S::tensor != tensor_kind::none)
    t = tv.from_data ? S::tensor_value_from_amax(tensor_amax<In>(x, n, S::tensor_amax_rule)) : tv.value;
  const quantize_block_fn<S, In> f{s, S::prepare(t), x, codes, S::scale_bytes ? scales : nullptr,
                                   S::has_zero_point ? zeros : nullptr};
  const std::size_t nb = n / s.block_size();
#if defined(KVQ_BLOCK_SIMD)
  if constexpr (bulk::has_quantize<S, In>::value) {  // same bits, many blocks at a time
    bulk::quantize_blocks(s, f.params, x, nb, codes, scales);
    return t;
  }
#endif
  for (std::size_t b = 0; b < nb; ++b) f(b);
  return t;
}

/// 16-bit inputs by kind: kvq::block::quantize(s, bits, n, half_kind::bf16, ...).
enum class half_kind : unsigned char { bf16, fp16 };
/// quantize() of bf16 or fp16 bits, chosen at run time by kind.
template <class S>
float quantize(const S& s, const std::uint16_t* x, std::size_t n, half_kind kind, tensor_value tv, std::uint8_t* codes,
               std::size_t code_bytes, typename S::scale_type* scales, std::size_t n_scales, float* zeros = nullptr,
               std::size_t n_zeros = 0) {
  return kind == half_kind::bf16
             ? quantize<S, bf16_input>(s, x, n, tv, codes, code_bytes, scales, n_scales, zeros, n_zeros)
             : quantize<S, fp16_input>(s, x, n, tv, codes, code_bytes, scales, n_scales, zeros, n_zeros);
}

/// Row-major rows x cols tensor: cols must be a multiple of the block size.
template <class S, class In = f32_input>
float quantize_rows(const S& s, const typename In::storage* x, std::size_t rows, std::size_t cols, tensor_value tv,
                    std::uint8_t* codes, std::size_t code_bytes, typename S::scale_type* scales, std::size_t n_scales,
                    float* zeros = nullptr, std::size_t n_zeros = 0) {
  if (s.block_size() == 0 || cols % s.block_size() != 0)
    throw std::invalid_argument(std::string("kvq::block::quantize_rows(") + S::name + "): row length " +
                                std::to_string(cols) + " (" + std::to_string(rows) + " x " + std::to_string(cols) +
                                ") is not a multiple of the block size " + std::to_string(s.block_size()));
  const std::size_t n =
      kvq::detail::checked_mul(rows, cols, std::string("kvq::block::quantize_rows(") + S::name + "): rows x cols");
  return quantize<S, In>(s, x, n, tv, codes, code_bytes, scales, n_scales, zeros, n_zeros);
}

/// Dequantize n elements into out (n_out >= n). Same checks as quantize.
template <class S>
void dequantize(const S& s, const std::uint8_t* codes, std::size_t code_bytes, const typename S::scale_type* scales,
                std::size_t n_scales, const float* zeros, std::size_t n_zeros, float tensor_val, float* out,
                std::size_t n) {
  detail::check_sizes("dequantize", s, n, code_bytes, codes == nullptr, n_scales, scales == nullptr, n_zeros,
                      zeros == nullptr);
  if (n > 0 && out == nullptr) throw std::invalid_argument(std::string("kvq::block::dequantize(") + S::name + "): output is null");
  const dequantize_block_fn<S> f{s, S::prepare(S::tensor == tensor_kind::none ? 1.0f : tensor_val), codes,
                                 S::scale_bytes ? scales : nullptr, S::has_zero_point ? zeros : nullptr, out};
  const std::size_t nb = n / s.block_size();
#if defined(KVQ_BLOCK_SIMD)
  if constexpr (bulk::has_dequantize<S>::value) {  // same bits, many blocks at a time
    bulk::dequantize_blocks(s, f.params, codes, scales, nb, out);
    return;
  }
#endif
  for (std::size_t b = 0; b < nb; ++b) f(b);
}

// ----------------------------------------------------------------------------- owning container
/// A quantized 1-D tensor (or row-major matrix flattened) held on the host.
template <class S>
class quantized_tensor {
 public:
  /// The scheme type.
  using scheme_type = S;
  /// Type of one block scale.
  using scale_type = typename S::scale_type;

  /// An empty tensor under scheme s.
  explicit quantized_tensor(S s = S{}) : scheme_(s) {}

  /// Quantize x[0..n). Throws std::invalid_argument (leaving *this unchanged) on a bad n.
  template <class In = f32_input>
  void assign(const typename In::storage* x, std::size_t n, tensor_value tv = tensor_value::computed()) {
    const buffer_sizes z = checked_sizes(n);
    std::vector<std::uint8_t> c(z.code_bytes);
    std::vector<scale_type> sc(z.scales);
    std::vector<float> zr(z.zeros);
    const float t = quantize<S, In>(scheme_, x, n, tv, c.data(), c.size(), sc.data(), sc.size(), zr.data(), zr.size());
    codes_.swap(c);
    scales_.swap(sc);
    zeros_.swap(zr);
    n_ = n;
    tensor_value_ = t;
  }

  /// Dequantizes into out[0..size()). Throws std::invalid_argument if n_out < size().
  void dequantize(float* out, std::size_t n_out) const {
    if (n_out < n_)
      throw std::invalid_argument(std::string("kvq::block::quantized_tensor(") + S::name + ")::dequantize: output holds " +
                                  std::to_string(n_out) + " values, " + std::to_string(n_) + " needed");
    block::dequantize(scheme_, codes_.data(), codes_.size(), scales_.data(), scales_.size(), zeros_.data(),
                      zeros_.size(), tensor_value_, out, n_);
  }
  /// The dequantized values.
  std::vector<float> dequantize() const {
    std::vector<float> out(n_);
    dequantize(out.data(), out.size());
    return out;
  }

  /// Number of elements.
  std::size_t size() const noexcept { return n_; }
  /// The scheme.
  const S& scheme() const noexcept { return scheme_; }
  /// Packed codes (layout in the file comment).
  const std::vector<std::uint8_t>& codes() const noexcept { return codes_; }
  /// Block scales, one per block (empty without block scales).
  const std::vector<scale_type>& scales() const noexcept { return scales_; }
  /// Zero points, one per block (empty without zero points).
  const std::vector<float>& zeros() const noexcept { return zeros_; }
  /// The tensor value used by assign() (1 for schemes without one).
  float tensor_value() const noexcept { return tensor_value_; }

  /// Bytes held: codes + scales + zero points + the tensor value (if the scheme has one).
  std::size_t memory_bytes() const noexcept {
    return codes_.size() + scales_.size() * static_cast<std::size_t>(S::scale_bytes) + zeros_.size() * sizeof(float) +
           (S::tensor == tensor_kind::none ? 0u : sizeof(float));
  }

 private:
  buffer_sizes checked_sizes(std::size_t n) const {
    if (scheme_.block_size() == 0 || n % scheme_.block_size() != 0)
      throw std::invalid_argument(std::string("kvq::block::quantized_tensor(") + S::name + ")::assign: length " +
                                  std::to_string(n) + " is not a multiple of the block size " +
                                  std::to_string(scheme_.block_size()));
    kvq::detail::checked_mul(n, static_cast<std::size_t>(S::storage_bits),
                             std::string("kvq::block::quantized_tensor(") + S::name + ")::assign: code bits");
    return sizes_of(scheme_, n);
  }

  S scheme_;
  std::vector<std::uint8_t> codes_;
  std::vector<scale_type> scales_;
  std::vector<float> zeros_;
  std::size_t n_ = 0;
  float tensor_value_ = 1.0f;
};

}  // namespace block
}  // namespace kvq
