/// \file
/// kvq/compact/quantize.hpp — compaction then quantization: a compacted cache's keys
/// and values passed through a quantization codec, its biases stored in fp32 or bf16,
/// and the byte accounting that makes "equal memory" comparisons exact.
///
/// A codec is any callable matrix_f -> matrix_f returning the dequantized matrix
/// of the same shape (for example a kvq block scheme's quantize-dequantize round trip
/// over token rows). Keys and values keep their roles: the keys were chosen, and the
/// values fitted, in full precision; the codec is applied afterwards (the values are
/// not refitted against quantized keys).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include <kvq/core/float16.hpp>
#include <kvq/compact/types.hpp>

namespace kvq {
namespace compact {

/// How the per-key biases are stored: none (eviction: no biases), fp32, or bf16
/// (round to nearest even, as __float2bfloat16_rn).
enum class beta_storage { none, fp32, bf16 };

/// Bytes per stored bias.
constexpr int beta_bytes(beta_storage s) { return s == beta_storage::fp32 ? 4 : s == beta_storage::bf16 ? 2 : 0; }

/// A bias as it reads back from storage.
inline float stored_beta(float beta, beta_storage s) {
  return s == beta_storage::bf16 ? bf16_to_float(float_to_bf16_rn(beta)) : beta;
}

namespace detail {

template <class Codec>
matrix_f apply_codec(Codec& codec, const matrix_f& m, const char* what) {
  matrix_f out = codec(m);
  if (out.rows() != m.rows() || out.cols() != m.cols())
    throw std::invalid_argument(std::string("compact: the codec changed the shape of the ") + what + " (" +
                                std::to_string(m.rows()) + "x" + std::to_string(m.cols()) + " -> " +
                                std::to_string(out.rows()) + "x" + std::to_string(out.cols()) + ")");
  return out;
}

}  // namespace detail

/// The compacted cache with keys through `key_codec`, values through `value_codec`,
/// and the biases as stored under `storage` (beta_storage::none requires all-zero
/// biases: dropping fitted biases silently would change the attention).
/// \throws std::invalid_argument if the sizes of kept, keys, values and beta disagree, a
///         codec changes the shape of its matrix, or storage is none while a bias is
///         nonzero.
template <class KeyCodec, class ValueCodec>
compaction_result quantize_compacted(const compaction_result& c, KeyCodec&& key_codec, ValueCodec&& value_codec,
                                     beta_storage storage) {
  if (static_cast<Eigen::Index>(c.beta.size()) != c.keys.rows() || c.values.rows() != c.keys.rows() ||
      static_cast<Eigen::Index>(c.kept.size()) != c.keys.rows())
    throw std::invalid_argument("compact: compacted cache has inconsistent kept/keys/values/beta sizes");
  compaction_result q = c;
  q.keys = detail::apply_codec(key_codec, c.keys, "keys");
  q.values = detail::apply_codec(value_codec, c.values, "values");
  for (float& b : q.beta) {
    if (storage == beta_storage::none && b != 0.0f)
      throw std::invalid_argument("compact: beta storage 'none' for a cache with nonzero biases");
    b = stored_beta(b, storage);
  }
  return q;
}

/// The same codec for keys and values.
/// \throws std::invalid_argument as the two-codec overload.
template <class Codec>
compaction_result quantize_compacted(const compaction_result& c, Codec&& codec, beta_storage storage) {
  return quantize_compacted(c, codec, codec, storage);
}

/// Bytes of a compacted head: kept x (bytes_per_token + bias bytes). bytes_per_token is
/// the scheme's K+V bytes for one token of the head (scales included), e.g. 2 * d for
/// fp8 K and V. Computed in double: exact for any bytes_per_token that is a multiple of
/// 2^-20 (every packed format's per-token size is a multiple of 1/8 byte) and any
/// realistic token count.
/// \throws std::invalid_argument if kept < 0 or bytes_per_token is not > 0.
inline double compacted_bytes(Eigen::Index kept, double bytes_per_token, beta_storage storage) {
  if (kept < 0) throw std::invalid_argument("compact: kept token count must be >= 0");
  if (!(bytes_per_token > 0.0)) throw std::invalid_argument("compact: bytes per token must be > 0");
  return static_cast<double>(kept) * (bytes_per_token + static_cast<double>(beta_bytes(storage)));
}

/// The most tokens whose compacted_bytes fit in `byte_budget` (0 if none do).
/// \throws std::invalid_argument if byte_budget is negative or NaN, or bytes_per_token
///         is not > 0.
inline Eigen::Index tokens_within_bytes(double byte_budget, double bytes_per_token, beta_storage storage) {
  if (!(byte_budget >= 0.0)) throw std::invalid_argument("compact: byte budget must be >= 0");
  if (!(bytes_per_token > 0.0)) throw std::invalid_argument("compact: bytes per token must be > 0");
  const double per = bytes_per_token + static_cast<double>(beta_bytes(storage));
  auto t = static_cast<Eigen::Index>(byte_budget / per);
  // Guard the division's rounding: the answer is the largest t with t * per <= budget.
  while (t > 0 && static_cast<double>(t) * per > byte_budget) --t;
  while (static_cast<double>(t + 1) * per <= byte_budget) ++t;
  return t;
}

}  // namespace compact
}  // namespace kvq
