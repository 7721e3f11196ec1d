/// \file
/// kvq/mma/block_scale.hpp — block-scaled tensor-core MMA: d = Σ_k (a_k · sa_blk)(b_k · sb_blk) + c
/// over one instruction, in exact integer arithmetic (KVQ_HD: no allocation, no exceptions).
///
/// Instructions (PTX ISA 8.7 and later; the section numbers move between ISA versions):
/// "TensorCore 5th Generation Family Instructions", tcgen05.mma with .block_scale (sm_100a),
/// and "Warp Level Matrix Multiply-Accumulate Instructions", mma.sync with .block_scale and
/// .kind::mxf8f6f4 / .kind::mxf4nvf4 (sm_120a):
///
/// ~~~
///   kind::mxf8f6f4  K = 32 per instruction, one ue8m0 scale per 32 elements of a row of A
///                   and of a column of B (block32, scale_vec::1X); a, b in e4m3, e5m2,
///                   e3m2, e2m3, e2m1 (OCP MX).
///   kind::mxf4nvf4  K = 64, a and b in e2m1; ue8m0 scales per 32 (MXFP4, scale_vec::2X)
///                   or per 16 elements (scale_vec::4X), or ue4m3 scales per 16 (NVFP4).
///                   kind::mxf4 (e2m1, ue8m0 per 32) is the (mxf4nvf4, ue8m0, 32) preset.
/// ~~~
///
/// The rule is the one of MMA-Sim (Xie, Wang, Yang, Yang, "MMA-Sim: Bit-Accurate Reference
/// Model of Tensor Cores and Matrix Cores", arXiv 2511.10909; microsoft/MMA-Sim,
/// mmasim/simulator/arithmetic.py), re-derived here in integer arithmetic. MMA-Sim models
/// tcgen05.mma (sm_100) and mma.sync block_scale (sm_120) with the same arithmetic.
///
/// kind::mxf8f6f4 (`group` = 1): every product a_k b_k sa sb is exact; its exponent is
/// e(a_k) + e(b_k) + e(sa) + e(sb) (subnormal elements count with their format's minimum
/// exponent). kind::mxf4nvf4 (`group` = 16): the 16 products of a group are added exactly
/// (e2m1 products are multiples of 1/4), the group sum is multiplied by the two scale
/// significands, and the term's exponent is e(sa) + e(sb) alone — the group sum is not
/// normalised, so it can reach 2^11 in units of that exponent. In both kinds c is one more
/// term with its fp32 exponent, and a zero element, zero scale or zero c counts with
/// exponent -126 (`block_scale_zero_exp`) in the maximum E. Every term is truncated toward
/// zero to a multiple of 2^(E - frac_bits) (25 bits for mxf8f6f4, 35 for mxf4nvf4), the
/// terms are added exactly, and the sum is truncated toward zero to fp32 (subnormals
/// kept). A sum of 2^128 or more gives Inf of its sign; an exact zero sum gives +0.
///
/// Special values: a NaN scale or NaN c gives the canonical NaN 0x7fffffff; for
/// mxf8f6f4 also a NaN element, Inf × 0 and Infs of both signs; otherwise an Inf (element
/// or c) gives Inf of its sign. MMA-Sim does not define an Inf c for mxf4nvf4 (its model
/// stops there); kvq returns that Inf.
///
/// Evidence: none of this is a hardware record. tests/data/mma-sim/ holds MMA-Sim's own
/// outputs (random and hard cases), replayed bit for bit by tests/mma/test_block_scale.cpp.
/// With unit scales kind::mxf8f6f4 under this rule is MMA-Sim's kind::f8f6f4 model,
/// which the recorded B200 fp8 inner products contradict on about 35% of their lines
/// whenever c ≠ 0 (docs/mma.md): the hardware adds c after the product sum has been
/// truncated to fp32, and rounds that addition to nearest even. `c_entry::separate`
/// selects that reading for the block-scaled kinds too (not the preset's default, as
/// nothing records the block-scaled instructions).
#pragma once

#include <kvq/config.hpp>
#include <kvq/mma/block_fma.hpp>
#include <kvq/mma/params.hpp>

#include <cstdint>

namespace kvq::mma {

/// Element formats of the block-scaled kinds (OCP MX FP8/FP6/FP4).
enum class element_format { e4m3, e5m2, e3m2, e2m3, e2m1 };

/// Scale formats: ue8m0 (a power of two 2^-127 .. 2^127, 0xff NaN) and ue4m3 (an unsigned
/// e4m3 value, 0 .. 448, 0x7f NaN).
enum class scale_format { ue8m0, ue4m3 };

/// The tcgen05.mma / mma.sync block-scaled kind.
enum class block_scale_kind { mxf8f6f4, mxf4nvf4 };

/// How firmly something decides a block-scaled preset; here: MMA-Sim's model only.
enum class block_scale_evidence {
  /// Reproduces MMA-Sim (arXiv 2511.10909) bit for bit on its own vectors; no hardware record.
  simulated,
  /// As simulated, but MMA-Sim has no model of this element format (e3m2, e2m3, and e2m1
  /// inside kind::mxf8f6f4): the same rule is assumed.
  assumed
};

/// Significand and exponent range of element format f (e4m3 {3, -6, 8}, e5m2 {2, -14, 15},
/// e3m2 {2, -2, 4}, e2m3 {3, 0, 2}, e2m1 {1, 0, 2}).
KVQ_HD constexpr input_format_info info(element_format f) noexcept {
  switch (f) {
    case element_format::e4m3: return {3, -6, 8};
    case element_format::e5m2: return {2, -14, 15};
    case element_format::e3m2: return {2, -2, 4};
    case element_format::e2m3: return {3, 0, 2};
    case element_format::e2m1: return {1, 0, 2};
  }
  return {0, 0, 0};
}

/// Significand and exponent range of scale format f (ue8m0 {0, -127, 127}, ue4m3 {3, -6, 8}).
KVQ_HD constexpr input_format_info info(scale_format f) noexcept {
  return f == scale_format::ue8m0 ? input_format_info{0, -127, 127} : input_format_info{3, -6, 8};
}

/// The exponent a zero element, zero scale or zero c counts with in the alignment maximum
/// (MMA-Sim takes the exponent of zero to be fp32's minimum normal exponent).
inline constexpr int block_scale_zero_exp = -126;

/// One block-scaled MMA instruction (one inner product of one row of A and one column of B).
struct block_scale_params {
  /// The instruction kind.
  block_scale_kind kind;
  /// Products per instruction: 32 (mxf8f6f4) or 64 (mxf4nvf4).
  int k;
  /// Elements per scale: 32 or 16.
  int block;
  /// Products added exactly before the scales apply: 1 (mxf8f6f4) or 16 (mxf4nvf4).
  int group;
  /// Fraction bits of the alignment window below the maximum exponent: 25 or 35.
  int frac_bits;
  /// Scale format.
  scale_format scale;
  /// Where c enters: aligned (MMA-Sim: one more term of the window, result toward zero) or
  /// separate (the terms' sum truncated to fp32, then c added by an fp32 addition rounded to
  /// nearest even, as the recorded B200 kind::f8f6f4 data show for unscaled fp8).
  c_entry c_mode;
};

/// The preset of (kind, scale, block): mxf8f6f4 with ue8m0 / 32; mxf4nvf4 with ue8m0 / 32
/// (MXFP4), ue8m0 / 16, ue4m3 / 16 (NVFP4). False for other combinations (PTX allows ue4m3
/// only with scale_vec::4X, i.e. block 16, and mxf8f6f4 only with ue8m0 / 32). The same
/// preset serves tcgen05.mma (sm_100a) and mma.sync block_scale (sm_120a).
KVQ_HD constexpr bool find_block_scale_preset(block_scale_kind kind, scale_format s, int block,
                                              block_scale_params& p) noexcept {
  if (kind == block_scale_kind::mxf8f6f4) {
    if (s != scale_format::ue8m0 || block != 32) return false;
    p = {kind, 32, 32, 1, 25, s, c_entry::aligned};
    return true;
  }
  if (s == scale_format::ue4m3 && block != 16) return false;
  if (block != 16 && block != 32) return false;
  p = {kind, 64, block, 16, 35, s, c_entry::aligned};
  return true;
}

namespace detail {

// One aligned term: sign × mag × 2^lsb, with `exp` its exponent for the alignment maximum.
struct bs_term {
  bool neg;
  std::uint64_t mag;
  int lsb;
  int exp;
};

KVQ_HD inline decoded decode_scale(float s, scale_format f) noexcept {
  const input_format_info i = info(f);
  decoded d = decode(s, i.mantissa_bits, i.min_exp);
  d.neg = false;  // ue4m3: the sign is ignored (MMA-Sim takes |scale|)
  return d;
}

}  // namespace detail

/// d = Σ_k (a_k · sa[k / p.block]) (b_k · sb[k / p.block]) + c over p.k products (one
/// instruction), as described in this file's header. a, b: p.k values of fa, fb; sa, sb:
/// p.k / p.block scale values of p.scale (ue8m0 as the float 2^e, NaN as a NaN); c: fp32.
/// The checked host entry is block_scale_dot (api.hpp).
KVQ_HD inline float block_scale_fma(const block_scale_params& p, element_format fa, element_format fb,
                                    const float* a, const float* b, const float* sa, const float* sb,
                                    float c) noexcept {
  using namespace detail;
  const int nscales = p.k / p.block;
  // Special values.
  {
    bool nan = false, pos_inf = false, neg_inf = false;
    for (int j = 0; j < nscales; ++j)
      if (is_nan_bits(bits_of(sa[j])) || is_nan_bits(bits_of(sb[j]))) nan = true;
    for (int i = 0; i < p.k; ++i) {
      const std::uint32_t ua = bits_of(a[i]), ub = bits_of(b[i]);
      if (is_nan_bits(ua) || is_nan_bits(ub)) nan = true;
      const bool ia = is_inf_bits(ua), ib = is_inf_bits(ub);
      if (ia || ib) {
        const bool za = (ua & 0x7fffffffu) == 0, zb = (ub & 0x7fffffffu) == 0;
        if (za || zb) {
          nan = true;
        } else if (((ua ^ ub) >> 31) != 0) {
          neg_inf = true;
        } else {
          pos_inf = true;
        }
      }
    }
    const std::uint32_t uc = bits_of(c);
    if (is_nan_bits(uc)) nan = true;
    if (is_inf_bits(uc)) ((uc >> 31) != 0 ? neg_inf : pos_inf) = true;
    if (nan || (pos_inf && neg_inf)) return canonical_nan();
    if (pos_inf) return float_of(0x7f800000u);
    if (neg_inf) return float_of(0xff800000u);
  }

  const input_format_info ia = info(fa), ib = info(fb);
  const output_format_info fo = info(output_format::fp32);
  constexpr int max_terms = max_block + 1;
  bs_term t[max_terms];
  int n = 0;
  const int group = p.group < 1 ? 1 : p.group;
  for (int g = 0; g < p.k; g += group) {
    const decoded s0 = decode_scale(sa[g / p.block], p.scale);
    const decoded s1 = decode_scale(sb[g / p.block], p.scale);
    const int es = (s0.zero ? block_scale_zero_exp : s0.exp) + (s1.zero ? block_scale_zero_exp : s1.exp);
    if (group == 1) {
      const decoded da = decode(a[g], ia.mantissa_bits, ia.min_exp);
      const decoded db = decode(b[g], ib.mantissa_bits, ib.min_exp);
      const int e = (da.zero ? block_scale_zero_exp : da.exp) + (db.zero ? block_scale_zero_exp : db.exp) + es;
      const bool zero = da.zero || db.zero || s0.zero || s1.zero;
      t[n++] = {da.neg != db.neg, zero ? 0 : da.sig * db.sig * s0.sig * s1.sig,
                da.lsb_exp + db.lsb_exp + s0.lsb_exp + s1.lsb_exp, e};
    } else {
      // Exact group sum in units of 2^(lsb_a + lsb_b) of the formats' smallest steps.
      const int la = ia.min_exp - ia.mantissa_bits, lb = ib.min_exp - ib.mantissa_bits;
      std::int64_t s = 0;
      for (int i = g; i < g + group && i < p.k; ++i) {
        const decoded da = decode(a[i], ia.mantissa_bits, ia.min_exp);
        const decoded db = decode(b[i], ib.mantissa_bits, ib.min_exp);
        if (da.zero || db.zero) continue;
        const std::int64_t v = static_cast<std::int64_t>((da.sig << (da.lsb_exp - la)) * (db.sig << (db.lsb_exp - lb)));
        s += da.neg != db.neg ? -v : v;
      }
      const std::uint64_t mag = s < 0 ? static_cast<std::uint64_t>(-s) : static_cast<std::uint64_t>(s);
      const bool zero = mag == 0 || s0.zero || s1.zero;
      t[n++] = {s < 0, zero ? 0 : mag * s0.sig * s1.sig, la + lb + s0.lsb_exp + s1.lsb_exp, es};
    }
  }
  const decoded dc = decode(c, fo.mantissa_bits, fo.min_exp);
  const int ec = dc.zero ? block_scale_zero_exp : dc.exp;
  const bool c_aligned = p.c_mode == c_entry::aligned;

  int emax = c_aligned ? ec : t[0].exp;
  for (int i = 0; i < n; ++i)
    if (t[i].exp > emax) emax = t[i].exp;
  const int q = emax - p.frac_bits;
  // Exact sum in units of 2^q: at most 2^(frac_bits + 11) per term (mxf4nvf4 group sums),
  // 2^(frac_bits + 2) per product (mxf8f6f4); 65 terms fit in 63 bits.
  std::int64_t acc = 0;
  for (int i = 0; i < n; ++i) {
    if (t[i].mag == 0) continue;
    const std::uint64_t v = align_truncate(t[i].mag, t[i].lsb, q);
    acc += t[i].neg ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  }
  if (c_aligned && !dc.zero) {
    const std::uint64_t v = align_truncate(dc.sig, dc.lsb_exp, q);
    acc += dc.neg ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  }
  fixed sum{acc < 0, acc < 0 ? static_cast<std::uint64_t>(-acc) : static_cast<std::uint64_t>(acc), q};
  final_rounding r = final_rounding::toward_zero;
  if (!c_aligned) {
    // The products' sum truncated to fp32 (overflow: Inf), then one fp32 addition of c.
    if (sum.mag != 0 && floor_log2(sum.mag) + sum.lsb > fo.max_exp)
      return float_of((sum.neg ? 0x80000000u : 0u) | 0x7f800000u);
    const float s = round_to_output(sum.neg, sum.mag, sum.lsb, 23, fo, final_rounding::toward_zero);
    const decoded ds = decode(s, fo.mantissa_bits, fo.min_exp);
    sum = add_fixed(fixed{ds.neg, ds.zero ? 0 : ds.sig, ds.lsb_exp}, fixed{dc.neg, dc.zero ? 0 : dc.sig, dc.lsb_exp});
    r = final_rounding::nearest_even;
  }
  if (sum.mag == 0) return float_of(0u);
  if (r == final_rounding::toward_zero && floor_log2(sum.mag) + sum.lsb > fo.max_exp)
    return float_of((sum.neg ? 0x80000000u : 0u) | 0x7f800000u);  // MMA-Sim: Inf, not the largest finite
  return round_to_output(sum.neg, sum.mag, sum.lsb, 23, fo, r);
}

}  // namespace kvq::mma
