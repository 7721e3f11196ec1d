// The float nearest_even fast paths of encode_n (format/bulk.hpp) against the scalar
// kvq::encode, itself checked on every float against CUDA's host functions in
// test_encode_exhaustive. On x86-64 with GCC or Clang the F16C kernel is compiled into
// every translation unit (kvq/core/isa.hpp), so the portable loop, the F16C kernel and
// encode_n under each instruction set this CPU runs (kvq::set_isa) are each compared,
// element by element and by hash, with the scalar encoder on an array built to
// hit every edge class: NaN payloads of both signs, +-Inf, +-0, float subnormals, every
// code value of every format, the midpoints between neighbouring codes (ties) and their
// neighbours down to one float ulp, values just above a tie by less than a binary16 ulp
// (where a double rounding through binary16 would go wrong), overflow thresholds,
// binary16's own limits, and random bit patterns.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <kvq/format.hpp>

#include "../core/isa_copies.hpp"

namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

void push_pm(std::vector<float>& v, float x) {
  v.push_back(x);
  v.push_back(-x);
}

/// Every code value, midpoint and near-midpoint of F, as floats.
template <class F>
void add_format_edges(std::vector<float>& v) {
  std::vector<double> mags;
  for (int c = 0; c < 256; ++c) {
    const double d = kvq::decode<F, double>(static_cast<std::uint8_t>(c));
    if (std::isfinite(d) && d >= 0) mags.push_back(d);
  }
  std::sort(mags.begin(), mags.end());
  mags.erase(std::unique(mags.begin(), mags.end()), mags.end());
  // one step beyond the largest finite value, for the overflow midpoint
  const double top = mags.back(), below = mags[mags.size() - 2];
  mags.push_back(top + (top - below));
  for (std::size_t k = 0; k < mags.size(); ++k) {
    const float x = static_cast<float>(mags[k]);
    push_pm(v, x);
    if (k + 1 == mags.size()) break;
    const float mid = static_cast<float>((mags[k] + mags[k + 1]) / 2);  // exact: M + 1 bits
    float lo = mid, hi = mid;
    for (int s = 0; s < 3; ++s) {
      lo = std::nextafter(lo, 0.0f);
      hi = std::nextafter(hi, std::numeric_limits<float>::infinity());
      push_pm(v, lo);
      push_pm(v, hi);
    }
    push_pm(v, mid);
    // mid * (1 + 2^-j): above the tie by less than binary16 resolves for j > 11
    for (int j = 8; j <= 23; ++j) {
      push_pm(v, static_cast<float>(static_cast<double>(mid) * (1.0 + std::ldexp(1.0, -j))));
      push_pm(v, static_cast<float>(static_cast<double>(mid) * (1.0 - std::ldexp(1.0, -j))));
    }
  }
}

std::vector<float> edge_array() {
  std::vector<float> v;
  const float inf = std::numeric_limits<float>::infinity();
  push_pm(v, 0.0f);
  push_pm(v, inf);
  push_pm(v, std::numeric_limits<float>::max());
  push_pm(v, std::numeric_limits<float>::min());
  push_pm(v, std::numeric_limits<float>::denorm_min());
  // NaN payloads: quiet and signalling, high, low and single-bit payloads, both signs
  for (int b = 0; b < 23; ++b) {
    v.push_back(from_bits(0x7F800000u | (1u << b)));
    v.push_back(from_bits(0xFF800000u | (1u << b)));
  }
  v.push_back(from_bits(0x7FFFFFFFu));
  v.push_back(from_bits(0xFFFFFFFFu));
  v.push_back(from_bits(0x7FC00000u));
  v.push_back(from_bits(0x7F800001u));
  // float subnormals
  for (std::uint32_t u = 1; u < 0x00800000u; u = u * 3 + 1) push_pm(v, from_bits(u));
  // binary16 limits: max finite, its round-to-nearest overflow threshold and beyond,
  // the smallest normal and subnormal and their halves
  for (double d : {65504.0, 65519.0, 65520.0, 65535.0, 65536.0, 1e6, 1e10, std::ldexp(1.0, -14),
                   std::ldexp(1.0, -15), std::ldexp(1.0, -24), std::ldexp(1.0, -25), std::ldexp(1.5, -25),
                   std::ldexp(1.0, -26)})
    push_pm(v, static_cast<float>(d));
  add_format_edges<kvq::fmt::e4m3>(v);
  add_format_edges<kvq::fmt::e5m2>(v);
  add_format_edges<kvq::fmt::e3m2>(v);
  add_format_edges<kvq::fmt::e2m3>(v);
  add_format_edges<kvq::fmt::e2m1>(v);
  add_format_edges<kvq::fmt::ue4m3>(v);
  add_format_edges<kvq::fmt::e4m3fnuz>(v);
  add_format_edges<kvq::fmt::e5m2fnuz>(v);
  // every pattern with exponent 2^-30..2^20 and the top 10 mantissa bits, low 13 bits
  // 0 (exact in binary16), 1, 0x1000 (a binary16 tie) and 0x1FFF
  for (std::uint32_t e = 127 - 30; e <= 127 + 20; ++e)
    for (std::uint32_t hi = 0; hi < 1024; hi += 3)
      for (std::uint32_t low : {0u, 1u, 0x1000u, 0x1FFFu}) push_pm(v, from_bits((e << 23) | (hi << 13) | low));
  // random bit patterns, half of them with exponents near the formats' ranges
  std::mt19937 rng(20261201u);
  for (int i = 0; i < (1 << 17); ++i) {
    const std::uint32_t r = static_cast<std::uint32_t>(rng());
    const std::uint32_t e = 127u - 28u + static_cast<std::uint32_t>(rng() % 48u);
    v.push_back(from_bits(i % 2 ? r : ((r & 0x807FFFFFu) | (e << 23))));
  }
  // unaligned lengths and offsets are covered by the caller
  return v;
}

std::uint64_t fnv1a(const std::vector<std::uint8_t>& c) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::uint8_t b : c) h = (h ^ b) * 1099511628211ull;
  return h;
}

using loop_fn = void (*)(const float*, std::size_t, std::uint8_t*);

/// Compares one loop with the scalar encoder; the array is shifted by one element so the
/// vector kernels also run on an unaligned start and have a tail.
template <class F, kvq::overflow O>
void check_loop(const char* name, loop_fn loop, const std::vector<float>& xs) {
  for (std::size_t off : {std::size_t{0}, std::size_t{1}}) {
    const std::size_t n = xs.size() - off;
    std::vector<std::uint8_t> want(n), got(n, 0xA5);
    for (std::size_t i = 0; i < n; ++i) want[i] = kvq::encode<F>(xs[i + off], kvq::rounding::nearest_even, O);
    loop(xs.data() + off, n, got.data());
    std::size_t bad = 0, first = n;
    for (std::size_t i = 0; i < n; ++i)
      if (got[i] != want[i]) {
        if (bad++ == 0) first = i;
      }
    std::uint32_t first_bits = 0;
    if (first < n) std::memcpy(&first_bits, &xs[first + off], 4);
    INFO(name << " " << kvq::format_name<F>() << " " << kvq::to_string(O) << " offset " << off << ": " << bad
              << " mismatches of " << n << "; first input bits 0x" << std::hex << first_bits << " want 0x"
              << unsigned(first < n ? want[first] : 0) << " got 0x" << unsigned(first < n ? got[first] : 0));
    CHECK(bad == 0);
    CHECK(fnv1a(got) == fnv1a(want));
  }
}

template <class F, kvq::overflow O>
void check_format(const std::vector<float>& xs) {
  check_loop<F, O>("portable", &kvq::detail::encode_rne_loop_portable<F, O>, xs);
  kvq_test::for_each_isa([&](kvq::isa i) {
    check_loop<F, O>(kvq::isa_name(i), [](const float* in, std::size_t n, std::uint8_t* out) {
      kvq::encode_n<F>(in, n, out, kvq::rounding::nearest_even, O);
    }, xs);
  });
#if defined(KVQ_HAVE_F16C_ENCODE)
  if constexpr (kvq::detail::f16c::covers<F>)
    if (kvq::cpu_supports(kvq::isa::x86_64_v3)) check_loop<F, O>("f16c", &kvq::detail::f16c::encode_rne_loop<F, O>, xs);
#endif
}

template <class F>
void check_both(const std::vector<float>& xs) {
  check_format<F, kvq::overflow::satfinite>(xs);
  check_format<F, kvq::overflow::nosat>(xs);
}

}  // namespace

TEST_CASE("float nearest_even fast paths equal the scalar encoder on every edge class", "[format][bulk]") {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(KVQ_NO_F16C)
  // the kernel must be there (a silently dropped kernel would make this test compare
  // the portable loop twice)
#if !defined(KVQ_HAVE_F16C_ENCODE)
  FAIL("x86-64 with GCC or Clang but the F16C encode kernel was not compiled in");
#endif
#endif
#if defined(KVQ_HAVE_F16C_ENCODE)
  if (!kvq::cpu_supports(kvq::isa::x86_64_v3))
    WARN("this CPU lacks x86-64-v3: only the portable loop and the baseline encode_n are checked");
  // every format the kernel is meant for is covered; e5m2fnuz's exponent span is not
  STATIC_REQUIRE(kvq::detail::f16c::covers<kvq::fmt::e4m3>);
  STATIC_REQUIRE(kvq::detail::f16c::covers<kvq::fmt::e5m2>);
  STATIC_REQUIRE(kvq::detail::f16c::covers<kvq::fmt::e2m1>);
  STATIC_REQUIRE(kvq::detail::f16c::covers<kvq::fmt::e3m2>);
  STATIC_REQUIRE(kvq::detail::f16c::covers<kvq::fmt::e2m3>);
  STATIC_REQUIRE(kvq::detail::f16c::covers<kvq::fmt::ue4m3>);
  STATIC_REQUIRE(kvq::detail::f16c::covers<kvq::fmt::e4m3fnuz>);
  STATIC_REQUIRE(!kvq::detail::f16c::covers<kvq::fmt::e5m2fnuz>);
#endif
  const std::vector<float> xs = edge_array();
  check_both<kvq::fmt::e4m3>(xs);
  check_both<kvq::fmt::e5m2>(xs);
  check_both<kvq::fmt::e3m2>(xs);
  check_both<kvq::fmt::e2m3>(xs);
  check_both<kvq::fmt::e2m1>(xs);
  check_both<kvq::fmt::ue4m3>(xs);
  check_both<kvq::fmt::e4m3fnuz>(xs);
  check_both<kvq::fmt::e5m2fnuz>(xs);
}
