// tests/device/inputs.hpp — deterministic test inputs shared by the device tests and the
// GPU driver (host code, no Thrust).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <kvq/device/hash.hpp>
#include <kvq/core/bits.hpp>

namespace kvq_test {

// ---- inputs ---------------------------------------------------------------------

/// Float inputs that reach every class: an even sweep of all 2^32 bit patterns (so
/// NaNs, infinities, subnormals, both zeros and every binade occur), hashed random
/// bit patterns, and values near the formats' rounding boundaries (k/64 steps up to
/// 600, covering ties and the e4m3 464/448 edge). Generated on the host, identical
/// for every backend.
inline std::vector<float> float_inputs(std::size_t n) {
  std::vector<float> v(n);
  const std::size_t third = n / 3;
  const std::uint64_t step = (std::uint64_t(1) << 32) / (third ? third : 1);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    if (i < third) {
      bits = static_cast<std::uint32_t>(i * step + (i & 0xFFu));
    } else if (i < 2 * third) {
      bits = static_cast<std::uint32_t>(kvq::device::mix64(i));
    } else {
      const std::size_t j = i - 2 * third;
      const float mag = static_cast<float>(j % 38400u) * 0.015625f;  // k/64, k < 38400 (0..600)
      const float tiny = static_cast<float>(j % 977u) * 0x1p-24f;     // subnormal-format territory
      const float x = (j & 1u) ? mag : tiny;
      bits = kvq::bit_cast<std::uint32_t>((j & 2u) ? -x : x);
    }
    v[i] = kvq::bit_cast<float>(bits);
  }
  return v;
}

/// Double inputs: random bit patterns plus floats widened with a small perturbation
/// below float precision (the cases where one rounding differs from two).
inline std::vector<double> double_inputs(std::size_t n) {
  std::vector<double> v(n);
  const std::vector<float> f = float_inputs(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 2 == 0) {
      v[i] = kvq::bit_cast<double>(kvq::device::mix64(i ^ 0x5555u));
    } else {
      const double x = static_cast<double>(f[i]);
      v[i] = x + x * 0x1p-40 * static_cast<double>(static_cast<int>(i % 7u) - 3);
    }
  }
  return v;
}

/// KV-like float data with the structure that stresses block scales: small values,
/// a few outlier channels, a massive-activation row, an all-zero block, tiny
/// (subnormal) blocks, and a handful of NaN / Inf elements.
inline std::vector<float> kv_inputs(std::size_t rows, std::size_t cols) {
  std::vector<float> v(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      const std::uint64_t h = kvq::device::mix64(i * 0x2545F4914F6CDD1Dull + 17u);
      // uniform in [-1, 1) from 24 random bits, exact in float
      float x = static_cast<float>(static_cast<std::int32_t>(h >> 40) - (1 << 23)) * 0x1p-23f;
      if (c % 37 == 5) x *= 40.0f;                 // outlier channels (KIVI, KVQuant)
      if (r == 0) x *= 3000.0f;                    // massive-activation token
      if (r == 3 && c < 32) x = 0.0f;              // all-zero blocks
      if (r == 4) x *= 0x1p-130f;                  // subnormal floats
      if (r == 5) x *= 0x1p-12f;                   // below the e4m3 scale range
      if (i % 9973 == 11) x = kvq::bit_cast<float>(0x7FC00000u);            // NaN
      if (i % 15331 == 7) x = (i & 1u) ? -INFINITY : INFINITY;              // Inf
      v[i] = x;
    }
  }
  return v;
}

}  // namespace kvq_test
