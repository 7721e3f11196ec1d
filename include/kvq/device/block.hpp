/// \file
/// kvq/device/block.hpp — block-scaled quantize/dequantize of any kvq::block scheme on
/// any Thrust device system.
///
/// The per-block work is the block layer's own functor (kvq::block::quantize_block_fn /
/// dequantize_block_fn: the recipe's exact operation order, block amax computed inside
/// the block), run by thrust::for_each over block indices. Blocks are independent, so
/// every backend and thread count produces the serial emulator's bytes.
///
/// The one cross-block value, the tensor amax of recipes with a tensor-level stage
/// (TransformerEngine NVFP4, torchao two-level), is a maximum. It is computed here as
/// an unsigned-integer maximum of |x|'s bit pattern (for non-negative floats the bit
/// order is the value order), with the recipe's NaN rule folded into the key: integer
/// max is exact and order-independent, so the reduction may run in any order.
///
/// Buffers are Thrust containers of the device system (thrust::device_vector) or, for
/// the _n forms, raw pointers valid on it (device memory for CUDA, host memory for
/// CPP/OMP/TBB). The container forms check sizes on the host and throw
/// std::invalid_argument naming the problem; the _n forms are unchecked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <kvq/block/api.hpp>
#include <kvq/block/io16.hpp>
#include <kvq/block/scheme.hpp>
#include <kvq/device/system.hpp>
#include <kvq/core/bits.hpp>

#include <thrust/device_vector.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform_reduce.h>

namespace kvq {
namespace device {
namespace detail {

/// Key whose unsigned maximum encodes block::block_amax's result under `rule`:
/// 0 = NaN element (ignored), |x| bits + 1 otherwise; under `propagate` a NaN is the
/// largest key. (|x| bits <= 0x7F800000 for non-NaN values, so +1 cannot wrap.)
template <class In>
struct amax_key_fn {
  block::amax_nan rule;
  KVQ_HD std::uint32_t operator()(typename In::storage v) const {
    const std::uint32_t a = kvq::bit_cast<std::uint32_t>(In::load(v)) & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return rule == block::amax_nan::propagate ? 0xFFFFFFFFu : 0u;
    return a + 1u;
  }
};

inline float amax_from_key(std::uint32_t key, std::size_t n, block::amax_nan rule) {
  const float qnan = kvq::bit_cast<float>(0x7FC00000u);
  if (key == 0xFFFFFFFFu) return qnan;  // propagate: some element is NaN
  if (key == 0u) return (rule == block::amax_nan::ignore_unless_all && n > 0) ? qnan : 0.0f;
  return kvq::bit_cast<float>(key - 1u);
}

template <class S>
std::string who(const char* fn) {
  return std::string("kvq::device::") + fn + "(" + S::name + "): ";
}

}  // namespace detail

/// Tensor amax of n elements at `x` (an iterator or pointer of the device system),
/// equal to kvq::block::tensor_amax<In>(x, n, rule) for every input.
template <class In = block::f32_input, class It>
float tensor_amax_n(It x, std::size_t n, block::amax_nan rule) {
  const std::uint32_t key = thrust::transform_reduce(x, x + static_cast<std::ptrdiff_t>(n),
                                                     detail::amax_key_fn<In>{rule}, std::uint32_t(0),
                                                     thrust::maximum<std::uint32_t>());
  return detail::amax_from_key(key, n, rule);
}

template <class In = block::f32_input>
/// tensor_amax_n() of a whole device vector.
float tensor_amax(const thrust::device_vector<typename In::storage>& x, block::amax_nan rule) {
  return tensor_amax_n<In>(x.begin(), x.size(), rule);
}

/// Quantizes n elements (n a multiple of the block size) with prepared parameters:
/// one block functor call per block index. Raw pointers of the device system; scales
/// / zeros may be null when the scheme has none. Unchecked.
template <class S, class In = block::f32_input, class Policy>
void quantize_blocks_n(Policy&& exec, const S& s, const typename S::params& params,
                       const typename In::storage* x, std::size_t n, std::uint8_t* codes,
                       typename S::scale_type* scales, float* zeros) {
  const std::size_t nb = s.block_size() ? n / s.block_size() : 0;
  const block::quantize_block_fn<S, In> f{s, params, x, codes, S::scale_bytes ? scales : nullptr,
                                          S::has_zero_point ? zeros : nullptr};
  thrust::for_each(exec, thrust::counting_iterator<std::size_t>(0), thrust::counting_iterator<std::size_t>(nb), f);
}

/// Dequantizes n elements (n a multiple of the block size). Unchecked.
template <class S, class Policy>
void dequantize_blocks_n(Policy&& exec, const S& s, const typename S::params& params, const std::uint8_t* codes,
                         const typename S::scale_type* scales, const float* zeros, float* out, std::size_t n) {
  const std::size_t nb = s.block_size() ? n / s.block_size() : 0;
  const block::dequantize_block_fn<S> f{s, params, codes, S::scale_bytes ? scales : nullptr,
                                        S::has_zero_point ? zeros : nullptr, out};
  thrust::for_each(exec, thrust::counting_iterator<std::size_t>(0), thrust::counting_iterator<std::size_t>(nb), f);
}

/// Quantizes x (length a multiple of the block size) into codes / scales / zeros,
/// which are resized to the scheme's buffer sizes. The tensor value is computed from
/// x (tensor_value::computed()) or given, exactly as kvq::block::quantize does; the
/// value used is returned. Throws std::invalid_argument on a bad length.
template <class S, class In = block::f32_input>
float quantize(const S& s, const thrust::device_vector<typename In::storage>& x, block::tensor_value tv,
               thrust::device_vector<std::uint8_t>& codes, thrust::device_vector<typename S::scale_type>& scales,
               thrust::device_vector<float>& zeros) {
  const std::size_t n = x.size();
  const std::size_t bs = s.block_size();
  if (bs == 0) throw std::invalid_argument(detail::who<S>("quantize") + "block size is 0");
  if (n % bs != 0)
    throw std::invalid_argument(detail::who<S>("quantize") + "length " + std::to_string(n) +
                                " is not a multiple of the block size " + std::to_string(bs));
  const block::buffer_sizes z = block::sizes_of(s, n);
  codes.resize(z.code_bytes);
  scales.resize(z.scales);
  zeros.resize(z.zeros);
  float t = 1.0f;
  if (S::tensor != block::tensor_kind::none)
    t = tv.from_data ? S::tensor_value_from_amax(tensor_amax<In>(x, S::tensor_amax_rule)) : tv.value;
  quantize_blocks_n<S, In>(thrust::device, s, S::prepare(t), thrust::raw_pointer_cast(x.data()), n,
                           thrust::raw_pointer_cast(codes.data()), thrust::raw_pointer_cast(scales.data()),
                           thrust::raw_pointer_cast(zeros.data()));
  return t;
}

/// Dequantizes n elements into out (resized to n). Throws std::invalid_argument when a
/// buffer is too small for n or n is not a multiple of the block size.
template <class S>
void dequantize(const S& s, const thrust::device_vector<std::uint8_t>& codes,
                const thrust::device_vector<typename S::scale_type>& scales, const thrust::device_vector<float>& zeros,
                float tensor_value, std::size_t n, thrust::device_vector<float>& out) {
  const std::size_t bs = s.block_size();
  if (bs == 0 || n % bs != 0)
    throw std::invalid_argument(detail::who<S>("dequantize") + "length " + std::to_string(n) +
                                " is not a multiple of the block size " + std::to_string(bs));
  const block::buffer_sizes z = block::sizes_of(s, n);
  if (codes.size() < z.code_bytes || scales.size() < z.scales || zeros.size() < z.zeros)
    throw std::invalid_argument(detail::who<S>("dequantize") + "buffers hold " + std::to_string(codes.size()) +
                                " code bytes, " + std::to_string(scales.size()) + " scales, " +
                                std::to_string(zeros.size()) + " zero points; " + std::to_string(n) + " elements need " +
                                std::to_string(z.code_bytes) + ", " + std::to_string(z.scales) + ", " +
                                std::to_string(z.zeros));
  out.resize(n);
  dequantize_blocks_n(thrust::device, s, S::prepare(S::tensor == block::tensor_kind::none ? 1.0f : tensor_value),
                      thrust::raw_pointer_cast(codes.data()), thrust::raw_pointer_cast(scales.data()),
                      thrust::raw_pointer_cast(zeros.data()), thrust::raw_pointer_cast(out.data()), n);
}

}  // namespace device
}  // namespace kvq
