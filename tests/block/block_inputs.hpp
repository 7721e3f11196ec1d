// Shared inputs of the block fast-path tests (test_block_bulk.cpp, test_block_parallel.cpp):
// a 64-bit mixer and random float tensors of several shapes with specials per block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace kvqtest {

inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline std::uint32_t to_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// n values (n a multiple of 32) of one of several shapes, chosen by the seed.
inline std::vector<float> make_input(std::size_t n, std::uint64_t seed) {
  std::vector<float> x(n);
  const int shape = static_cast<int>(seed % 6);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t r = mix64(seed * 1000003u + i);
    const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;  // [-1, 1)
    float v = u * 3.0f;
    switch (shape) {
      case 0: break;
      case 1: v = (r % 53 == 0) ? v * 5000.0f : v; break;                 // outliers
      case 2: v = from_bits(static_cast<std::uint32_t>(r >> 32) & 0x807FFFFFu); break;  // denormals, +-0
      case 3: v = from_bits(static_cast<std::uint32_t>(r >> 32)); break;   // any bit pattern
      case 4: v = v * (((r >> 8) % 3 == 0) ? 1e-38f : 1e30f); break;       // extreme ranges
      default: v = 0.5f * static_cast<float>(static_cast<int>((r >> 20) % 25) - 12); break;  // grid points, ties
    }
    x[i] = v;
  }
  // a few structural cases whatever the shape
  const std::size_t nb = n / 32;
  for (std::size_t b = 0; b < nb; ++b) {
    const std::uint64_t r = mix64(seed ^ (b * 7919u));
    float* xb = x.data() + 32 * b;
    switch (r % 11) {
      case 0: for (int i = 0; i < 32; ++i) xb[i] = 0.0f; break;                   // zero block
      case 1: xb[r % 32] = from_bits(0x7FC00000u | static_cast<std::uint32_t>(r >> 50)); break;  // one NaN
      case 2: xb[r % 32] = (r & 64) ? -1.0f / 0.0f : 1.0f / 0.0f; break;           // one Inf
      case 3: for (int i = 0; i < 32; ++i) xb[i] = from_bits(0xFFC00001u + static_cast<std::uint32_t>(i)); break;  // all NaN
      case 4: for (int i = 0; i < 16; ++i) xb[i] = from_bits(0x7F800001u + static_cast<std::uint32_t>(i)); break;  // half NaN
      case 5: for (int i = 0; i < 32; ++i) xb[i] = -0.0f; break;
      case 6: for (int i = 0; i < 32; ++i) xb[i] = from_bits(static_cast<std::uint32_t>(1 + i)); break;  // tiny denormals
      default: break;
    }
  }
  return x;
}

}  // namespace kvqtest
