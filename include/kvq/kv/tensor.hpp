/// \file
/// kvq/kv/tensor.hpp — KV tensors on Eigen.
///
/// One head's keys (or values) are a row-major tokens x head_dim matrix: row t is
/// token t's vector, so a row is contiguous and the block schemes' blocks run along
/// it. A layer's K (or V) is one matrix per KV head; with grouped-query attention
/// query head h reads KV head h / (num_q_heads / num_kv_heads).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/core/matrix.hpp>

namespace kvq {
namespace kv {

/// A layer's keys or values: one matrix per KV head, all the same shape.
struct kv_heads {
  /// One tokens x head_dim matrix per KV head.
  std::vector<matrix_f> heads;

  /// No heads.
  kv_heads() = default;
  /// num_heads zero matrices of tokens x head_dim.
  kv_heads(std::size_t num_heads, std::size_t tokens, std::size_t head_dim)
      : heads(num_heads, matrix_f::Zero(static_cast<Eigen::Index>(tokens), static_cast<Eigen::Index>(head_dim))) {}

  /// Number of KV heads.
  std::size_t num_heads() const noexcept { return heads.size(); }
  /// Rows of head 0 (0 without heads).
  std::size_t tokens() const noexcept { return heads.empty() ? 0 : static_cast<std::size_t>(heads[0].rows()); }
  /// Columns of head 0 (0 without heads).
  std::size_t head_dim() const noexcept { return heads.empty() ? 0 : static_cast<std::size_t>(heads[0].cols()); }
  /// Head h (unchecked).
  matrix_f& operator[](std::size_t h) { return heads[h]; }
  /// Head h (unchecked).
  const matrix_f& operator[](std::size_t h) const { return heads[h]; }

  /// Throws std::invalid_argument unless every head is tokens x head_dim.
  void check_shape(const char* what, std::size_t num_heads_expected, std::size_t head_dim_expected) const {
    if (heads.size() != num_heads_expected)
      throw std::invalid_argument(std::string(what) + ": " + std::to_string(heads.size()) + " heads given, " +
                                  std::to_string(num_heads_expected) + " expected");
    for (std::size_t h = 0; h < heads.size(); ++h) {
      if (static_cast<std::size_t>(heads[h].cols()) != head_dim_expected || heads[h].rows() != heads[0].rows())
        throw std::invalid_argument(std::string(what) + ": head " + std::to_string(h) + " is " +
                                    std::to_string(heads[h].rows()) + " x " + std::to_string(heads[h].cols()) +
                                    ", expected " + std::to_string(heads[0].rows()) + " x " +
                                    std::to_string(head_dim_expected));
    }
  }
};

/// The KV head a query head reads under grouped-query attention.
inline std::size_t gqa_kv_head(std::size_t q_head, std::size_t num_q_heads, std::size_t num_kv_heads) {
  if (num_kv_heads == 0 || num_q_heads % num_kv_heads != 0)
    throw std::invalid_argument("kvq::kv::gqa_kv_head: " + std::to_string(num_q_heads) + " query heads are not a multiple of " +
                                std::to_string(num_kv_heads) + " KV heads");
  if (q_head >= num_q_heads)
    throw std::invalid_argument("kvq::kv::gqa_kv_head: query head " + std::to_string(q_head) + " of " +
                                std::to_string(num_q_heads));
  return q_head / (num_q_heads / num_kv_heads);
}

}  // namespace kv
}  // namespace kvq
