/// \file
/// kvq/inject/philox.hpp — the Philox-4x32-10 counter-based generator (Salmon, Moraes,
/// Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011; the Random123
/// reference definition), keyed so that a value depends only on (seed, stream, index).
///
/// Philox4x32-R maps a 128-bit counter and a 64-bit key to 128 random bits:
///   round(c, k): (hi0, lo0) = 0xD2511F53 * c0,  (hi1, lo1) = 0xCD9E8D57 * c2   (32x32->64)
///                c' = (hi1 ^ c1 ^ k0,  lo1,  hi0 ^ c3 ^ k1,  lo0)
///   the key is bumped by the Weyl constants (0x9E3779B9, 0xBB67AE85) before every round
///   but the first. R = 10 is the standard (Crush-resistant) variant.
/// Only 32-bit integer multiplies, xors and adds: identical on every host and device.
///
/// kvq's keying (the contract the generators rely on):
///   key     = (seed & 0xffffffff, seed >> 32)
///   counter = (index & 0xffffffff, index >> 32, stream & 0xffffffff, stream >> 32)
/// One counter gives four 32-bit words; a generator draws one counter per element, so a
/// value never depends on the order, the thread, or how many values were drawn before.
#pragma once

#include <cstdint>

#include <kvq/config.hpp>

namespace kvq {
/// Synthetic KV data: counter-based random numbers (Philox), Gaussian Q/K/V with heads,
/// RoPE, and injectors of the structures that make KV caches hard to quantize (channel
/// outliers, massive activations, attention sinks, needles), each returning a record of
/// what it did. Every value is a function of (seed, stream, index) alone, so results are
/// the same on every backend and for every thread count.
namespace inject {

/// Four 32-bit words: a Philox counter or one block of output.
struct u32x4 {
  /// The words; v[0] is the lowest 32 bits of the counter.
  std::uint32_t v[4];
};

/// Two 32-bit words: a Philox key.
struct u32x2 {
  /// The key words; v[0] is the low half of the seed under kvq's keying.
  std::uint32_t v[2];
};

namespace detail {

constexpr std::uint32_t philox_m0 = 0xD2511F53u;
constexpr std::uint32_t philox_m1 = 0xCD9E8D57u;
constexpr std::uint32_t philox_w0 = 0x9E3779B9u;  // golden ratio
constexpr std::uint32_t philox_w1 = 0xBB67AE85u;  // sqrt(3) - 1

KVQ_HD constexpr void mulhilo32(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t p = static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b);
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}

KVQ_HD constexpr u32x4 philox_round(const u32x4& c, const u32x2& k) {
  std::uint32_t hi0 = 0, lo0 = 0, hi1 = 0, lo1 = 0;
  mulhilo32(philox_m0, c.v[0], hi0, lo0);
  mulhilo32(philox_m1, c.v[2], hi1, lo1);
  return u32x4{{hi1 ^ c.v[1] ^ k.v[0], lo1, hi0 ^ c.v[3] ^ k.v[1], lo0}};
}

}  // namespace detail

/// Philox4x32 with R rounds (R = 10 is Philox4x32-10).
template <int Rounds = 10>
KVQ_HD constexpr u32x4 philox4x32(u32x4 ctr, u32x2 key) {
  static_assert(Rounds >= 1 && Rounds <= 16, "Philox4x32: 1..16 rounds");
  for (int r = 0; r < Rounds; ++r) {
    if (r > 0) {
      key.v[0] += detail::philox_w0;
      key.v[1] += detail::philox_w1;
    }
    ctr = detail::philox_round(ctr, key);
  }
  return ctr;
}

/// The four random words for (seed, stream, index) under kvq's keying.
KVQ_HD constexpr u32x4 philox_block(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const u32x2 key{{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
  const u32x4 ctr{{static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32),
                   static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)}};
  return philox4x32<10>(ctr, key);
}

}  // namespace inject
}  // namespace kvq
