/// \file
/// kvq/mma/block_fma.hpp — one tensor-core block FMA, d = a·b + c over up to k products,
/// in exact integer arithmetic (KVQ_HD: no allocation, no exceptions, no 128-bit types).
///
/// The rule (parameters in params.hpp) follows Khattak & Mikaitis, "Accurate Models of
/// NVIDIA Tensor Cores" (arXiv 2512.07004), section on the block FMA: products are exact;
/// every term is aligned to the largest exponent E of the block and truncated toward zero
/// to a multiple of 2^(E - frac_bits); the aligned terms are added exactly; the sum is
/// normalised and rounded once to `result_frac_bits` fraction bits (toward zero or to
/// nearest even), with subnormal results in the output format's range. Where c enters
/// is a parameter (c_entry): as one more aligned term, exactly after the product sum, or
/// by a separate IEEE addition after the product sum has been truncated (the Blackwell
/// FP8 path, see presets.hpp).
///
/// Special values (IEEE-style propagation, as the paper's model and PTX ISA §9.7.14 for
/// mma describe; the recorded data hold no NaN/Inf, so this part is not checked against
/// hardware): any NaN operand, Inf × 0, or Infs of both signs give NaN (returned as the
/// canonical 0x7fffffff); otherwise any Inf gives Inf of its sign. Finite overflow gives
/// Inf under nearest-even and the largest finite value under toward-zero.
#pragma once

#include <kvq/config.hpp>
#include <kvq/mma/params.hpp>

#include <cstdint>
#include <cstring>

namespace kvq::mma {
namespace detail {

KVQ_HD inline std::uint32_t bits_of(float x) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

KVQ_HD inline float float_of(std::uint32_t u) noexcept {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

KVQ_HD constexpr int floor_log2(std::uint64_t v) noexcept {
  int n = -1;
  while (v != 0) {
    v >>= 1;
    ++n;
  }
  return n;
}

// A finite value as sign × sig × 2^lsb_exp, with `exp` the exponent of its leading
// significand position in a format of `mantissa_bits` fraction bits and minimum
// exponent `min_exp` (for a subnormal, exp = min_exp and sig < 2^mantissa_bits).
struct decoded {
  bool neg;
  bool zero;
  std::uint64_t sig;
  int exp;
  int lsb_exp;
};

// Decode a finite float holding a value of the given format. Bits of x below the
// format's precision are dropped (the checked host API rejects such inputs).
KVQ_HD inline decoded decode(float x, int mantissa_bits, int min_exp) noexcept {
  const std::uint32_t u = bits_of(x);
  const bool neg = (u >> 31) != 0;
  const int biased = static_cast<int>((u >> 23) & 0xffu);
  std::uint64_t m = u & 0x7fffffu;
  int x2 = -149;
  if (biased != 0) {
    m |= 0x800000u;
    x2 = biased - 150;
  }
  if (m == 0) return {neg, true, 0, 0, 0};
  const int top = floor_log2(m) + x2;
  const int e = top > min_exp ? top : min_exp;
  const int lsb = e - mantissa_bits;
  const int shift = x2 - lsb;
  const std::uint64_t sig = shift >= 0 ? (m << shift) : (-shift >= 64 ? 0 : (m >> -shift));
  return {neg, sig == 0, sig, e, lsb};
}

// sig × 2^lsb expressed in units of 2^q, truncated toward zero.
KVQ_HD inline std::uint64_t align_truncate(std::uint64_t sig, int lsb, int q) noexcept {
  if (lsb >= q) return sig << (lsb - q);
  const int s = q - lsb;
  return s >= 64 ? 0 : (sig >> s);
}

// Magnitude of m × 2^from re-expressed in units of 2^to (to > from) rounded to odd:
// truncated, with the last bit set when anything was dropped. Round-to-odd keeps a
// later rounding to at least two fewer bits correct (the classic sticky "jamming").
KVQ_HD inline std::uint64_t shift_right_jam(std::uint64_t mag, int s) noexcept {
  if (s <= 0) return mag;
  if (s >= 64) return mag != 0 ? 1u : 0u;
  const bool lost = (mag & ((std::uint64_t{1} << s) - 1)) != 0;
  return (mag >> s) | (lost ? 1u : 0u);
}

// Signed fixed-point number value = mag × 2^lsb (sign-magnitude).
struct fixed {
  bool neg;
  std::uint64_t mag;
  int lsb;
};

// x + y, exact when the exponents are close, otherwise with the smaller term rounded to
// odd far below the larger one's leading bit (60 bits of room), which is exact for any
// later rounding to 24 or fewer significant bits.
KVQ_HD inline fixed add_fixed(fixed x, fixed y) noexcept {
  if (x.mag == 0) return y;
  if (y.mag == 0) return x;
  const int tx = floor_log2(x.mag) + x.lsb, ty = floor_log2(y.mag) + y.lsb;
  const int top = tx > ty ? tx : ty;
  int l = x.lsb < y.lsb ? x.lsb : y.lsb;
  if (l < top - 60) l = top - 60;
  const std::uint64_t mx = x.lsb >= l ? (x.mag << (x.lsb - l)) : shift_right_jam(x.mag, l - x.lsb);
  const std::uint64_t my = y.lsb >= l ? (y.mag << (y.lsb - l)) : shift_right_jam(y.mag, l - y.lsb);
  if (x.neg == y.neg) return {x.neg, mx + my, l};
  if (mx >= my) return {x.neg, mx - my, l};
  return {y.neg, my - mx, l};
}

// The 23 fp32 fraction bits of a significand whose leading bit is bit `msb` (frac_bits,
// or frac_bits + 1 after a rounding carry, when the significand is a power of two).
KVQ_HD inline std::uint32_t fp32_fraction(std::uint64_t sig, int msb) noexcept {
  return static_cast<std::uint32_t>((msb <= 23 ? sig << (23 - msb) : sig >> (msb - 23)) & 0x7fffffu);
}

// Round value = (neg ? -1 : 1) × mag × 2^lsb to `frac_bits` fraction bits in the range of
// `o` (subnormals at o.min_exp) and return it as a float (fp16 results are returned as
// the float of the same value).
KVQ_HD inline float round_to_output(bool neg, std::uint64_t mag, int lsb, int frac_bits, output_format_info o,
                                    final_rounding r) noexcept {
  const std::uint32_t sign = neg ? 0x80000000u : 0u;
  if (mag == 0) return float_of(sign);
  const int t = floor_log2(mag) + lsb;
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
  const int msb = floor_log2(keep);
  const int fe = msb + q;
  if (fe > o.max_exp) {
    if (r == final_rounding::nearest_even) return float_of(sign | 0x7f800000u);
    // Largest finite value with frac_bits fraction bits.
    const std::uint64_t mx = (std::uint64_t{1} << (frac_bits + 1)) - 1;
    const std::uint32_t frac = fp32_fraction(mx, frac_bits);
    return float_of(sign | (static_cast<std::uint32_t>(o.max_exp + 127) << 23) | frac);
  }
  if (fe >= -126) {
    const std::uint32_t frac = fp32_fraction(keep, msb);
    return float_of(sign | (static_cast<std::uint32_t>(fe + 127) << 23) | frac);
  }
  // fp32 subnormal: q >= -126 - frac_bits >= -149.
  return float_of(sign | static_cast<std::uint32_t>(keep << (q + 149)));
}

KVQ_HD inline bool is_nan_bits(std::uint32_t u) noexcept { return (u & 0x7fffffffu) > 0x7f800000u; }
KVQ_HD inline bool is_inf_bits(std::uint32_t u) noexcept { return (u & 0x7fffffffu) == 0x7f800000u; }

}  // namespace detail

/// The canonical NaN the model returns (PTX ISA: tensor-core results that are NaN are
/// the canonical 0x7fffffff).
KVQ_HD inline float canonical_nan() noexcept { return detail::float_of(0x7fffffffu); }

/// x converted to the output format with round-to-nearest-even (cvt.rn.f16.f32 for
/// fp16): how an fp32 accumulator value becomes the c of an fp16-accumulating mma.
KVQ_HD inline float to_output(output_format out, float x) noexcept {
  using namespace detail;
  const std::uint32_t u = bits_of(x);
  if (is_nan_bits(u)) return canonical_nan();
  if (is_inf_bits(u) || out == output_format::fp32) return x;
  const decoded d = decode(x, 23, -126);
  if (d.zero) return x;
  return round_to_output(d.neg, d.sig, d.lsb_exp, 10, info(out), final_rounding::nearest_even);
}

/// d = a[0..n) · b[0..n) + c in one block step (n <= p.k is the caller's duty; a longer n
/// is summed as one block). a and b hold values of `in`, c a value of p.out.
KVQ_HD inline float block_fma(const block_fma_params& p, input_format in, const float* a, const float* b, int n,
                              float c) noexcept {
  using namespace detail;
  // Special values first.
  {
    bool nan = false, pos_inf = false, neg_inf = false;
    for (int i = 0; i < n; ++i) {
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

  const input_format_info fi = info(in);
  const output_format_info fo = info(p.out);
  const decoded dc = decode(c, fo.mantissa_bits, fo.min_exp);
  const bool c_in_alignment = p.c_mode == c_entry::aligned && !dc.zero;
  const bool c_after = p.c_mode != c_entry::aligned;

  // Maximum exponent of the aligned terms.
  bool any = false;
  int emax = 0;
  bool all_products_neg_zero = true;
  for (int i = 0; i < n; ++i) {
    const decoded da = decode(a[i], fi.mantissa_bits, fi.min_exp);
    const decoded db = decode(b[i], fi.mantissa_bits, fi.min_exp);
    if (da.zero || db.zero) {
      if (da.neg == db.neg) all_products_neg_zero = false;
      continue;
    }
    all_products_neg_zero = false;
    const int e = da.exp + db.exp;
    if (!any || e > emax) emax = e;
    any = true;
  }
  if (c_in_alignment && (!any || dc.exp > emax)) emax = dc.exp;
  if (!any && dc.zero) {
    // Every term is zero: IEEE sign rule of an exact zero sum under round-to-nearest.
    const bool neg = dc.neg && (n == 0 || all_products_neg_zero);
    return float_of(neg ? 0x80000000u : 0u);
  }
  if (!any && c_after) emax = p.min_align_exp;  // c enters later and the products are zero
  if (emax < p.min_align_exp) emax = p.min_align_exp;
  const int q = emax - p.frac_bits;

  // Exact sum of the truncated aligned terms, in units of 2^q (fits in 63 bits for
  // frac_bits <= max_frac_bits and n <= max_block).
  std::int64_t acc = 0;
  for (int i = 0; i < n; ++i) {
    const decoded da = decode(a[i], fi.mantissa_bits, fi.min_exp);
    const decoded db = decode(b[i], fi.mantissa_bits, fi.min_exp);
    if (da.zero || db.zero) continue;
    const std::uint64_t t = align_truncate(da.sig * db.sig, da.lsb_exp + db.lsb_exp, q);
    acc += (da.neg != db.neg) ? -static_cast<std::int64_t>(t) : static_cast<std::int64_t>(t);
  }
  if (c_in_alignment) {
    const std::uint64_t t = align_truncate(dc.sig, dc.lsb_exp, q);
    acc += dc.neg ? -static_cast<std::int64_t>(t) : static_cast<std::int64_t>(t);
  }
  fixed sum{acc < 0, acc < 0 ? static_cast<std::uint64_t>(-acc) : static_cast<std::uint64_t>(acc), q};
  if (p.c_mode == c_entry::separate) {
    if (!any) return dc.zero ? float_of(0u) : c;  // no product: d = c + 0
    const float s = round_to_output(sum.neg, sum.mag, sum.lsb, p.result_frac_bits, fo, final_rounding::toward_zero);
    const decoded ds = decode(s, fo.mantissa_bits, fo.min_exp);
    if (ds.zero && dc.zero) return float_of(0u);
    sum = add_fixed(fixed{ds.neg, ds.zero ? 0 : ds.sig, ds.lsb_exp}, fixed{dc.neg, dc.zero ? 0 : dc.sig, dc.lsb_exp});
    if (sum.mag == 0) return float_of(0u);
    return round_to_output(sum.neg, sum.mag, sum.lsb, p.result_frac_bits, fo, p.rounding);
  }
  if (p.c_mode == c_entry::late && !dc.zero) sum = add_fixed(sum, fixed{dc.neg, dc.sig, dc.lsb_exp});
  return round_to_output(sum.neg, sum.mag, sum.lsb, p.result_frac_bits, fo, p.rounding);
}

}  // namespace kvq::mma
