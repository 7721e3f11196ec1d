/// \file
/// kvq/mma/mfma.hpp — AMD CDNA3 (MI300) matrix-core inner products (v_mfma_f32_*), in exact
/// integer arithmetic (KVQ_HD: no allocation, no exceptions, no 128-bit types).
///
/// The rule is the one of MMA-Sim (Xie, Wang, Yang, Yang, "MMA-Sim: Bit-Accurate Reference
/// Model of Tensor Cores and Matrix Cores", arXiv 2511.10909; microsoft/MMA-Sim,
/// mmasim/simulator/amd.py and the function amd_fused_dot_rd_add of
/// mmasim/simulator/arithmetic.py), re-derived here in integer arithmetic. It is not the
/// NVIDIA block FMA of block_fma.hpp: AMD's fused step rounds down (toward -Inf) where it
/// aligns the product sum with c, keeps c in its own window, and in the fp8 instructions
/// sums the even- and odd-indexed products separately.
///
/// A *fused step* (mfma_step::fused) over one group of products and the accumulator c:
///
/// ~~~
///   1. every product a_i b_i is exact, with exponent e(a_i) + e(b_i); a subnormal operand
///      counts with its format's minimum exponent and a zero operand with -126
///      (mfma_zero_exp), so zero products take part in the maximum;
///   2. E = the largest product exponent; every product is truncated toward zero to a
///      multiple of 2^(E - frac_bits) (24) and the truncated products are added exactly.
///      fp8 (halves): the even- and odd-indexed products are two such sums with their own
///      maxima E0, E1; each is rounded down to a multiple of 2^(max(E0, E1) - frac_bits)
///      and the two are added (E = max(E0, E1));
///   3. M = max(E, e(c)) (a zero c counts with -126); the product sum is rounded down to a
///      multiple of 2^(M - sum_frac_bits) (31), c to a multiple of 2^(M - c_frac_bits) (24);
///      fp8: a c with e(c) < M - c_drop (25) is dropped;
///   4. the two are added exactly and rounded to nearest even to fp32 (subnormals kept,
///      overflow to Inf); an exact zero gives +0.
/// ~~~
///
/// An instruction of k products is a chain of fused steps over groups of `group` products
/// (the d of one step, an fp32 value, is the c of the next): CDNA3 fp8/bf8 16 products
/// (two halves of 8), bf16/fp16 8 products (4 in the k = 4 shapes), xf32 4 products of fp32
/// operands truncated to 10 fraction bits (tf32). fp32 (mfma_step::fma) is a chain of fp32
/// fused multiply-adds, d = fma(a_i, b_i, d), in product order.
///
/// Special values, as MMA-Sim: any NaN operand, Inf × 0, or Infs of both signs give NaN
/// (returned as the canonical 0x7fffffff); otherwise an Inf gives Inf of its sign. In a
/// fused step a finite product of 2^128 or more gives Inf of its sign (NaN if both signs
/// occur). The fnuz fp8 formats have no Inf; their NaN is the one code 0x80.
///
/// Evidence: none of this is a hardware record. tests/data/mma-sim/ holds MMA-Sim's own
/// outputs of the CDNA3 instructions (random and hard cases), replayed bit for bit by
/// tests/mma/test_mfma.cpp.
#pragma once

#include <kvq/config.hpp>
#include <kvq/mma/block_fma.hpp>
#include <kvq/mma/params.hpp>

#include <cstdint>

namespace kvq::mma {

/// Operand formats of the CDNA3 MFMA instructions: e4m3fnuz ("fp8"), e5m2fnuz ("bf8"),
/// bf16, fp16, fp32 (the f32 and xf32 instructions).
enum class mfma_input { e4m3fnuz, e5m2fnuz, bf16, fp16, fp32 };

/// How one step of an MFMA instruction combines its products with the accumulator.
enum class mfma_step {
  /// d = fma(a_i, b_i, d), one fp32 fused multiply-add per product, in order.
  fma,
  /// AMD's fused dot product with round-down addition of c (see the file comment).
  fused
};

/// CDNA3 MFMA presets, one canonical name per instruction family (the number of
/// products per fused step is what tells the shapes apart).
enum class mfma_preset {
  /// v_mfma_f32_{16x16x32,32x32x16}_{fp8,bf8}_{fp8,bf8}: e4m3fnuz / e5m2fnuz operands in
  /// any mix, steps of 16 products summed in two halves.
  cdna3_fp8,
  /// v_mfma_f32_{32x32x8,16x16x16}_bf16: steps of 8 products.
  cdna3_bf16,
  /// v_mfma_f32_{32x32x4_2b,16x16x4_4b,4x4x4_16b}_bf16: steps of 4 products.
  cdna3_bf16_k4,
  /// v_mfma_f32_{32x32x8,16x16x16}_f16: steps of 8 products.
  cdna3_fp16,
  /// v_mfma_f32_{32x32x4_2b,16x16x4_4b,4x4x4_16b}_f16: steps of 4 products.
  cdna3_fp16_k4,
  /// v_mfma_f32_{16x16x8,32x32x4}_xf32: fp32 operands truncated to tf32, steps of 4.
  cdna3_xf32,
  /// v_mfma_f32_*_f32: a chain of fp32 fused multiply-adds.
  cdna3_fp32
};

/// The exponent a zero operand or a zero c takes in the alignment maxima (MMA-Sim's
/// convention: frexp of zero is replaced by -126).
inline constexpr int mfma_zero_exp = -126;

/// The parameters of one MFMA preset (see the file comment for the rule).
struct mfma_params {
  /// Operand formats the instruction family takes (a and b each one of `in0`, `in1`).
  mfma_input in0;
  /// The second allowed operand format (= in0 when there is one).
  mfma_input in1;
  /// fma chain or fused steps.
  mfma_step step;
  /// Products per fused step (1 for the fma chain).
  int group;
  /// fp8: the even- and odd-indexed products of a step are summed separately.
  bool halves;
  /// xf32: fp32 operands are truncated to 10 fraction bits (toward zero) first.
  bool tf32_operands;
  /// Fraction bits kept below a sum's maximum product exponent (24).
  int frac_bits;
  /// Fraction bits of the product sum below M = max(E, e(c)) (31), rounded down.
  int sum_frac_bits;
  /// Fraction bits of c below M (24), rounded down.
  int c_frac_bits;
  /// fp8: c is dropped when e(c) < M - c_drop (25); negative: never dropped.
  int c_drop;
};

/// The parameters of preset p.
KVQ_HD constexpr mfma_params get_mfma_params(mfma_preset p) noexcept {
  switch (p) {
    case mfma_preset::cdna3_fp8:
      return {mfma_input::e4m3fnuz, mfma_input::e5m2fnuz, mfma_step::fused, 16, true, false, 24, 31, 24, 25};
    case mfma_preset::cdna3_bf16:
      return {mfma_input::bf16, mfma_input::bf16, mfma_step::fused, 8, false, false, 24, 31, 24, -1};
    case mfma_preset::cdna3_bf16_k4:
      return {mfma_input::bf16, mfma_input::bf16, mfma_step::fused, 4, false, false, 24, 31, 24, -1};
    case mfma_preset::cdna3_fp16:
      return {mfma_input::fp16, mfma_input::fp16, mfma_step::fused, 8, false, false, 24, 31, 24, -1};
    case mfma_preset::cdna3_fp16_k4:
      return {mfma_input::fp16, mfma_input::fp16, mfma_step::fused, 4, false, false, 24, 31, 24, -1};
    case mfma_preset::cdna3_xf32:
      return {mfma_input::fp32, mfma_input::fp32, mfma_step::fused, 4, false, true, 24, 31, 24, -1};
    case mfma_preset::cdna3_fp32:
      return {mfma_input::fp32, mfma_input::fp32, mfma_step::fma, 1, false, false, 24, 31, 24, -1};
  }
  return {mfma_input::fp32, mfma_input::fp32, mfma_step::fma, 1, false, false, 24, 31, 24, -1};
}

/// Significand and exponent range of operand format f (e4m3fnuz {3, -7, 7}, e5m2fnuz
/// {2, -15, 15}, bf16 {7, -126, 127}, fp16 {10, -14, 15}, fp32 {23, -126, 127}).
KVQ_HD constexpr input_format_info info(mfma_input f) noexcept {
  switch (f) {
    case mfma_input::e4m3fnuz: return {3, -7, 7};
    case mfma_input::e5m2fnuz: return {2, -15, 15};
    case mfma_input::bf16: return {7, -126, 127};
    case mfma_input::fp16: return {10, -14, 15};
    case mfma_input::fp32: return {23, -126, 127};
  }
  return {0, 0, 0};
}

namespace detail {

// floor(v / 2^s) for s >= 0 (an arithmetic shift written without relying on >> of a
// negative value).
KVQ_HD inline std::int64_t floor_shift(std::int64_t v, int s) noexcept {
  if (s <= 0) return v;
  if (s >= 62) return v < 0 ? -1 : 0;
  if (v >= 0) return v >> s;
  const std::uint64_t m = static_cast<std::uint64_t>(-v);
  return -static_cast<std::int64_t>((m + (std::uint64_t{1} << s) - 1) >> s);
}

// v × 2^s for s >= 0, or floor(v / 2^-s) for s < 0.
KVQ_HD inline std::int64_t scale_floor(std::int64_t v, int s) noexcept {
  return s >= 0 ? static_cast<std::int64_t>(static_cast<std::uint64_t>(v) << s) : floor_shift(v, -s);
}

KVQ_HD inline float tf32_truncate(float x) noexcept { return float_of(bits_of(x) & 0xffffe000u); }

KVQ_HD inline float signed_fp32(bool neg, std::int64_t v, int lsb) noexcept {
  if (v == 0) return float_of(0u);
  const std::uint64_t m = v < 0 ? static_cast<std::uint64_t>(-v) : static_cast<std::uint64_t>(v);
  return round_to_output(neg != (v < 0), m, lsb, 23, info(output_format::fp32), final_rounding::nearest_even);
}

// fp32 fma(a, b, c), rounded to nearest even, IEEE special values and zero signs
// (a NaN result is the canonical NaN).
KVQ_HD inline float fma_fp32(float a, float b, float c) noexcept {
  const std::uint32_t ua = bits_of(a), ub = bits_of(b), uc = bits_of(c);
  if (is_nan_bits(ua) || is_nan_bits(ub) || is_nan_bits(uc)) return canonical_nan();
  const bool pneg = ((ua ^ ub) >> 31) != 0;
  const bool za = (ua & 0x7fffffffu) == 0, zb = (ub & 0x7fffffffu) == 0;
  if (is_inf_bits(ua) || is_inf_bits(ub)) {
    if (za || zb) return canonical_nan();
    if (is_inf_bits(uc) && ((uc >> 31) != 0) != pneg) return canonical_nan();
    return float_of(pneg ? 0xff800000u : 0x7f800000u);
  }
  if (is_inf_bits(uc)) return c;
  const decoded dc = decode(c, 23, -126);
  if (za || zb) {
    if (dc.zero) return float_of(pneg && dc.neg ? 0x80000000u : 0u);
    return c;
  }
  const decoded da = decode(a, 23, -126), db = decode(b, 23, -126);
  const fixed prod{pneg, da.sig * db.sig, da.lsb_exp + db.lsb_exp};
  const fixed sum = dc.zero ? prod : add_fixed(prod, fixed{dc.neg, dc.sig, dc.lsb_exp});
  if (sum.mag == 0) return float_of(0u);
  return round_to_output(sum.neg, sum.mag, sum.lsb, 23, info(output_format::fp32), final_rounding::nearest_even);
}

// A sum of truncated products: value = sum × 2^(exp - frac_bits).
struct mfma_sum {
  std::int64_t sum;
  int exp;
};

// Products [from, n) step 2 (halves) or 1 of one fused step, truncated toward zero below
// their maximum exponent and added exactly. An empty set has exponent -252 (two zero
// operands) and sum 0.
KVQ_HD inline mfma_sum mfma_product_sum(const mfma_params& p, mfma_input fa, mfma_input fb, const float* a,
                                        const float* b, int from, int n, int stride) noexcept {
  const input_format_info ia = info(fa), ib = info(fb);
  int emax = 2 * mfma_zero_exp;
  for (int i = from; i < n; i += stride) {
    const float x = p.tf32_operands ? tf32_truncate(a[i]) : a[i];
    const float y = p.tf32_operands ? tf32_truncate(b[i]) : b[i];
    const decoded da = decode(x, ia.mantissa_bits, ia.min_exp), db = decode(y, ib.mantissa_bits, ib.min_exp);
    const int e = (da.zero ? mfma_zero_exp : da.exp) + (db.zero ? mfma_zero_exp : db.exp);
    if (e > emax) emax = e;
  }
  const int q = emax - p.frac_bits;
  std::int64_t acc = 0;
  for (int i = from; i < n; i += stride) {
    const float x = p.tf32_operands ? tf32_truncate(a[i]) : a[i];
    const float y = p.tf32_operands ? tf32_truncate(b[i]) : b[i];
    const decoded da = decode(x, ia.mantissa_bits, ia.min_exp), db = decode(y, ib.mantissa_bits, ib.min_exp);
    if (da.zero || db.zero) continue;
    const std::uint64_t t = align_truncate(da.sig * db.sig, da.lsb_exp + db.lsb_exp, q);
    acc += da.neg != db.neg ? -static_cast<std::int64_t>(t) : static_cast<std::int64_t>(t);
  }
  return {acc, emax};
}

}  // namespace detail

/// One step of an MFMA instruction: d = a[0..n) · b[0..n) + c with n <= p.group products
/// (a shorter n acts as if padded with 0 × 0 products), a of format fa, b of format fb,
/// c and d fp32. For mfma_step::fma the n products are applied in order.
KVQ_HD inline float mfma_step_fma(const mfma_params& p, mfma_input fa, mfma_input fb, const float* a, const float* b,
                                  int n, float c) noexcept {
  using namespace detail;
  if (p.step == mfma_step::fma) {
    float d = c;
    for (int i = 0; i < n; ++i) d = fma_fp32(a[i], b[i], d);
    if (n == 0 && is_nan_bits(bits_of(c))) return canonical_nan();
    return d;
  }
  const input_format_info ia = info(fa), ib = info(fb);
  // Special values (MMA-Sim: the sum of the products and c in fp64 is NaN or Inf).
  {
    bool nan = false, pos_inf = false, neg_inf = false;
    for (int i = 0; i < n; ++i) {
      const std::uint32_t ua = bits_of(p.tf32_operands ? tf32_truncate(a[i]) : a[i]);
      const std::uint32_t ub = bits_of(p.tf32_operands ? tf32_truncate(b[i]) : b[i]);
      if (is_nan_bits(ua) || is_nan_bits(ub)) nan = true;
      const bool fa_inf = is_inf_bits(ua), fb_inf = is_inf_bits(ub);
      if (fa_inf || fb_inf) {
        if ((ua & 0x7fffffffu) == 0 || (ub & 0x7fffffffu) == 0) {
          nan = true;
        } else {
          (((ua ^ ub) >> 31) != 0 ? neg_inf : pos_inf) = true;
        }
      }
    }
    const std::uint32_t uc = bits_of(c);
    if (is_nan_bits(uc)) nan = true;
    if (is_inf_bits(uc)) ((uc >> 31) != 0 ? neg_inf : pos_inf) = true;
    if (!nan && !pos_inf && !neg_inf) {
      // A finite product of 2^128 or more is Inf (bf16 and tf32 operands can reach it).
      for (int i = 0; i < n; ++i) {
        const float x = p.tf32_operands ? tf32_truncate(a[i]) : a[i];
        const float y = p.tf32_operands ? tf32_truncate(b[i]) : b[i];
        const decoded da = decode(x, ia.mantissa_bits, ia.min_exp), db = decode(y, ib.mantissa_bits, ib.min_exp);
        if (da.zero || db.zero) continue;
        if (floor_log2(da.sig * db.sig) + da.lsb_exp + db.lsb_exp >= 128) (da.neg != db.neg ? neg_inf : pos_inf) = true;
      }
    }
    if (nan || (pos_inf && neg_inf)) return canonical_nan();
    if (pos_inf) return float_of(0x7f800000u);
    if (neg_inf) return float_of(0xff800000u);
  }
  // The product sum, in units of 2^(e - frac_bits).
  mfma_sum s;
  if (p.halves) {
    const mfma_sum h0 = mfma_product_sum(p, fa, fb, a, b, 0, n, 2);
    const mfma_sum h1 = mfma_product_sum(p, fa, fb, a, b, 1, n, 2);
    const int e = h0.exp > h1.exp ? h0.exp : h1.exp;
    s = {floor_shift(h0.sum, e - h0.exp) + floor_shift(h1.sum, e - h1.exp), e};
  } else {
    s = mfma_product_sum(p, fa, fb, a, b, 0, n, 1);
  }
  const decoded dc = decode(c, 23, -126);
  const int ec = dc.zero ? mfma_zero_exp : dc.exp;
  const int m = s.exp > ec ? s.exp : ec;
  // Both in units of 2^(m - sum_frac_bits), each rounded down to its window.
  const std::int64_t ps = scale_floor(s.sum, (s.exp - p.frac_bits) - (m - p.sum_frac_bits));
  std::int64_t cs = 0;
  if (!dc.zero && (p.c_drop < 0 || ec >= m - p.c_drop)) {
    const std::int64_t cv = dc.neg ? -static_cast<std::int64_t>(dc.sig) : static_cast<std::int64_t>(dc.sig);
    cs = scale_floor(scale_floor(cv, dc.lsb_exp - (m - p.c_frac_bits)), p.sum_frac_bits - p.c_frac_bits);
  }
  return signed_fp32(false, ps + cs, m - p.sum_frac_bits);
}

/// d = a[0..K) · b[0..K) + c as a chain of steps of p.group products (the d of each step
/// is the c of the next); a last partial step acts as if padded with 0 × 0 products.
KVQ_HD inline float mfma_dot(const mfma_params& p, mfma_input fa, mfma_input fb, const float* a, const float* b,
                             int K, float c) noexcept {
  const int g = p.group < 1 ? 1 : p.group;
  float acc = c;
  for (int i = 0; i < K; i += g) acc = mfma_step_fma(p, fa, fb, a + i, b + i, K - i < g ? K - i : g, acc);
  if (K <= 0) acc = mfma_step_fma(p, fa, fb, a, b, 0, c);
  return acc;
}

}  // namespace kvq::mma
