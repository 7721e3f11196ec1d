/// \file
/// kvq/verify/hard_inputs.hpp — inputs that separate every rounding decision of a
/// scheme's recipe. Random inputs almost never put an element exactly on a rounding
/// midpoint after scaling, nor a block amax exactly on a scale boundary, so a kernel that
/// rounds e2m1 ties away from zero, truncates, divides where the reference multiplies by
/// a reciprocal, or floors an MX scale the reference rounds up can match kvq on every
/// random tensor. hard_inputs() builds the fp32 tensor on which it cannot:
///
///   const std::vector<float> x = kvq::verify::hard_inputs("nvfp4_te", 64, 256, 1);
///   // run the kernel on x (rows x cols, row-major), then kvq::verify::check(...)
///
/// For a block scheme every block gets one case, in a fixed cycle (hard_cases()), with
/// counter-based choices from `seed` (which scale, which midpoints, which signs). The
/// elements are placed by searching, float by float, for the input whose scaled value
/// (the very float the recipe casts to its element format, read from the recipe's
/// block_trace) is the wanted value, so the ties are exact under the recipe's own
/// operation order, whatever it multiplies or divides by:
/// ~~~
///   tensor_amax   (recipes whose tensor value is computed from the data: nvfp4_te[_enc_div],
///                 nvfp4_vllm*, nvfp4_torchao_two_level, fp8_e*_cal) the first block holds
///                 the tensor amax G; every other element is smaller in magnitude, so G's
///                 block sits at the top of the two-level scale (its unrounded block scale
///                 lands on 448 from one side or the other of the rounding of S_enc / the
///                 per-tensor scale). Its other elements are exact ties.
///   scale_tie     the block amax puts the unrounded block scale exactly on a boundary of
///                 the scale format: an e4m3 midpoint (the scale cast's tie; the midpoint
///                 below the smallest subnormal rounds the scale to 0), a power of two for
///                 ue8m0 (floor vs round-up vs round-to-nearest of the scale), the 1e-6
///                 floor of the per-token-head scale. The other elements: ties (below).
///   scale_below   as scale_tie, the amax one float below the boundary (an MX floor block
///                 whose amax mantissa is all ones: its elements saturate).
///   scale_above   as scale_tie, one float above.
///   scale_exact   the unrounded scale is exactly a representable e4m3 scale (the inverse is
///                 then the exact reciprocal the reference computes from it).
///   ties_random   a random block amax (an inverse that is not a power of two: multiplying
///                 by a reciprocal and dividing by the scale round differently).
///   zero          all elements ±0 (amax 0: the recipe's zero-block rule).
///   subnormal     fp32 subnormal elements (for MX round-up, amax / max below 2^-127: scale
///                 byte 0, where TransformerEngine's exp2f_rcp gives 1 and torchao 2^127).
///   nan           one NaN, the other elements ties; only where the recipe defines NaN
///                 input and a NaN cannot reach the tensor value (tensor amax rule
///                 `ignore`, or no tensor value computed from the data).
///   inf           +Inf and -Inf among ties; only for MX recipes and FP8 per tensor with a
///                 fixed scale (their headers define Inf input; elsewhere an Inf would set
///                 the tensor amax or the whole block).
///   random        random signs, exponents and mantissas around the block's scale.
/// ~~~
/// "Ties" fill every element but the block amax: element-format midpoints (round to
/// nearest even and round half away differ on half of them; truncation on all of them)
/// with random signs, three in four exact, the rest one float below or above the
/// midpoint, cycling over all midpoints of the element format that lie below the
/// block amax's scaled value. For int8 codes (per-token-head) the targets are the
/// half-integers and integers (truncation vs rounding).
///
/// FP8 per tensor (one element per block) has no block amax: the cycle runs over single
/// elements (ties, near ties, values above the largest finite code, zeros, subnormals,
/// NaN/Inf where defined). Element formats (e4m3, e2m1, ...): edge_case_values() (every
/// code, every midpoint and the floats on either side, NaN, Inf, subnormals; NaN and Inf
/// first, the rest cut at rows x cols), then random floats.
///
/// The search is exact: an element counted as a tie is one whose scaled value equals the
/// midpoint bit for bit under kvq's recipe (for recipes that need a hardware instruction
/// model, nvfp4_vllm* and the per-token-head stores, under the registry's IEEE model: a
/// kernel's rcp.approx may land one float off some of those ties). A recipe whose element scaling depends on the
/// whole block (the 4over6 scale search picks its candidate from every element) gets its
/// ties placed element by element and may lose some to a later candidate switch.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/core/error.hpp>
#include <kvq/format/decode.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/kv/registry.hpp>
#include <kvq/verify/check.hpp>
#include <kvq/verify/generators.hpp>

namespace kvq::verify {

/// What one block of hard_inputs() holds (see the file comment).
enum class hard_case : unsigned char {
  tensor_amax,  ///< the tensor amax G and ties (recipes whose tensor value comes from the data)
  scale_tie,    ///< unrounded block scale exactly on a scale-format boundary, ties
  scale_below,  ///< one float below that boundary, ties
  scale_above,  ///< one float above that boundary, ties
  scale_exact,  ///< unrounded scale exactly a representable e4m3 scale, ties
  ties_random,  ///< random block amax, ties
  zero,         ///< all ±0
  subnormal,    ///< fp32 subnormals
  nan,          ///< one NaN among ties (where the recipe defines NaN)
  inf,          ///< +Inf and -Inf among ties (where the recipe defines Inf)
  random,       ///< random values
};

/// The case's name ("tensor_amax", "scale_tie", ...).
inline constexpr const char* to_string(hard_case c) noexcept {
  switch (c) {
    case hard_case::tensor_amax: return "tensor_amax";
    case hard_case::scale_tie: return "scale_tie";
    case hard_case::scale_below: return "scale_below";
    case hard_case::scale_above: return "scale_above";
    case hard_case::scale_exact: return "scale_exact";
    case hard_case::ties_random: return "ties_random";
    case hard_case::zero: return "zero";
    case hard_case::subnormal: return "subnormal";
    case hard_case::nan: return "nan";
    case hard_case::inf: return "inf";
    case hard_case::random: return "random";
  }
  return "?";
}

namespace detail {

// The i-th draw as a uniform in [0, 1).
inline double unit_draw(std::uint64_t seed, std::uint64_t i) {
  return static_cast<double>(draw(seed, i) >> 11) * (1.0 / 9007199254740992.0);
}

// The finite non-negative values of element format E, ascending.
template <class E>
std::vector<float> grid_of() {
  std::vector<float> v;
  for (int c = 0; c < (1 << E::bits); ++c) {
    const float x = kvq::decode<E, float>(static_cast<std::uint8_t>(c));
    if (std::isfinite(x) && x >= 0.0f) v.push_back(x);
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Midpoints of consecutive grid values (exact in fp32: one bit more than E's mantissa).
inline std::vector<float> midpoints_of(const std::vector<float>& g) {
  std::vector<float> m;
  for (std::size_t i = 0; i + 1 < g.size(); ++i) m.push_back(0.5f * (g[i] + g[i + 1]));
  return m;
}

// Element targets of recipe S (positive): the rounding midpoints of its element format;
// int8 codes: half-integers and integers.
template <class S>
std::vector<float> element_targets() {
  using E = typename S::element_format;
  if constexpr (std::is_same<E, kvq::block::int8_element>::value) {
    std::vector<float> t;
    for (int k = 0; k < 127; ++k) {
      t.push_back(static_cast<float>(k) + 0.5f);
      if (k > 0) t.push_back(static_cast<float>(k));
    }
    return t;
  } else {
    return midpoints_of(grid_of<E>());
  }
}

// Where f(x) (non-decreasing for x >= 0) meets target: lo = the largest float seen with
// f(lo) < target, hi = the smallest with f(hi) > target, at = one with f(at) == target
// when exact. A walk of at most `steps` floats from x0.
struct crossing {
  float lo = 0.0f, at = 0.0f, hi = 0.0f;
  bool exact = false, found = false;
};
template <class F>
crossing solve_for(F f, float target, float x0, int steps = 256) {
  crossing c;
  const float inf = std::numeric_limits<float>::infinity();
  if (!(x0 > 0.0f) || !std::isfinite(x0)) return c;
  float x = x0;
  int k = 0;
  if (f(x) < target) {
    while (k++ < steps && f(x) < target) x = std::nextafter(x, inf);
    if (f(x) < target || !std::isfinite(x)) return c;
  } else {
    while (k++ < steps && x > 0.0f && !(f(x) < target)) x = std::nextafter(x, 0.0f);
    if (!(f(x) < target)) return c;
    x = std::nextafter(x, inf);
  }
  // x: the smallest float with f(x) >= target.
  c.lo = std::nextafter(x, 0.0f);
  c.found = true;
  if (f(x) == target) {
    c.exact = true;
    c.at = x;
    k = 0;
    while (k++ < steps && f(x) == target) x = std::nextafter(x, inf);
  }
  c.hi = x;
  if (!c.exact) c.at = x;
  return c;
}

template <class S, class = void>
struct has_mx_base : std::false_type {};
template <class S>
struct has_mx_base<S, std::void_t<typename S::mx_base>> : std::true_type {};

// Builds the hard tensor for block recipe S.
template <class S>
class hard_builder {
 public:
  hard_builder(const S& s, const kvq::kv::scheme& reg, std::size_t rows, std::size_t cols, std::uint64_t seed)
      : s_(s), rows_(rows), cols_(cols), seed_(seed), bs_(s.block_size()) {
    namespace b = kvq::block;
    data_dependent_ = S::tensor != b::tensor_kind::none && !kvq::kv::tensor_value_for(reg, std::nullopt);
    nan_ok_ = !data_dependent_ || S::tensor_amax_rule == b::amax_nan::ignore;
    inf_ok_ = !data_dependent_ && (has_mx_base<S>::value || bs_ == 1);
    // The tensor amax G: 2^10..2^17 times a random mantissa (well inside every format's
    // range once divided down to block scales).
    const std::uint32_t gbits = ((127u + 10u + static_cast<std::uint32_t>(draw(seed, 0) % 8u)) << 23) |
                                static_cast<std::uint32_t>(draw(seed, 1) & 0x7FFFFFu);
    g_ = kvq::bit_cast<float>(gbits);
    if (data_dependent_) {
      params_ = S::prepare(S::tensor_value_from_amax(g_));
    } else {
      const std::optional<float> v = kvq::kv::tensor_value_for(reg, std::nullopt);
      params_ = S::prepare(v ? *v : S::tensor_value_from_amax(1.0f));
    }
    targets_ = element_targets<S>();
    cases_ = cycle(data_dependent_, nan_ok_, inf_ok_, bs_);
  }

  // The case cycle of the recipe (the first block: tensor_amax when data dependent).
  static std::vector<hard_case> cycle(bool data_dependent, bool nan_ok, bool inf_ok, std::size_t bs) {
    std::vector<hard_case> c;
    if (data_dependent) c.push_back(hard_case::tensor_amax);
    if (bs > 1) {
      for (int r = 0; r < 2; ++r)
        for (hard_case h : {hard_case::scale_tie, hard_case::scale_below, hard_case::scale_above,
                            hard_case::scale_exact, hard_case::ties_random})
          c.push_back(h);
    } else {
      for (int r = 0; r < 6; ++r) c.push_back(hard_case::ties_random);  // single elements: ties
    }
    c.push_back(hard_case::zero);
    c.push_back(hard_case::subnormal);
    if (nan_ok) c.push_back(hard_case::nan);
    if (inf_ok) c.push_back(hard_case::inf);
    c.push_back(hard_case::random);
    return c;
  }
  const std::vector<hard_case>& cases() const { return cases_; }

  std::vector<float> build() {
    const std::size_t n = rows_ * cols_;
    std::vector<float> x(n, 0.0f);
    const std::size_t nb = n / bs_;
    for (std::size_t b = 0; b < nb; ++b) {
      hard_case h = cases_[b % cases_.size()];
      if (h == hard_case::tensor_amax && b != 0) h = hard_case::ties_random;  // G appears once
      fill_block(h, b, x.data() + b * bs_);
    }
    if (data_dependent_) {  // the tensor value the verifier will compute must be G's
      const float t = kvq::block::tensor_amax(x.data(), n, S::tensor_amax_rule);
      if (kvq::bit_cast<std::uint32_t>(t) != kvq::bit_cast<std::uint32_t>(g_))
        throw std::logic_error(std::string("hard_inputs: the tensor amax of scheme ") + S::name +
                               " moved from its planned value");
    }
    return x;
  }

 private:
  using scale_t = typename S::scale_type;

  // Scaled value (the float cast to the element format) of element i of block blk.
  float scaled_at(std::vector<float>& blk, std::size_t i) const {
    std::vector<std::uint8_t> codes(bs_ * 2 + 8);
    std::vector<float> sc(bs_);
    scale_t scale{};
    float zero = 0.0f;
    kvq::block::block_trace tr;
    tr.scaled = sc.data();
    s_.template quantize_block<kvq::block::f32_input>(blk.data(), params_, codes.data(), &scale, &zero, &tr);
    return sc[i];
  }
  float unrounded_of(std::vector<float>& blk) const {
    std::vector<std::uint8_t> codes(bs_ * 2 + 8);
    scale_t scale{};
    float zero = 0.0f;
    kvq::block::block_trace tr;
    s_.template quantize_block<kvq::block::f32_input>(blk.data(), params_, codes.data(), &scale, &zero, &tr);
    return tr.unrounded_scale;
  }

  std::uint64_t r(std::uint64_t b, std::uint64_t k) const { return draw(seed_ ^ 0x5EEDu, b * 4096u + k); }

  // The bound an element must stay below: G (data-dependent tensor value) or the largest float.
  float bound() const { return data_dependent_ ? g_ : std::numeric_limits<float>::max(); }

  // Scale boundaries (unrounded scale values) by kind: 0 tie, 1 exact grid value.
  std::vector<float> scale_boundaries(bool grid) const {
    std::vector<float> t;
    if constexpr (std::is_same<scale_t, float>::value) {
      t.push_back(1e-6f);  // the per-token-head scale floor
    } else if constexpr (S::scale_bytes > 0) {
      using SF = typename S::scale_format;
      if constexpr (std::is_same<SF, kvq::fmt::ue8m0>::value) {
        for (int k = -127; k <= -120; ++k) t.push_back(std::ldexp(1.0f, k));
        for (int k = -24; k <= 24; ++k) t.push_back(std::ldexp(1.0f, k));
        for (int k = 100; k <= 110; ++k) t.push_back(std::ldexp(1.0f, k));
      } else {
        const std::vector<float> g = grid_of<SF>();
        if (grid) {
          t.assign(g.begin() + 1, g.end());
        } else {
          t = midpoints_of(g);
        }
      }
    }
    return t;
  }

  // The block amax for a case, placed at position p of blk; false if none fits.
  bool place_amax(hard_case h, std::size_t b, std::vector<float>& blk, std::size_t p) const {
    if (h == hard_case::tensor_amax) {
      blk[p] = g_;
      return true;
    }
    if (h == hard_case::ties_random) {
      // random amax: mantissa random, exponent such that the block scale is well inside range
      const float ref = data_dependent_ ? g_ : 1.0f;
      const double u = unit_draw(seed_, b * 7 + 3);
      const float a = static_cast<float>(ref * std::ldexp(1.0 + u, -static_cast<int>(r(b, 1) % 12u) - 1));
      blk[p] = a;
      return std::isfinite(a) && a > 0.0f && a <= bound();
    }
    const std::vector<float> t = scale_boundaries(h == hard_case::scale_exact);
    if (t.empty()) return false;
    // probe: the unrounded scale of a reference amax gives the start of the walk
    const float ref = data_dependent_ ? g_ : 1.0f;
    std::fill(blk.begin(), blk.end(), 0.0f);
    blk[p] = ref;
    const float u_ref = unrounded_of(blk);
    if (!(u_ref > 0.0f) || !std::isfinite(u_ref)) return false;
    for (std::size_t attempt = 0; attempt < 8; ++attempt) {
      const float target = t[(b / cases_.size() * 7 + attempt * 13 + r(b, 2)) % t.size()];
      const float x0 = static_cast<float>(static_cast<double>(target) * (static_cast<double>(ref) / u_ref));
      auto f = [&](float a) {
        blk[p] = a;
        return unrounded_of(blk);
      };
      const crossing c = solve_for(f, target, x0);
      if (!c.found) continue;
      const float a = h == hard_case::scale_below ? c.lo : h == hard_case::scale_above ? c.hi : c.at;
      if ((h == hard_case::scale_tie || h == hard_case::scale_exact) && !c.exact) continue;
      if (!(a > 0.0f) || !std::isfinite(a) || a > bound()) continue;
      blk[p] = a;
      return true;
    }
    return false;
  }

  // Fills every position but `skip` with ties relative to the block (amax at skip).
  void fill_ties(std::size_t b, std::vector<float>& blk, std::size_t skip) const {
    const float amax = blk[skip];
    const float s_amax = std::fabs(scaled_at(blk, skip));
    if (!(s_amax > 0.0f) || !std::isfinite(s_amax)) return;
    std::vector<float> usable;
    for (float m : targets_)
      if (m < s_amax) usable.push_back(m);
    if (usable.empty()) return;
    std::size_t k = static_cast<std::size_t>(r(b, 9) % usable.size());
    for (std::size_t i = 0; i < bs_; ++i) {
      if (i == skip) continue;
      const float target = usable[k++ % usable.size()];
      const std::uint64_t d = r(b, 100 + i);
      const int variant = (d & 3u) == 3u ? ((d >> 2) & 1u ? 1 : -1) : 0;  // 3 in 4 exact
      const float x0 = static_cast<float>(static_cast<double>(target) * (static_cast<double>(amax) / s_amax));
      auto f = [&](float v) {
        blk[i] = v;
        return scaled_at(blk, i);
      };
      const crossing c = solve_for(f, target, x0);
      float v = 0.0f;
      if (c.found) v = variant < 0 ? c.lo : variant > 0 ? c.hi : c.at;
      if (!(v < amax)) v = 0.0f;  // never move the block amax
      blk[i] = (d >> 8) & 1u ? -v : v;
    }
  }

  float random_float(std::size_t b, std::uint64_t k, float scale) const {
    const std::uint64_t d = r(b, 2000 + k);
    const double u = unit_draw(seed_, b * 65536u + k) * 2.0 - 1.0;
    const float v = static_cast<float>(u * scale * std::ldexp(1.0, -static_cast<int>(d % 6u)));
    return v;
  }

  void fill_block(hard_case h, std::size_t b, float* out) const {
    std::vector<float> blk(bs_, 0.0f);
    const float ref = data_dependent_ ? g_ * 0.5f : 1.0f;
    if (bs_ == 1) {
      fill_single(h, b, blk);
    } else {
      const std::size_t p = static_cast<std::size_t>(r(b, 5) % bs_);
      switch (h) {
        case hard_case::zero:
          for (std::size_t i = 0; i < bs_; ++i) blk[i] = (r(b, 10 + i) & 1u) ? -0.0f : 0.0f;
          break;
        case hard_case::subnormal:
          for (std::size_t i = 0; i < bs_; ++i) {
            const std::uint64_t d = r(b, 10 + i);
            blk[i] = kvq::bit_cast<float>(static_cast<std::uint32_t>((d & 0x7FFFFFu) | ((d >> 32) & 1u ? 0x80000000u : 0u)));
          }
          break;
        case hard_case::random:
          for (std::size_t i = 0; i < bs_; ++i) blk[i] = random_float(b, i, ref);
          break;
        case hard_case::nan:
        case hard_case::inf: {
          if (!place_amax(hard_case::ties_random, b, blk, p)) blk[p] = ref;
          fill_ties(b, blk, p);
          const std::size_t q = (p + 1 + r(b, 6) % (bs_ - 1)) % bs_;
          if (h == hard_case::nan) {
            blk[q] = kvq::bit_cast<float>(0x7FC00000u);
          } else {
            blk[q] = std::numeric_limits<float>::infinity();
            const std::size_t q2 = (q + 1) % bs_;
            if (q2 != p) blk[q2] = -std::numeric_limits<float>::infinity();
          }
          break;
        }
        default: {
          std::fill(blk.begin(), blk.end(), 0.0f);
          bool ok = place_amax(h, b, blk, p);
          if (!ok) {
            std::fill(blk.begin(), blk.end(), 0.0f);
            ok = place_amax(hard_case::ties_random, b, blk, p);
          }
          if (!ok) blk[p] = ref;
          if ((r(b, 7) & 1u) && blk[p] != g_) blk[p] = -blk[p];  // the amax's sign
          const float a = blk[p];
          blk[p] = std::fabs(a);
          fill_ties(b, blk, p);
          blk[p] = a;
          break;
        }
      }
    }
    std::copy(blk.begin(), blk.end(), out);
  }

  // One-element blocks (FP8 per tensor): the element itself is the case.
  void fill_single(hard_case h, std::size_t b, std::vector<float>& blk) const {
    const float inf = std::numeric_limits<float>::infinity();
    const bool neg = (r(b, 7) & 1u) != 0;
    float v = 0.0f;
    switch (h) {
      case hard_case::tensor_amax: v = g_; break;
      case hard_case::zero: v = neg ? -0.0f : 0.0f; break;
      case hard_case::subnormal:
        v = kvq::bit_cast<float>(static_cast<std::uint32_t>(r(b, 8) & 0x7FFFFFu));
        if (neg) v = -v;
        break;
      case hard_case::nan: v = kvq::bit_cast<float>(0x7FC00000u); break;
      case hard_case::inf: v = neg ? -inf : inf; break;
      case hard_case::random: v = random_float(b, 0, data_dependent_ ? g_ * 0.5f : 448.0f); break;
      default: {
        // ties: element midpoints (and every 4th one a float off), plus, where the scale
        // lets values reach them, values above the largest finite code (saturation)
        blk[0] = 1.0f;
        const float s1 = scaled_at(blk, 0);
        blk[0] = bound();
        const float s_bound = scaled_at(blk, 0);  // targets must stay below the bound's
        std::vector<float> usable;
        for (float m : targets_)
          if (m < s_bound) usable.push_back(m);
        if (usable.empty() || !(s1 > 0.0f)) break;
        const std::uint64_t d = r(b, 9);
        const float target = usable[(b / cases_.size() * 5 + d) % usable.size()];
        const int variant = (d >> 20 & 3u) == 3u ? ((d >> 22) & 1u ? 1 : -1) : 0;
        const crossing c = solve_for(
            [&](float x) {
              blk[0] = x;
              return scaled_at(blk, 0);
            },
            target, static_cast<float>(static_cast<double>(target) / s1));
        if (c.found) v = variant < 0 ? c.lo : variant > 0 ? c.hi : c.at;
        if ((d >> 30) % 5u == 0u && !data_dependent_)  // above the largest finite code
          v = static_cast<float>(static_cast<double>(targets_.back()) * (2.0 + static_cast<double>((d >> 40) % 8u)) / s1);
        if (!(v <= bound())) v = 0.0f;
        if (neg) v = -v;
        break;
      }
    }
    blk[0] = v;
  }

  S s_;
  std::size_t rows_, cols_;
  std::uint64_t seed_;
  std::size_t bs_;
  bool data_dependent_ = false, nan_ok_ = false, inf_ok_ = false;
  float g_ = 1.0f;
  typename S::params params_{};
  std::vector<float> targets_;
  std::vector<hard_case> cases_;
};

// Calls fn(recipe, scheme) for a registry block scheme the verifier reads.
template <class Fn>
auto with_recipe(const std::string& scheme, std::size_t cols, Fn&& fn) {
  const verifiable_scheme& v = find_verifiable(scheme);  // throws for a name check() refuses
  const kvq::kv::scheme& reg = kvq::kv::find_scheme(v.name);
  return std::visit(
      [&](const auto& f) -> decltype(fn(kvq::block::nvfp4_te{}, reg)) {
        using T = std::decay_t<decltype(f)>;
        if constexpr (std::is_same<T, kvq::kv::hp_format>::value) {
          throw std::invalid_argument("scheme " + v.name + " is not a block scheme");
        } else if constexpr (T::has_zero_point) {
          throw std::invalid_argument("scheme " + v.name + " stores zero points, which the verifier does not read");
        } else {
          return fn(kvq::kv::recipe_for_rows(f, cols, v.name), reg);
        }
      },
      *reg.format);
}

}  // namespace detail

/// The case cycle hard_inputs() gives the blocks of `scheme` (block i holds case
/// i mod size; for element formats: empty, the tensor is edge cases then random).
/// \throws std::invalid_argument for a name the verifier refuses.
inline std::vector<hard_case> hard_cases(const std::string& scheme) {
  const verifiable_scheme& v = find_verifiable(scheme);
  if (!v.block) return {};
  const std::size_t cols = v.block_size == 0 ? 128 : v.block_size;
  return detail::with_recipe(scheme, cols, [](const auto& s, const kvq::kv::scheme& reg) {
    using S = std::decay_t<decltype(s)>;
    return detail::hard_builder<S>(s, reg, 1, s.block_size(), 0).cases();
  });
}

/// A rows x cols fp32 tensor (row-major) that separates the rounding decisions of
/// `scheme` (an element format or a registry block scheme the verifier accepts; see the
/// file comment for the cases). Deterministic in (scheme, rows, cols, seed) on every
/// platform. Every case appears once the tensor has hard_cases(scheme).size() blocks;
/// every element midpoint once it has a few times that.
/// \throws std::invalid_argument for a name the verifier refuses, rows or cols of 0, a
///         tensor over 2^28 elements, cols not a multiple of the block size, or odd cols
///         for 4-bit codes.
inline std::vector<float> hard_inputs(const std::string& scheme, std::size_t rows, std::size_t cols,
                                      std::uint64_t seed = 1) {
  const verifiable_scheme& v = find_verifiable(scheme);
  if (rows == 0 || cols == 0) throw std::invalid_argument("hard_inputs: rows and cols must be positive");
  const std::size_t n = kvq::detail::checked_mul(rows, cols, "hard_inputs: rows x cols");
  if (n > (std::size_t{1} << 28)) throw std::invalid_argument("hard_inputs: rows x cols exceeds 2^28 elements");
  if (v.element_bits == 4 && cols % 2 != 0)
    throw std::invalid_argument("hard_inputs: cols " + std::to_string(cols) + " is odd; scheme " + v.name +
                                " packs 4-bit codes two per byte");
  if (!v.block) {
    const detail::scheme_entry& e = detail::require_entry(v.name);
    std::vector<float> x = e.edge_cases();
    // NaN and Inf first, so that a small tensor keeps them
    std::stable_partition(x.begin(), x.end(), [](float f) { return !std::isfinite(f); });
    if (x.size() > n) x.resize(n);
    for (std::uint64_t i = 0; x.size() < n; ++i) {
      const std::uint64_t r = detail::draw(seed, i);
      const std::uint32_t exp = 127u - 12u + static_cast<std::uint32_t>((r >> 24) % 24u);
      x.push_back(kvq::bit_cast<float>((static_cast<std::uint32_t>(r >> 63) << 31) | (exp << 23) |
                                       static_cast<std::uint32_t>(r & 0x7FFFFFu)));
    }
    return x;
  }
  if (v.block_size > 1 && cols % v.block_size != 0)
    throw std::invalid_argument("hard_inputs: cols " + std::to_string(cols) + " is not a multiple of the block size " +
                                std::to_string(v.block_size) + " of scheme " + v.name);
  return detail::with_recipe(v.name, cols, [&](const auto& s, const kvq::kv::scheme& reg) {
    using S = std::decay_t<decltype(s)>;
    return detail::hard_builder<S>(s, reg, rows, cols, seed).build();
  });
}

}  // namespace kvq::verify
