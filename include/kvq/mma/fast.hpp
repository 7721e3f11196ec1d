/// \file
/// kvq/mma/fast.hpp — the block FMA of block_fma.hpp computed faster, with the same bits:
/// block_fma_fast (one block step) and dot_fast (blocks chained over K, as dot); KVQ_HD.
/// The checked host entry for many inner products is dot_batch (kvq/mma/batch.hpp).
///
/// Why the bits are the same. block_fma decodes every operand with a bit loop, walks the
/// block twice (maximum exponent, then aligned sum) and normalises with loops. The rule
/// itself is integer arithmetic, and this file evaluates the same rule with fewer steps:
///
/// - Decoding. An operand is a value of its input format held in a float. For a normal
///   float the leading bit sits at the float's exponent, so the format's exponent is
///   max(float exponent, min_exp) and its significand the 24-bit float significand shifted
///   right by (exponent - mantissa_bits - float lsb exponent) (>= 23 - mantissa_bits > 0;
///   shifts of 24 or more give 0, as in decode). A float subnormal lies below every input
///   format's min_exp (>= -126) and decodes to exponent min_exp the same way. This is
///   decode() without its floor_log2 loop; bits below the format's precision are dropped
///   exactly as decode drops them.
/// - Alignment. A product of significands sa·sb (< 2^(2·mantissa_bits + 2)) has lsb
///   exponent e - 2·mantissa_bits, e = ea + eb. In units of 2^q, q = emax - frac_bits,
///   align_truncate gives floor(sa·sb · 2^(F - d)) with F = frac_bits - 2·mantissa_bits and
///   d = emax - e >= 0, which equals (sa·sb << F) >> d when F >= 0 (a right shift of a
///   non-negative integer is floor division by a power of two). sa·sb << F < 2^(frac_bits
///   + 2) <= 2^50, so a shift count clamped to 63 gives the same 0 as align_truncate for
///   d >= 64. Every preset has F >= 0; other parameters fall back to block_fma.
/// - Zero products have a zero significand: their term is 0 whatever d is (d is clamped
///   to [0, 63] only to keep the shift defined), and they are kept out of the maximum.
/// - fp8 and fp16 products are exact floats (significands of at most 11 bits, exponents
///   from -48 to 32), so for them the term is also floor(|a·b| · 2^-q), computed as the
///   float product scaled by the power of two 2^-q (exact; a result below 2^-126 would
///   truncate to 0 whatever its rounding) and converted toward zero to an integer, which
///   carries the sign; the maximum exponent then needs only the exponent fields (a value
///   of these formats is a normal float or zero). Used for windows up to 29 bits with q in
///   [-126, 126]; otherwise, and for bf16, the integer form.
/// - The tail (c entry, normalisation, rounding) is block_fma's, with floor_log2 computed
///   by a count of leading zeros instead of a bit loop (the same integer).
/// - Blocks holding a NaN or Inf (in a, b or c), blocks without a nonzero product, and
///   parameters with F < 0 or n > max_block are handed to block_fma itself.
///
/// Like block_fma, these functions take values of the input format (the checked entries,
/// api.hpp's dot and batch.hpp's dot_batch, reject anything else); for other floats the
/// two need not agree.
///
/// The loops over a block are branch-free code of known length that compilers vectorise; nothing
/// allocates. tests/mma/test_fast.cpp replays every recorded hardware line through this
/// path and compares it with block_fma / dot on random and special-value inputs.
#pragma once

#include <kvq/config.hpp>
#include <kvq/mma/block_fma.hpp>
#include <kvq/mma/dot.hpp>
#include <kvq/mma/params.hpp>
#include <kvq/mma/presets.hpp>

#include <cstdint>

namespace kvq::mma {
namespace detail {

// floor(log2(v)) for v != 0 (-1 for 0), by a count of leading zeros (or a binary search):
// the value of floor_log2.
KVQ_HD inline int floor_log2_fast(std::uint64_t v) noexcept {
  if (v == 0) return -1;
#if defined(__CUDA_ARCH__)
  return 63 - __clzll(static_cast<long long>(v));
#elif defined(__GNUC__) || defined(__clang__)
  return 63 - __builtin_clzll(v);
#else
  int n = 0;
  if (v >> 32) { v >>= 32; n += 32; }
  if (v >> 16) { v >>= 16; n += 16; }
  if (v >> 8) { v >>= 8; n += 8; }
  if (v >> 4) { v >>= 4; n += 4; }
  if (v >> 2) { v >>= 2; n += 2; }
  if (v >> 1) { n += 1; }
  return n;
#endif
}

// The float bits u (finite) of a value of a format with `mantissa_bits` fraction bits and
// minimum exponent min_exp >= -126: significand sig and exponent e with value
// sig × 2^(e - mantissa_bits), as decode() gives them (sig == 0 for zero). `dropped` is
// true when bits of u lie below the format's precision (decode drops them).
KVQ_HD inline void decode_fast(std::uint32_t u, int mantissa_bits, int min_exp, std::uint32_t& sig, int& e,
                               bool& dropped) noexcept {
  const int biased = static_cast<int>((u >> 23) & 0xffu);
  const std::uint32_t mant = u & 0x7fffffu;
  const std::uint32_t m = biased != 0 ? (mant | 0x800000u) : mant;
  const int x2 = biased != 0 ? biased - 150 : -149;  // exponent of the float's lsb
  const int top = biased != 0 ? biased - 127 : -127;  // below min_exp for a float subnormal
  e = top > min_exp ? top : min_exp;
  int s = e - mantissa_bits - x2;  // >= 23 - mantissa_bits > 0
  if (s > 31) s = 31;              // m < 2^24: any shift from 24 on gives 0
  sig = m >> s;
  dropped = (m & ((std::uint32_t{1} << s) - 1u)) != 0;
}

// round_to_output with floor_log2_fast (same integers, same bits).
KVQ_HD inline float round_to_output_fast(bool neg, std::uint64_t mag, int lsb, int frac_bits, output_format_info o,
                                         final_rounding r) noexcept {
  const std::uint32_t sign = neg ? 0x80000000u : 0u;
  if (mag == 0) return float_of(sign);
  const int t = floor_log2_fast(mag) + lsb;
  const int e = t > o.min_exp ? t : o.min_exp;
  const int q = e - frac_bits;
  std::uint64_t keep;
  if (lsb >= q) {
    keep = mag << (lsb - q);
  } else {
    const int s = q - lsb;
    keep = s >= 64 ? 0 : (mag >> s);
    if (r == final_rounding::nearest_even) {
      const bool half = s - 1 < 64 && ((mag >> (s - 1)) & 1u) != 0;
      const bool sticky = s - 1 >= 64 ? mag != 0 : (mag & ((std::uint64_t{1} << (s - 1)) - 1)) != 0;
      if (half && (sticky || (keep & 1u) != 0)) ++keep;
    }
  }
  if (keep == 0) return float_of(sign);
  const int msb = floor_log2_fast(keep);
  const int fe = msb + q;
  if (fe > o.max_exp) {
    if (r == final_rounding::nearest_even) return float_of(sign | 0x7f800000u);
    const std::uint64_t mx = (std::uint64_t{1} << (frac_bits + 1)) - 1;
    const std::uint32_t frac = detail::fp32_fraction(mx, frac_bits);
    return float_of(sign | (static_cast<std::uint32_t>(o.max_exp + 127) << 23) | frac);
  }
  if (fe >= -126) {
    const std::uint32_t frac = detail::fp32_fraction(keep, msb);
    return float_of(sign | (static_cast<std::uint32_t>(fe + 127) << 23) | frac);
  }
  return float_of(sign | static_cast<std::uint32_t>(keep << (q + 149)));
}

// add_fixed with floor_log2_fast (same integers).
KVQ_HD inline fixed add_fixed_fast(fixed x, fixed y) noexcept {
  if (x.mag == 0) return y;
  if (y.mag == 0) return x;
  const int tx = floor_log2_fast(x.mag) + x.lsb, ty = floor_log2_fast(y.mag) + y.lsb;
  const int top = tx > ty ? tx : ty;
  int l = x.lsb < y.lsb ? x.lsb : y.lsb;
  if (l < top - 60) l = top - 60;
  const std::uint64_t mx = x.lsb >= l ? (x.mag << (x.lsb - l)) : shift_right_jam(x.mag, l - x.lsb);
  const std::uint64_t my = y.lsb >= l ? (y.mag << (y.lsb - l)) : shift_right_jam(y.mag, l - y.lsb);
  if (x.neg == y.neg) return {x.neg, mx + my, l};
  if (mx >= my) return {x.neg, mx - my, l};
  return {y.neg, my - mx, l};
}

}  // namespace detail

namespace detail {

// True when n terms, each below 2^(frac_bits + 2) in magnitude (a product significand is
// below 4), always sum to less than 2^31: n · 2^(frac_bits + 2) <= 2^31.
KVQ_HD constexpr bool sum_fits_int32(int n, int frac_bits) noexcept {
  return frac_bits + 2 <= 31 && (static_cast<std::int64_t>(n) << (frac_bits + 2)) <= (std::int64_t{1} << 31);
}

// c decoded in the output format (decode_fast: for fp32 every float decodes unshifted).
struct c_operand {
  std::uint32_t sig;
  int exp;
  int lsb;
  bool neg;
  bool zero;
};

KVQ_HD inline c_operand decode_c(float c, output_format_info fo) noexcept {
  const std::uint32_t uc = bits_of(c);
  std::uint32_t sig;
  int e;
  bool dropped;
  decode_fast(uc, fo.mantissa_bits, fo.min_exp, sig, e, dropped);
  return {sig, e, e - fo.mantissa_bits, (uc >> 31) != 0, sig == 0};
}

// The end of block_fma once the truncated product terms are summed: acc in units of 2^q
// (q = E - frac_bits): c aligned, late or separate, then the one rounding.
KVQ_HD inline float block_tail(const block_fma_params& p, output_format_info fo, const c_operand& cc, std::int64_t acc,
                               int q) noexcept {
  if (p.c_mode == c_entry::aligned && !cc.zero) {
    const std::uint64_t t = align_truncate(cc.sig, cc.lsb, q);
    acc += cc.neg ? -static_cast<std::int64_t>(t) : static_cast<std::int64_t>(t);
  }
  fixed sum{acc < 0, acc < 0 ? static_cast<std::uint64_t>(-acc) : static_cast<std::uint64_t>(acc), q};
  if (p.c_mode == c_entry::separate) {
    const float s =
        round_to_output_fast(sum.neg, sum.mag, sum.lsb, p.result_frac_bits, fo, final_rounding::toward_zero);
    std::uint32_t ssig;
    int sexp;
    bool sdrop;
    const std::uint32_t us = bits_of(s);
    decode_fast(us, fo.mantissa_bits, fo.min_exp, ssig, sexp, sdrop);
    if (ssig == 0 && cc.zero) return float_of(0u);
    sum = add_fixed_fast(fixed{(us >> 31) != 0, ssig, sexp - fo.mantissa_bits}, fixed{cc.neg, cc.sig, cc.lsb});
    if (sum.mag == 0) return float_of(0u);
    return round_to_output_fast(sum.neg, sum.mag, sum.lsb, p.result_frac_bits, fo, p.rounding);
  }
  if (p.c_mode == c_entry::late && !cc.zero) sum = add_fixed_fast(sum, fixed{cc.neg, cc.sig, cc.lsb});
  return round_to_output_fast(sum.neg, sum.mag, sum.lsb, p.result_frac_bits, fo, p.rounding);
}

// block_fma_fast for an input format of MB mantissa bits and minimum exponent MIN_EXP and
// N products (N == 0: n products, n known at run time only). The caller has checked
// 0 < n <= max_block and F = frac_bits - 2·MB >= 0.
template <int MB, int MIN_EXP, int N>
KVQ_HD inline float block_fma_fast_impl(const block_fma_params& p, input_format in, const float* a, const float* b,
                                        int n_rt, float c) noexcept {
  const int n = N > 0 ? N : n_rt;
  const int F = p.frac_bits - 2 * MB;
  const std::uint32_t uc = bits_of(c);
  std::uint32_t special = (uc & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
  std::uint32_t mag[N > 0 ? N : max_block];
  int ex[N > 0 ? N : max_block];
  std::uint32_t neg[N > 0 ? N : max_block];
  int emax = -100000;
  for (int i = 0; i < n; ++i) {
    const std::uint32_t ua = bits_of(a[i]), ub = bits_of(b[i]);
    special |= ((ua & 0x7f800000u) == 0x7f800000u ? 1u : 0u) | ((ub & 0x7f800000u) == 0x7f800000u ? 1u : 0u);
    std::uint32_t sa, sb;
    int ea, eb;
    bool la, lb;
    decode_fast(ua, MB, MIN_EXP, sa, ea, la);
    decode_fast(ub, MB, MIN_EXP, sb, eb, lb);
    const std::uint32_t m = sa * sb;
    const int e = ea + eb;
    mag[i] = m;
    ex[i] = e;
    neg[i] = (ua ^ ub) >> 31;
    const int ee = m != 0 ? e : -100000;
    emax = ee > emax ? ee : emax;
  }
  if (special != 0 || emax == -100000) return block_fma(p, in, a, b, n, c);

  const output_format_info fo = info(p.out);
  const c_operand cc = decode_c(c, fo);
  if (p.c_mode == c_entry::aligned && !cc.zero && cc.exp > emax) emax = cc.exp;
  if (emax < p.min_align_exp) emax = p.min_align_exp;
  const int q = emax - p.frac_bits;

  std::int64_t acc = 0;
  if (sum_fits_int32(n, p.frac_bits)) {
    std::int32_t acc32 = 0;
    for (int i = 0; i < n; ++i) {
      int d = emax - ex[i];
      d = d < 0 ? 0 : (d > 31 ? 31 : d);
      const std::int32_t t = static_cast<std::int32_t>((mag[i] << F) >> d);
      acc32 += neg[i] != 0 ? -t : t;
    }
    acc = acc32;
  } else {
    for (int i = 0; i < n; ++i) {
      int d = emax - ex[i];
      d = d < 0 ? 0 : (d > 63 ? 63 : d);
      const std::int64_t t = static_cast<std::int64_t>((static_cast<std::uint64_t>(mag[i]) << F) >> d);
      acc += neg[i] != 0 ? -t : t;
    }
  }
  return block_tail(p, fo, cc, acc, q);
}

// The same block by fp32 arithmetic, for input formats whose products are exact floats
// (e4m3, e5m2, fp16: significands of at most 11 bits, product exponents from -48 to 32):
// the truncated term floor(|a·b| / 2^q) is the float product a·b scaled by 2^-q (exact:
// a power of two, and a result below 2^-126 truncates to 0 whatever its rounding) and
// converted to an integer toward zero, which carries the sign. The maximum exponent
// needs only the operands' exponent fields: a value of these formats is a normal float
// (or zero), whose exponent in the format is max(float exponent, MIN_EXP). Only for
// values of the format (block_fma's contract); windows up to 29 bits (terms < 2^31) and
// q in [-126, 126] (2^-q a normal float), otherwise the integer form above.
template <int MB, int MIN_EXP, int N>
KVQ_HD inline float block_fma_fast_fp(const block_fma_params& p, input_format in, const float* a, const float* b,
                                      int n_rt, float c) noexcept {
  const int n = N > 0 ? N : n_rt;
  const std::uint32_t uc = bits_of(c);
  std::uint32_t special = (uc & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
  int emax = -100000;
  for (int i = 0; i < n; ++i) {
    const std::uint32_t ua = bits_of(a[i]), ub = bits_of(b[i]);
    special |= ((ua & 0x7f800000u) == 0x7f800000u ? 1u : 0u) | ((ub & 0x7f800000u) == 0x7f800000u ? 1u : 0u);
    const int fa = static_cast<int>((ua >> 23) & 0xffu) - 127, fb = static_cast<int>((ub >> 23) & 0xffu) - 127;
    const int ea = fa > MIN_EXP ? fa : MIN_EXP, eb = fb > MIN_EXP ? fb : MIN_EXP;
    const bool nz = ((ua & 0x7fffffffu) != 0) & ((ub & 0x7fffffffu) != 0);
    const int ee = nz ? ea + eb : -100000;
    emax = ee > emax ? ee : emax;
  }
  if (special != 0 || emax == -100000) return block_fma(p, in, a, b, n, c);
  const output_format_info fo = info(p.out);
  const c_operand cc = decode_c(c, fo);
  if (p.c_mode == c_entry::aligned && !cc.zero && cc.exp > emax) emax = cc.exp;
  if (emax < p.min_align_exp) emax = p.min_align_exp;
  const int q = emax - p.frac_bits;
  if (q < -126 || q > 126) return block_fma_fast_impl<MB, MIN_EXP, N>(p, in, a, b, n_rt, c);
  const float scale = float_of(static_cast<std::uint32_t>(127 - q) << 23);  // 2^-q
  std::int64_t acc = 0;
  if (sum_fits_int32(n, p.frac_bits)) {
    std::int32_t acc32 = 0;
    for (int i = 0; i < n; ++i) acc32 += static_cast<std::int32_t>((a[i] * b[i]) * scale);
    acc = acc32;
  } else {
    for (int i = 0; i < n; ++i) acc += static_cast<std::int32_t>((a[i] * b[i]) * scale);
  }
  return block_tail(p, fo, cc, acc, q);
}

template <int MB, int MIN_EXP>
KVQ_HD inline float block_fma_fast_n(const block_fma_params& p, input_format in, const float* a, const float* b, int n,
                                     float c) noexcept {
  if (MIN_EXP >= -14 && p.frac_bits <= 29) {  // e4m3, e5m2, fp16 (not bf16)
    switch (n) {
      case 32: return block_fma_fast_fp<MB, MIN_EXP, 32>(p, in, a, b, n, c);
      case 16: return block_fma_fast_fp<MB, MIN_EXP, 16>(p, in, a, b, n, c);
      case 8: return block_fma_fast_fp<MB, MIN_EXP, 8>(p, in, a, b, n, c);
      default: return block_fma_fast_fp<MB, MIN_EXP, 0>(p, in, a, b, n, c);
    }
  }
  switch (n) {
    case 32: return block_fma_fast_impl<MB, MIN_EXP, 32>(p, in, a, b, n, c);
    case 16: return block_fma_fast_impl<MB, MIN_EXP, 16>(p, in, a, b, n, c);
    case 8: return block_fma_fast_impl<MB, MIN_EXP, 8>(p, in, a, b, n, c);
    default: return block_fma_fast_impl<MB, MIN_EXP, 0>(p, in, a, b, n, c);
  }
}

}  // namespace detail

/// block_fma(p, in, a, b, n, c) with the same bits (see the file comment), faster.
KVQ_HD inline float block_fma_fast(const block_fma_params& p, input_format in, const float* a, const float* b, int n,
                                   float c) noexcept {
  using namespace detail;
  const input_format_info fi = info(in);
  if (n <= 0 || n > max_block || p.frac_bits < 2 * fi.mantissa_bits) return block_fma(p, in, a, b, n, c);
  switch (in) {
    case input_format::e4m3: return block_fma_fast_n<3, -6>(p, in, a, b, n, c);
    case input_format::e5m2: return block_fma_fast_n<2, -14>(p, in, a, b, n, c);
    case input_format::bf16: return block_fma_fast_n<7, -126>(p, in, a, b, n, c);
    case input_format::fp16: return block_fma_fast_n<10, -14>(p, in, a, b, n, c);
  }
  return block_fma(p, in, a, b, n, c);
}

/// dot(p, in, a, b, K, c) with the same bits: consecutive blocks of p.k products through
/// block_fma_fast.
KVQ_HD inline float dot_fast(const block_fma_params& p, input_format in, const float* a, const float* b, int K,
                             float c) noexcept {
  float acc = c;
  for (int i = 0; i < K; i += p.k) {
    const int n = K - i < p.k ? K - i : p.k;
    acc = block_fma_fast(p, in, a + i, b + i, n, acc);
  }
  if (K <= 0) acc = block_fma(p, in, a, b, 0, c);
  return acc;
}

}  // namespace kvq::mma
