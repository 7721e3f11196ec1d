/// \file
/// kvq/inject/normal_array.hpp — standard normal draws of consecutive counters, several
/// per instruction, bit for bit counter_rng::normal_double of each counter.
///
/// Why: generating a 128k-token context takes 33 million draws, and the scalar draw (a
/// Philox block, kvq's double-double log, a square root and a turn-based cosine) runs one
/// counter at a time. Here `normal_lanes` counters go through the same operations side by
/// side, in lane loops the compiler turns into vector instructions; every branch of the
/// scalar path becomes a select of values both computed the same way. Written
/// differently, with the same values:
/// ~~~
///  - the integer-to-double conversions (53-bit draws, the exponent of the log's
///    argument, the quadrant): from bits (2^52 + v has the integer v in its low bits),
///    exact for every value the scalar path converts;
///  - the log takes math::log's path for a normal argument in (0, 1], which is all
///    u1 can be; its two final forms (k = 0 and k != 0) are both computed and one kept.
/// ~~~
/// fma is kept where math.hpp writes it (std::fma: one instruction per lane with FMA
/// hardware, the library call otherwise — the same value either way).
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/core/isa.hpp>
#include <kvq/core/math.hpp>
#include <kvq/core/math_array.hpp>
#include <kvq/inject/philox.hpp>
#include <kvq/inject/random.hpp>

#if defined(KVQ_ISA_DISPATCH)
#include <immintrin.h>
#endif

namespace kvq {
namespace inject {
namespace detail {

/// Counters per group of the portable copy (and a device thread): 8 keeps the lane arrays
/// small.
constexpr int normal_lanes = 8;

/// Counters per group of the x86-64-v3 copy. A group is one long dependent chain (the
/// log's series and double-double steps, then the cosine's), so wider groups give the
/// core independent vector operations to overlap. One run of 2^22 draws on an AVX-512
/// CPU (AMD EPYC): 17.4 / 13.1 / 9.3 ns per value with 8 / 16 / 32 lanes under
/// -march=native, 29.6 / 20.3 / 20.5 under -march=x86-64-v3; 32 needs AVX-512's 32
/// vector registers. Later, on the same kind of CPU with -O3 -march=native: 5.5 / 4.9 /
/// 5.2 ns with 32 / 64 / 128 lanes. The same values every time.
#if defined(__AVX512F__)
constexpr int normal_lanes_wide = 64;
#else
constexpr int normal_lanes_wide = 16;
#endif

// double(v) for an integer v <= 2^53, from bits (kvq/core/math_array.hpp).
using kvq::math::detail::u53_to_double;

/// The two factors of normal_double(philox_block(seed, stream, index0 + j)) for j < L:
/// rad[j] = -2 log(u1) (the square root's argument, >= 0) and cs[j] = cos(2 pi t); the
/// draw is sqrt(rad[j]) * cs[j].
template <int L = normal_lanes>
KVQ_HD KVQ_FORCEINLINE void normal_group_parts(std::uint64_t seed, std::uint64_t stream, std::uint64_t index0,
                                               double* rad, double* cs) {
  namespace md = kvq::math::detail;
  // Philox-4x32-10, lane by lane (philox.hpp).
  std::uint32_t c0[L], c1[L], c2[L], c3[L];
  for (int j = 0; j < L; ++j) {
    const std::uint64_t index = index0 + static_cast<std::uint64_t>(j);
    c0[j] = static_cast<std::uint32_t>(index);
    c1[j] = static_cast<std::uint32_t>(index >> 32);
    c2[j] = static_cast<std::uint32_t>(stream);
    c3[j] = static_cast<std::uint32_t>(stream >> 32);
  }
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += philox_w0;
      k1 += philox_w1;
    }
    for (int j = 0; j < L; ++j) {
      const std::uint64_t p0 = static_cast<std::uint64_t>(philox_m0) * c0[j];
      const std::uint64_t p1 = static_cast<std::uint64_t>(philox_m1) * c2[j];
      const std::uint32_t hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
      const std::uint32_t hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
      const std::uint32_t n0 = hi1 ^ c1[j] ^ k0, n2 = hi0 ^ c3[j] ^ k1;
      c0[j] = n0;
      c1[j] = lo1;
      c2[j] = n2;
      c3[j] = lo0;
    }
  }
  // Box–Muller (random.hpp normal_double): u1 in (0, 1], t in [0, 1). Each step is its
  // own lane loop (one the vectoriser can take whole).
  double u1[L], tt[L], lg[L];
  for (int j = 0; j < L; ++j) {
    const std::uint64_t b1 = (static_cast<std::uint64_t>(c1[j]) << 32) | c0[j];
    const std::uint64_t b2 = (static_cast<std::uint64_t>(c3[j]) << 32) | c2[j];
    u1[j] = u53_to_double((b1 >> 11) + 1u) * 0x1p-53;
    tt[j] = u53_to_double(b2 >> 11) * 0x1p-53;
  }
  for (int j = 0; j < L; ++j) {
    // math::log(u1) for a normal u1 in (0, 1] (log_core, then log's final step).
    // The selects are integer masks over the bits (a floating-point compare or a value
    // computed for one side only would keep the compiler from vectorising the loop).
    const std::uint64_t u = kvq::bit_cast<std::uint64_t>(u1[j]);
    const std::uint64_t mb = (u & 0x000fffffffffffffull) | 0x3ff0000000000000ull;  // m in [1, 2)
    const std::uint64_t big = mb > 0x3ff6a09e667f3bcdull ? 1u : 0u;  // m > 1.4142135623730951
    const double m = kvq::bit_cast<double>(mb - (big << 52));         // m * 0.5 when big (exact)
    const std::uint64_t e = (u >> 52) + big;                           // k + 1023
    const double kd = (kvq::bit_cast<double>(0x4330000000000000ull | e) - 4503599627370496.0) - 1023.0;
    const double f = m - 1.0;
    const double s = f / (2.0 + f);
    const double z = s * s;
    double R;
    md::log_series(z, R);
    const double ffh = f * f;
    const double ffl = md::fma_d(f, f, -ffh);  // two_prod(f, f)
    const double h_hi = 0.5 * ffh, h_lo = 0.5 * ffl;
    const double corr = s * (h_hi + R);
    // two_sum(f, -h_hi)
    const double as = f - h_hi;
    const double abb = as - f;
    const double alo = (f - (as - abb)) + (-h_hi - abb);
    const double lo = (alo - h_lo) + corr;
    // fast_two_sum(as, lo)
    const double lhi = as + lo;
    const double llo = lo - (lhi - as);
    // k != 0: two_sum(k ln2_head, lhi) plus the tails
    const double thi = kd * md::ln2_head;
    const double ss = thi + lhi;
    const double sbb = ss - thi;
    const double serr = (thi - (ss - sbb)) + (lhi - sbb);
    const double lk = ss + (serr + (llo + kd * md::ln2_tail));
    const double l0 = lhi + llo;
    const std::uint64_t k_zero = 0u - static_cast<std::uint64_t>(e == 1023u);  // all ones when k == 0
    lg[j] = kvq::bit_cast<double>((kvq::bit_cast<std::uint64_t>(l0) & k_zero) |
                                  (kvq::bit_cast<std::uint64_t>(lk) & ~k_zero));
  }
  for (int j = 0; j < L; ++j) {
    // sincos_turns(t): the cosine
    const double t = tt[j];
    constexpr double shifter = 6755399441055744.0;  // 1.5 * 2^52
    const double qs = 4.0 * t + shifter;
    const double qd = qs - shifter;
    const std::uint64_t q = (kvq::bit_cast<std::uint64_t>(qs) - 0x4338000000000000ull) & 3u;
    const double fr = t - 0.25 * qd;
    const double ph = fr * md::twopi_hi;
    const double pl = md::fma_d(fr, md::twopi_hi, -ph);  // two_prod(fr, twopi_hi)
    const double rb = pl + fr * md::twopi_lo;
    const double rh = ph + rb;  // fast_two_sum(ph, rb)
    const double rl = rb - (rh - ph);
    const double sv = md::sin_core(rh, rl);
    const double cv = md::cos_core(rh, rl);
    // q = 0: cos, 1: -sin, 2: -cos, 3: sin (integer masks, as above; the sign by its bit)
    const std::uint64_t odd = 0u - (q & 1u);
    const std::uint64_t neg = static_cast<std::uint64_t>((q ^ (q >> 1)) & 1u) << 63;  // q = 1, 2
    cs[j] = kvq::bit_cast<double>(((kvq::bit_cast<std::uint64_t>(sv) & odd) | (kvq::bit_cast<std::uint64_t>(cv) & ~odd)) ^ neg);
  }
  for (int j = 0; j < L; ++j) rad[j] = -2.0 * lg[j];
}

/// out[j] = normal_double(philox_block(seed, stream, index0 + j)) for j < normal_lanes.
KVQ_HD KVQ_FORCEINLINE void normal_group(std::uint64_t seed, std::uint64_t stream, std::uint64_t index0, double* out) {
  double rad[normal_lanes], cs[normal_lanes];
  normal_group_parts(seed, stream, index0, rad, cs);
  for (int j = 0; j < normal_lanes; ++j) out[j] = math::sqrt(rad[j]) * cs[j];
}

/// The whole groups of normal_doubles (count a multiple of normal_lanes).
KVQ_HD KVQ_FORCEINLINE void normal_groups(const counter_rng& rng, std::uint64_t first, std::size_t count,
                                          double* out) {
  constexpr std::size_t L = normal_lanes;
  for (std::size_t i = 0; i < count; i += L) normal_group(rng.seed, rng.stream, first + i, out + i);
}

#if defined(KVQ_ISA_DISPATCH)
/// normal_group_parts of L counters from `first`, then sqrt(rad) * cs as vector
/// instructions (IEEE, correctly rounded: math::sqrt's bits); std::sqrt's errno path keeps
/// the compiler from vectorising them.
template <int L>
KVQ_TARGET_X86_64_V3_FMA KVQ_FORCEINLINE void normal_group_x86_64_v3(const counter_rng& rng, std::uint64_t first,
                                                                     double* out) {
  static_assert(L % 4 == 0, "whole 4-lane vectors");
  alignas(32) double rad[L], cs[L];
  normal_group_parts<L>(rng.seed, rng.stream, first, rad, cs);
  for (int j = 0; j < L; j += 4)
    _mm256_storeu_pd(out + j, _mm256_mul_pd(_mm256_sqrt_pd(_mm256_load_pd(rad + j)), _mm256_load_pd(cs + j)));
}

/// normal_groups compiled for x86-64-v3 with FMA (kvq/core/isa.hpp: math.hpp writes fma):
/// groups of normal_lanes_wide counters, then of normal_lanes (count a multiple of
/// normal_lanes).
KVQ_TARGET_X86_64_V3_FMA inline void normal_groups_x86_64_v3(const counter_rng& rng, std::uint64_t first,
                                                             std::size_t count, double* out) {
  constexpr std::size_t W = normal_lanes_wide, L = normal_lanes;
  std::size_t i = 0;
  for (; i + W <= count; i += W) normal_group_x86_64_v3<normal_lanes_wide>(rng, first + i, out + i);
  for (; i < count; i += L) normal_group_x86_64_v3<normal_lanes>(rng, first + i, out + i);
}
#endif

}  // namespace detail

/// out[i] = rng.normal_double(first + i) for i in [0, count), bit for bit (the groups in
/// the copy kvq::active_isa() chose).
KVQ_HD inline void normal_doubles(const counter_rng& rng, std::uint64_t first, std::size_t count, double* out) {
  constexpr std::size_t L = detail::normal_lanes;
  const std::size_t whole = count - count % L;
#if defined(KVQ_ISA_DISPATCH)
  if (kvq::detail::use_x86_64_v3()) detail::normal_groups_x86_64_v3(rng, first, whole, out);
  else detail::normal_groups(rng, first, whole, out);
#else
  detail::normal_groups(rng, first, whole, out);
#endif
  for (std::size_t i = whole; i < count; ++i) out[i] = rng.normal_double(first + i);
}

}  // namespace inject
}  // namespace kvq
