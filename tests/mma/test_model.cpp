// Unit tests of the block-FMA model against an independent oracle: exact rational
// arithmetic (Boost.Multiprecision cpp_rational / cpp_int) applied to the rule as the
// paper states it (align to the largest product exponent, truncate each term toward
// zero to the window, add exactly, round once), written here without any of the model's
// integer shortcuts. Plus properties that a wrong model would break: sign symmetry
// (truncation toward zero, not toward -inf), order independence inside a block, IEEE
// special-value propagation, chaining of blocks, and the argument checks.
#include <kvq/mma.hpp>

#include <boost/multiprecision/cpp_int.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace kvq::mma;
using boost::multiprecision::cpp_int;
using boost::multiprecision::cpp_rational;

cpp_rational pow2(int e) {
  cpp_int one = 1;
  return e >= 0 ? cpp_rational(cpp_int(one << e)) : cpp_rational(cpp_int(1), cpp_int(one << -e));
}

cpp_rational exact(float x) {
  if (x == 0.0f) return 0;
  int e;
  const double m = std::frexp(static_cast<double>(x), &e);  // x = m 2^e, 0.5 <= |m| < 1
  const auto mi = static_cast<long long>(std::ldexp(m, 53));
  return cpp_rational(mi) * pow2(e - 53);
}

cpp_int floor_abs(const cpp_rational& r) {  // floor(|r|)
  cpp_int n = abs(numerator(r)), d = denominator(r);
  return n / d;
}

// floor(log2 |r|) for r != 0.
int ilog2(const cpp_rational& r) {
  const cpp_rational a = abs(r);
  int e = static_cast<int>(msb(numerator(a))) - static_cast<int>(msb(denominator(a)));
  if (pow2(e) > a) --e;
  if (pow2(e + 1) <= a) ++e;
  return e;
}

// r rounded to `fb` fraction bits with minimum exponent `emin` (no overflow in these
// tests), toward zero or to nearest even, as a double.
double round_rational(const cpp_rational& r, int fb, int emin, bool nearest) {
  if (r == 0) return 0.0;
  int e = ilog2(r);
  if (e < emin) e = emin;
  const cpp_rational q = pow2(e - fb);
  const cpp_rational s = abs(r) / q;
  cpp_int n = floor_abs(s);
  if (nearest) {
    const cpp_rational rem = s - cpp_rational(n);
    if (rem > cpp_rational(1, 2) || (rem == cpp_rational(1, 2) && (n & 1) != 0)) ++n;
  }
  const double v = std::ldexp(n.convert_to<double>(), e - fb);
  return r < 0 ? -v : v;
}

int format_exp(float x, int emin) {
  int e = std::ilogb(static_cast<double>(x));
  return e < emin ? emin : e;
}

// The rule in rationals: one block.
double oracle_block(const block_fma_params& p, input_format in, const std::vector<float>& a,
                    const std::vector<float>& b, float c) {
  const input_format_info fi = info(in);
  const output_format_info fo = info(p.out);
  bool any = false;
  int emax = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == 0.0f || b[i] == 0.0f) continue;
    const int e = format_exp(a[i], fi.min_exp) + format_exp(b[i], fi.min_exp);
    if (!any || e > emax) emax = e;
    any = true;
  }
  const bool c_aligned = p.c_mode == c_entry::aligned && c != 0.0f;
  if (c_aligned) {
    const int ec = format_exp(c, fo.min_exp);
    if (!any || ec > emax) emax = ec;
    any = true;
  }
  if (!any) emax = p.min_align_exp;
  emax = std::max(emax, p.min_align_exp);
  const cpp_rational q = pow2(emax - p.frac_bits);
  cpp_rational sum = 0;
  auto add_truncated = [&](const cpp_rational& t) {
    const cpp_rational m = cpp_rational(floor_abs(t / q)) * q;
    sum += t < 0 ? cpp_rational(-m) : m;
  };
  for (std::size_t i = 0; i < a.size(); ++i) add_truncated(exact(a[i]) * exact(b[i]));
  if (c_aligned) add_truncated(exact(c));
  if (p.c_mode == c_entry::late) sum += exact(c);
  if (p.c_mode == c_entry::separate) {
    const double s = round_rational(sum, p.result_frac_bits, fo.min_exp, false);
    sum = exact(static_cast<float>(s)) + exact(c);
  }
  return round_rational(sum, p.result_frac_bits, fo.min_exp, p.rounding == final_rounding::nearest_even);
}

// Random values of a format: sign, exponent in [lo, hi], random fraction bits; some
// zeros and subnormals when lo reaches below the normal range.
float random_value(std::mt19937_64& g, input_format in, int lo, int hi) {
  const input_format_info fi = info(in);
  std::uniform_int_distribution<int> ed(lo, hi), zd(0, 15);
  std::uniform_int_distribution<std::uint32_t> md(0, (1u << fi.mantissa_bits) - 1);
  if (zd(g) == 0) return 0.0f;
  int e = ed(g);
  double v;
  if (e < fi.min_exp) {  // subnormal
    v = std::ldexp(static_cast<double>(md(g)), fi.min_exp - fi.mantissa_bits);
  } else {
    v = std::ldexp(static_cast<double>((1u << fi.mantissa_bits) | md(g)), e - fi.mantissa_bits);
  }
  if (in == input_format::e4m3 && v > 448.0) v = 448.0;
  return static_cast<float>((g() & 1) ? -v : v);
}

float random_fp32(std::mt19937_64& g, int lo, int hi) {
  std::uniform_int_distribution<int> ed(lo, hi);
  std::uniform_int_distribution<std::uint32_t> md(0, (1u << 23) - 1);
  const double v = std::ldexp(static_cast<double>((1u << 23) | md(g)), ed(g) - 23);
  return static_cast<float>((g() & 1) ? -v : v);
}

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

const input_format kInputs[] = {input_format::e4m3, input_format::e5m2, input_format::bf16, input_format::fp16};
const arch kArchs[] = {arch::sm_80, arch::sm_89, arch::sm_90, arch::sm_100};

}  // namespace

TEST_CASE("every preset agrees with the rational form of its rule", "[mma][oracle]") {
  std::mt19937_64 g(20261201);
  for (arch ar : kArchs)
    for (input_format in : kInputs)
      for (output_format out : {output_format::fp32, output_format::fp16}) {
        preset_info p{};
        if (!find_preset(ar, in, out, p)) continue;
        const input_format_info fi = info(in);
        int mism = 0;
        for (int trial = 0; trial < 150; ++trial) {
          // Wide exponent spread (down into the subnormals) so that truncation happens.
          const int lo = fi.min_exp - fi.mantissa_bits, hi = std::min(fi.max_exp, out == output_format::fp16 ? 3 : 20);
          std::vector<float> a(static_cast<std::size_t>(p.params.k)), b(a.size());
          const int spread_lo = (trial % 3 == 0) ? lo : std::max(lo, -8);
          for (std::size_t i = 0; i < a.size(); ++i) {
            a[i] = random_value(g, in, spread_lo, std::min(hi, 4));
            b[i] = random_value(g, in, spread_lo, std::min(hi, 4));
          }
          float c = out == output_format::fp16 ? random_value(g, input_format::fp16, -10, 4) : random_fp32(g, -30, 8);
          if (trial % 5 == 0) c = 0.0f;
          const float got = block_fma(p.params, in, a.data(), b.data(), p.params.k, c);
          const double want = oracle_block(p.params, in, a, b, c);
          if (static_cast<double>(got) != want) ++mism;
        }
        INFO(name(ar) << " " << name(in) << " -> " << name(out));
        CHECK(mism == 0);
      }
}

TEST_CASE("with a window wider than the exponent spread the result is the correctly rounded sum", "[mma][oracle]") {
  std::mt19937_64 g(7);
  for (final_rounding r : {final_rounding::toward_zero, final_rounding::nearest_even}) {
    const block_fma_params p{16, 48, -133, c_entry::aligned, r, output_format::fp32, 23};
    for (int trial = 0; trial < 400; ++trial) {
      // fp16 products with exponents in [-6, 6] have lsb >= -26; the largest exponent
      // is at most 7, so 48 fraction bits below it reach 2^-41: nothing is truncated.
      std::vector<float> a(16), b(16);
      cpp_rational s = 0;
      for (std::size_t i = 0; i < 16; ++i) {
        a[i] = random_value(g, input_format::fp16, -3, 3);
        b[i] = random_value(g, input_format::fp16, -3, 3);
        s += exact(a[i]) * exact(b[i]);
      }
      const float c = random_fp32(g, -6, 6);
      s += exact(c);
      const float got = block_fma(p, input_format::fp16, a.data(), b.data(), 16, c);
      REQUIRE(static_cast<double>(got) == round_rational(s, 23, -126, r == final_rounding::nearest_even));
    }
  }
}

TEST_CASE("the Hopper FP8 window drops what lies 14 or more bits below the largest product", "[mma]") {
  const block_fma_params p = preset<arch::sm_90, input_format::e4m3, output_format::fp32>::params;
  STATIC_REQUIRE(preset<arch::sm_90, input_format::e4m3, output_format::fp32>::exact == exactness::inferred);
  std::vector<float> a(32, 0.0f), b(32, 0.0f);
  a[0] = 1.0f, b[0] = 1.0f;                 // 1
  a[1] = 0.0078125f, b[1] = 0.0078125f;     // 2^-14: below the 13-bit window
  CHECK(block_fma(p, input_format::e4m3, a.data(), b.data(), 32, 0.0f) == 1.0f);
  a[1] = 0.015625f, b[1] = 0.0078125f;      // 2^-13: the last bit of the window
  CHECK(block_fma(p, input_format::e4m3, a.data(), b.data(), 32, 0.0f) == 1.0f + 0x1p-13f);
  // The same inputs in IEEE fp32 keep 2^-14.
  const block_fma_params ieee_like{32, 40, -133, c_entry::aligned, final_rounding::nearest_even, output_format::fp32, 23};
  a[1] = 0.0078125f;
  CHECK(block_fma(ieee_like, input_format::e4m3, a.data(), b.data(), 32, 0.0f) == 1.0f + 0x1p-14f);
}

TEST_CASE("negating a and c negates d: truncation and rounding are symmetric about zero", "[mma]") {
  std::mt19937_64 g(11);
  for (arch ar : kArchs)
    for (input_format in : kInputs) {
      preset_info p{};
      if (!find_preset(ar, in, output_format::fp32, p)) continue;
      for (int trial = 0; trial < 200; ++trial) {
        std::vector<float> a(static_cast<std::size_t>(p.params.k)), b(a.size()), na(a.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
          a[i] = random_value(g, in, -8, 4);
          b[i] = random_value(g, in, -8, 4);
          na[i] = -a[i];
        }
        const float c = random_fp32(g, -20, 6);
        const float d = block_fma(p.params, in, a.data(), b.data(), p.params.k, c);
        const float nd = block_fma(p.params, in, na.data(), b.data(), p.params.k, -c);
        REQUIRE(bits(nd) == (bits(d) ^ 0x80000000u));
      }
    }
}

TEST_CASE("inside one block the order of the products does not matter", "[mma]") {
  std::mt19937_64 g(5);
  const block_fma_params p = preset<arch::sm_90, input_format::bf16, output_format::fp32>::params;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> a(16), b(16);
    for (std::size_t i = 0; i < 16; ++i) {
      a[i] = random_value(g, input_format::bf16, -30, 4);
      b[i] = random_value(g, input_format::bf16, -30, 4);
    }
    const float c = random_fp32(g, -20, 4);
    const float d = block_fma(p, input_format::bf16, a.data(), b.data(), 16, c);
    std::vector<std::size_t> idx(16);
    for (std::size_t i = 0; i < 16; ++i) idx[i] = i;
    std::shuffle(idx.begin(), idx.end(), g);
    std::vector<float> pa(16), pb(16);
    for (std::size_t i = 0; i < 16; ++i) pa[i] = a[idx[i]], pb[i] = b[idx[i]];
    REQUIRE(bits(block_fma(p, input_format::bf16, pa.data(), pb.data(), 16, c)) == bits(d));
  }
}

TEST_CASE("a chain over K equals the rational rule applied block after block", "[mma][oracle]") {
  std::mt19937_64 g(3);
  for (arch ar : {arch::sm_89, arch::sm_90, arch::sm_100}) {
    const preset_info p = get_preset(ar, input_format::e4m3, output_format::fp32);
    for (int trial = 0; trial < 50; ++trial) {
      const int K = 3 * p.params.k + 5;  // a last partial block
      std::vector<float> a(static_cast<std::size_t>(K)), b(a.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        a[i] = random_value(g, input_format::e4m3, -9, 6);
        b[i] = random_value(g, input_format::e4m3, -9, 6);
      }
      float acc = random_fp32(g, -10, 5);
      const float got = dot(p, input_format::e4m3, a, b, acc);
      for (int i = 0; i < K; i += p.params.k) {
        const int n = std::min(p.params.k, K - i);
        std::vector<float> ba(a.begin() + i, a.begin() + i + n), bb(b.begin() + i, b.begin() + i + n);
        acc = static_cast<float>(oracle_block(p.params, input_format::e4m3, ba, bb, acc));
      }
      REQUIRE(bits(got) == bits(acc));
    }
  }
}

TEST_CASE("NaN and Inf propagate as in IEEE arithmetic", "[mma]") {
  const block_fma_params p = preset<arch::sm_90, input_format::bf16, output_format::fp32>::params;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a(16, 1.0f), b(16, 1.0f);
  CHECK(block_fma(p, input_format::bf16, a.data(), b.data(), 16, 0.0f) == 16.0f);
  a[3] = nan;
  CHECK(bits(block_fma(p, input_format::bf16, a.data(), b.data(), 16, 0.0f)) == 0x7fffffffu);
  a[3] = inf;
  CHECK(block_fma(p, input_format::bf16, a.data(), b.data(), 16, 0.0f) == inf);
  b[3] = -2.0f;
  CHECK(block_fma(p, input_format::bf16, a.data(), b.data(), 16, 0.0f) == -inf);
  CHECK(std::isnan(block_fma(p, input_format::bf16, a.data(), b.data(), 16, inf)));  // -Inf + Inf
  b[3] = 0.0f;
  CHECK(std::isnan(block_fma(p, input_format::bf16, a.data(), b.data(), 16, 0.0f)));  // Inf x 0
  a[3] = 1.0f;
  CHECK(block_fma(p, input_format::bf16, a.data(), b.data(), 16, -inf) == -inf);
  CHECK(std::isnan(block_fma(p, input_format::bf16, a.data(), b.data(), 16, nan)));
}

TEST_CASE("fp32 overflow: nearest even gives Inf, toward zero the largest finite value", "[mma]") {
  const float big = 0x1p127f;
  std::vector<float> a{big, big}, b{2.0f, 2.0f};  // bf16 values; the sum is 2^130
  const block_fma_params rz = preset<arch::sm_90, input_format::bf16, output_format::fp32>::params;
  CHECK(block_fma(rz, input_format::bf16, a.data(), b.data(), 2, 0.0f) == std::numeric_limits<float>::max());
  block_fma_params rne = rz;
  rne.rounding = final_rounding::nearest_even;
  CHECK(block_fma(rne, input_format::bf16, a.data(), b.data(), 2, 0.0f) == std::numeric_limits<float>::infinity());
}

TEST_CASE("to_output rounds to fp16 to nearest even", "[mma]") {
  CHECK(to_output(output_format::fp16, 1.0f + 0x1p-11f) == 1.0f);                  // tie to even
  CHECK(to_output(output_format::fp16, 1.0f + 0x1p-11f + 0x1p-20f) == 1.0f + 0x1p-10f);
  CHECK(to_output(output_format::fp16, 1.0f + 3 * 0x1p-11f) == 1.0f + 0x1p-9f);     // tie to even, up
  CHECK(to_output(output_format::fp16, 0x1p-25f) == 0.0f);                          // half the least subnormal
  CHECK(to_output(output_format::fp16, 0x1.8p-25f) == 0x1p-24f);
  CHECK(to_output(output_format::fp32, 1.0f + 0x1p-20f) == 1.0f + 0x1p-20f);
}

TEST_CASE("the host API names what is wrong with its arguments", "[mma][api]") {
  const std::vector<float> one{1.0f};
  CHECK_THROWS_WITH(dot(arch::sm_90, input_format::bf16, output_format::fp32, one, std::vector<float>{1.0f, 2.0f}, 0.0f),
                    Catch::Contains("a has 1 elements, b has 2"));
  CHECK_THROWS_WITH(dot(arch::sm_90, input_format::e4m3, output_format::fp32, std::vector<float>{1.0625f}, one, 0.0f),
                    Catch::Contains("a[0] is not a e4m3 value"));
  CHECK_THROWS_WITH(dot(arch::sm_90, input_format::e4m3, output_format::fp32, one, std::vector<float>{480.0f}, 0.0f),
                    Catch::Contains("b[0] is not a e4m3 value"));
  CHECK_THROWS_WITH(dot(arch::sm_90, input_format::fp16, output_format::fp16, one, one, 1.0f + 0x1p-20f),
                    Catch::Contains("c is not a fp16 value"));
  CHECK_THROWS_WITH(dot(arch::sm_80, input_format::e5m2, output_format::fp32, one, one, 0.0f),
                    Catch::Contains("no preset for sm_80 e5m2"));
  CHECK_THROWS_WITH(parse_arch("sm_75"), Catch::Contains("unknown arch 'sm_75'"));
  CHECK(dot(arch::sm_90, input_format::e4m3, output_format::fp32, std::vector<float>{448.0f, -0.001953125f},
            std::vector<float>{1.0f, 1.0f}, 0.0f) == 448.0f);  // 2^-9 is below the 13-bit window of 448 = 1.75 x 2^8
}

TEST_CASE("representable accepts exactly the values of each input format", "[mma][api]") {
  // Oracle: every code of the format decoded from its bit fields; midpoints between
  // neighbouring values and the next value above the largest are not values.
  struct fmt {
    input_format f;
    int ebits, mbits, bias;
    bool e4m3;
  };
  for (const fmt& F : {fmt{input_format::e4m3, 4, 3, 7, true}, fmt{input_format::e5m2, 5, 2, 15, false},
                       fmt{input_format::fp16, 5, 10, 15, false}}) {
    std::vector<double> vals;
    for (int e = 0; e < (1 << F.ebits); ++e)
      for (int m = 0; m < (1 << F.mbits); ++m) {
        if (!F.e4m3 && e == (1 << F.ebits) - 1) continue;                          // Inf / NaN
        if (F.e4m3 && e == (1 << F.ebits) - 1 && m == (1 << F.mbits) - 1) continue;  // NaN
        const double v = e == 0 ? std::ldexp(m, 1 - F.bias - F.mbits)
                                : std::ldexp((1 << F.mbits) + m, e - F.bias - F.mbits);
        vals.push_back(v);
      }
    std::sort(vals.begin(), vals.end());
    for (std::size_t i = 0; i < vals.size(); ++i) {
      INFO(name(F.f) << " value " << vals[i]);
      REQUIRE(representable(static_cast<float>(vals[i]), F.f));
      REQUIRE(representable(static_cast<float>(-vals[i]), F.f));
      if (i + 1 < vals.size()) REQUIRE_FALSE(representable(static_cast<float>((vals[i] + vals[i + 1]) / 2), F.f));
    }
    const double ulp_top = vals.back() - vals[vals.size() - 2];
    CHECK_FALSE(representable(static_cast<float>(vals.back() + ulp_top), F.f));
    CHECK(representable(std::numeric_limits<float>::infinity(), F.f) == !F.e4m3);
  }
  CHECK(representable(0x1p-133f, input_format::bf16));         // bf16 subnormal
  CHECK_FALSE(representable(0x1.01p-133f, input_format::bf16));
}
