/// \file
/// kvq/verify/hash.hpp — the content hash printed in mismatch reports.
///
/// Definition: FNV-1a, 64-bit (Fowler–Noll–Vo; offset basis 0xcbf29ce484222325, prime
/// 0x100000001b3), over the buffer's bytes in memory order — for multi-byte elements
/// their little-endian bytes, for packed 4-bit codes the packed bytes. The same value
/// is what
///     h = 0xcbf29ce484222325
///     for b in arr.tobytes(): h = ((h ^ b) * 0x100000001b3) % 2**64
/// gives in Python for a little-endian C-order numpy array, so a kernel author can hash
/// a dump without kvq. (The device layer's order-independent hash,
/// kvq/device/hash.hpp, serves parallel bit-identity checks; this one is sequential and
/// meant to be reproduced by hand.)
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>

namespace kvq::verify {

/// FNV-1a 64 offset basis.
inline constexpr std::uint64_t fnv1a64_offset = 0xcbf29ce484222325ULL;
/// FNV-1a 64 prime.
inline constexpr std::uint64_t fnv1a64_prime = 0x100000001b3ULL;

/// Streaming FNV-1a 64.
struct fnv1a64 {
  /// Hash of the bytes fed so far.
  std::uint64_t state = fnv1a64_offset;
  /// Feeds one byte.
  KVQ_HD constexpr void byte(std::uint8_t b) noexcept { state = (state ^ b) * fnv1a64_prime; }
  /// Feeds n bytes in memory order.
  KVQ_HD constexpr void bytes(const std::uint8_t* p, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) byte(p[i]);
  }
  /// The little-endian bytes of the low `nbytes` bytes of v.
  KVQ_HD constexpr void value_le(std::uint64_t v, int nbytes) noexcept {
    for (int i = 0; i < nbytes; ++i) byte(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  /// The hash of the bytes fed so far.
  KVQ_HD constexpr std::uint64_t value() const noexcept { return state; }
};

/// FNV-1a 64 of n bytes.
KVQ_HD constexpr std::uint64_t fnv1a64_bytes(const std::uint8_t* p, std::size_t n) noexcept {
  fnv1a64 h;
  h.bytes(p, n);
  return h.value();
}

}  // namespace kvq::verify
