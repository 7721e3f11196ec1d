/// \file
/// kvq/inject/random.hpp — uniform and normal draws from Philox words with an exactly
/// specified bit construction, so every backend produces the same values.
///
/// For one Philox block w = (w0, w1, w2, w3) (kvq/inject/philox.hpp):
///   uniform float   u = (w0 >> 8) * 2^-24                    in [0, 1), 2^24 values
///   uniform double  u = ((w1 << 32 | w0) >> 11) * 2^-53      in [0, 1), 2^53 values
///   normal  (double and float):
///     u1 = (((w1 << 32 | w0) >> 11) + 1) * 2^-53             in (0, 1]   (never 0: log finite)
///     t  = ((w3 << 32 | w2) >> 11) * 2^-53                    in [0, 1)
///     z  = sqrt(-2 log(u1)) * cos(2 pi t)                     (first Box–Muller output)
///   with kvq::math::log (double) and kvq::math::sincos_turns, each step an IEEE double
///   operation; the float normal is z rounded once to float. The second Box–Muller
///   output (the sine) is not used: one block per element keeps the value a function of
///   its own index only. |z| <= sqrt(2 * 53 ln 2) ~ 8.57.
#pragma once

#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/core/math.hpp>
#include <kvq/inject/philox.hpp>

namespace kvq {
namespace inject {

/// Uniform float in [0, 1): (w0 >> 8) * 2^-24 (exact, 2^24 values).
KVQ_HD inline float uniform_float(const u32x4& w) {
  return static_cast<float>(w.v[0] >> 8) * 0x1p-24f;  // exact
}

/// Uniform double in [0, 1): ((w1 << 32 | w0) >> 11) * 2^-53 (exact, 2^53 values).
KVQ_HD inline double uniform_double(const u32x4& w) {
  const std::uint64_t b = (static_cast<std::uint64_t>(w.v[1]) << 32) | w.v[0];
  return static_cast<double>(b >> 11) * 0x1p-53;  // exact
}

/// Standard normal draw (double) from one Philox block; see the header comment.
KVQ_HD inline double normal_double(const u32x4& w) {
  const std::uint64_t b1 = (static_cast<std::uint64_t>(w.v[1]) << 32) | w.v[0];
  const std::uint64_t b2 = (static_cast<std::uint64_t>(w.v[3]) << 32) | w.v[2];
  const double u1 = static_cast<double>((b1 >> 11) + 1u) * 0x1p-53;  // (0, 1], exact
  const double t = static_cast<double>(b2 >> 11) * 0x1p-53;          // [0, 1), exact
  const double radius = math::sqrt(-2.0 * math::log(u1));
  double s = 0.0, c = 0.0;
  math::sincos_turns(t, s, c);
  return radius * c;
}

/// Standard normal draw (float): normal_double() rounded once to float.
KVQ_HD inline float normal_float(const u32x4& w) { return static_cast<float>(normal_double(w)); }

/// Uniform integer in [0, n) by the multiply-shift map (floor(w0 * n / 2^32)); its
/// bias is below n / 2^32, irrelevant for the channel/token choices it serves.
KVQ_HD inline std::uint32_t uniform_below(const u32x4& w, std::uint32_t n) {
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(w.v[0]) * n) >> 32);
}

/// A generator bound to a (seed, stream): draws are functions of the index alone.
struct counter_rng {
  /// Philox key; the high and low halves are the two key words.
  std::uint64_t seed = 0;
  /// Stream number (high words of the counter); see make_stream().
  std::uint64_t stream = 0;

  /// The Philox-4x32-10 block of counter `index` on this (seed, stream).
  KVQ_HD u32x4 block(std::uint64_t index) const { return philox_block(seed, stream, index); }
  /// uniform_float() of block `index`.
  KVQ_HD float uniform_float(std::uint64_t index) const { return inject::uniform_float(block(index)); }
  /// uniform_double() of block `index`.
  KVQ_HD double uniform_double(std::uint64_t index) const { return inject::uniform_double(block(index)); }
  /// normal_double() of block `index`.
  KVQ_HD double normal_double(std::uint64_t index) const { return inject::normal_double(block(index)); }
  /// normal_float() of block `index`.
  KVQ_HD float normal_float(std::uint64_t index) const { return inject::normal_float(block(index)); }
  /// uniform_below() of block `index`: an integer in [0, n).
  KVQ_HD std::uint32_t uniform_below(std::uint64_t index, std::uint32_t n) const {
    return inject::uniform_below(block(index), n);
  }
  /// A generator on a derived stream (e.g. one per tensor and head).
  KVQ_HD counter_rng substream(std::uint64_t s) const { return counter_rng{seed, s}; }
};

/// Stream numbers used by kvq's generators: kind in the top 16 bits, head in the next
/// 16, a free 32-bit field below (see kvq/inject/generate.hpp).
enum class stream_kind : std::uint16_t {
  query = 1,
  key = 2,
  value = 3,
  outlier_channels = 16,
  massive = 17,
  sink_direction = 18,
  needle = 19,
  user = 0x100,
};

/// Stream number (kind << 48) | ((head & 0xffff) << 32) | sub.
KVQ_HD constexpr std::uint64_t make_stream(stream_kind kind, std::uint32_t head = 0, std::uint32_t sub = 0) {
  return (static_cast<std::uint64_t>(static_cast<std::uint16_t>(kind)) << 48) |
         (static_cast<std::uint64_t>(head & 0xffffu) << 32) | sub;
}

}  // namespace inject
}  // namespace kvq
