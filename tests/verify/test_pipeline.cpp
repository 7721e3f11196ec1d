// The generator -> subject -> reference -> verifier pipeline.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include <kvq/format.hpp>
#include <kvq/verify/generators.hpp>
#include <kvq/verify/pipeline.hpp>

#if defined(KVQ_HAVE_CUDA_ORACLE)
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif

using namespace kvq::verify;

namespace {
// A "kernel" with planted faults: kvq's encoder, except that the code of every input
// whose bit pattern is a multiple of `period` has its low bit flipped.
template <class F>
struct faulty_kernel {
  std::uint32_t period;
  void operator()(const float* in, std::size_t n, std::uint8_t* out) const {
    kvq::encode_n<F>(in, n, out);
    for (std::size_t i = 0; i < n; ++i)
      if (kvq::bit_cast<std::uint32_t>(in[i]) % period == 0) out[i] ^= 1;
  }
};
}  // namespace

TEST_CASE("generators: exhaustive range, counter-based random, edge cases", "[verify][generators]") {
  exhaustive_floats g(10, 20);
  std::vector<float> buf(7);
  CHECK(g.next(buf.data(), 7) == 7);
  CHECK(kvq::bit_cast<std::uint32_t>(buf[0]) == 10);
  CHECK(g.next(buf.data(), 7) == 3);
  CHECK(g.next(buf.data(), 7) == 0);
  CHECK_THROWS_AS(exhaustive_floats(5, 3), std::invalid_argument);
  // random: same seed, same sequence; batching does not matter
  auto r1 = random_floats::bits(42, 1000), r2 = random_floats::bits(42, 1000);
  std::vector<float> a(1000), b(1000);
  CHECK(r1.next(a.data(), 1000) == 1000);
  std::size_t k = 0;
  while (std::size_t m = r2.next(b.data() + k, 77)) k += m;
  CHECK(k == 1000);
  for (std::size_t i = 0; i < 1000; ++i) CHECK(kvq::bit_cast<std::uint32_t>(a[i]) == kvq::bit_cast<std::uint32_t>(b[i]));
  auto rr = random_floats::range(1, 10000, -3.0, 5.0);
  std::vector<float> c(10000);
  CHECK(rr.next(c.data(), 10000) == 10000);
  for (float x : c) CHECK((x >= -3.0f && x <= 5.0f));
  CHECK_THROWS_AS(random_floats::range(1, 1, 2.0, 1.0), std::invalid_argument);
  // edge cases of e2m1: values 0 .5 1 1.5 2 3 4 6, the ties .25 .75 1.25 1.75 2.5 3.5 5,
  // the overflow boundary 7 (= 6 + ulp/2), 12 (2 max), 0.125 (a quarter of .5)
  const auto e = edge_case_values<kvq::fmt::e2m1>();
  const std::set<float> s(e.begin(), e.end());
  for (float x : {0.5f, 0.75f, 1.25f, 2.5f, 3.5f, 5.0f, 6.0f, 7.0f, 12.0f, 0.25f, 0.125f, -5.0f, -7.0f})
    CHECK(s.count(x) == 1);
  CHECK(s.count(std::nextafter(5.0f, 6.0f)) == 1);
  CHECK(s.count(std::nextafter(5.0f, 0.0f)) == 1);
  bool has_nan = false;
  for (float x : e) has_nan = has_nan || std::isnan(x);
  CHECK(has_nan);
}

TEST_CASE("pipeline: a correct subject matches; planted faults are found exactly", "[verify][pipeline]") {
  // 2^22 consecutive bit patterns from 0.5f up
  const std::uint64_t first = 0x3F000000u, last = first + (1u << 22);
  {
    exhaustive_floats g(first, last);
    const report r = run_pipeline<kvq::fmt::e4m3>(g, kvq_encoder<kvq::fmt::e4m3>{});
    CHECK(r.ok());
    CHECK(r.elements == last - first);
  }
  {
    const std::uint32_t period = 299993;
    exhaustive_floats g(first, last);
    pipeline_options opt;
    opt.batch = 4096;
    opt.max_listed = 5;
    const report r = run_pipeline<kvq::fmt::e4m3>(g, faulty_kernel<kvq::fmt::e4m3>{period}, kvq::rounding::nearest_even,
                                                  kvq::overflow::satfinite, opt);
    // independently: the multiples of the period in [first, last)
    std::vector<std::uint64_t> planted;
    for (std::uint64_t u = (first + period - 1) / period * period; u < last; u += period) planted.push_back(u);
    CHECK(r.mismatches == planted.size());
    REQUIRE(r.first.size() == 5);
    for (std::size_t i = 0; i < 5; ++i) {
      CHECK(r.first[i].index == planted[i] - first);
      CHECK(kvq::bit_cast<std::uint32_t>(r.first[i].input) == planted[i]);
      CHECK((r.first[i].expected_bits ^ r.first[i].actual_bits) == 1u);
      CHECK(r.first[i].expected_bits == kvq::encode<kvq::fmt::e4m3>(r.first[i].input));
    }
  }
  // a per-element subject: round toward zero instead of to nearest differs exactly on
  // the inputs that are not representable and round up under RN
  {
    random_floats g = random_floats::range(3, 100000, -8.0, 8.0);
    const auto rz = elementwise{[](float x) { return kvq::encode<kvq::fmt::e2m1>(x, kvq::rounding::toward_zero); }};
    const report r = run_pipeline<kvq::fmt::e2m1>(g, rz);
    random_floats g2 = random_floats::range(3, 100000, -8.0, 8.0);
    std::vector<float> x(100000);
    g2.next(x.data(), x.size());
    std::size_t differ = 0;
    for (float v : x) {
      // |RN(x)| > |RZ(x)| exactly when x rounds away from zero under RN
      const double rn = kvq::decode<kvq::fmt::e2m1, double>(kvq::encode<kvq::fmt::e2m1>(v));
      const double tz = kvq::decode<kvq::fmt::e2m1, double>(kvq::encode<kvq::fmt::e2m1>(v, kvq::rounding::toward_zero));
      if (std::fabs(rn) != std::fabs(tz)) ++differ;
    }
    CHECK(r.mismatches == differ);
    CHECK(r.mismatches > 0);
  }
}

#if defined(KVQ_HAVE_CUDA_ORACLE)
TEST_CASE("pipeline with CUDA's host conversion functions as the subject", "[verify][pipeline][cuda]") {
  // What a kernel author does: plug in their own conversion. CUDA's host functions
  // define the GPU's behaviour; kvq must agree on edge cases and random bit patterns.
  const auto cuda_e4m3 = elementwise{[](float x) {
    return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
  }};
  const auto cuda_e2m1 = elementwise{[](float x) {
    return static_cast<std::uint8_t>(__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest));
  }};
  auto e1 = edge_cases<kvq::fmt::e4m3>();
  CHECK(run_pipeline<kvq::fmt::e4m3>(e1, cuda_e4m3).ok());
  auto r1 = random_floats::bits(9, 1u << 20);
  CHECK(run_pipeline<kvq::fmt::e4m3>(r1, cuda_e4m3).ok());
  auto e2 = edge_cases<kvq::fmt::e2m1>();
  CHECK(run_pipeline<kvq::fmt::e2m1>(e2, cuda_e2m1).ok());
  auto r2 = random_floats::bits(10, 1u << 20);
  const report r = run_pipeline<kvq::fmt::e2m1>(r2, cuda_e2m1);
  INFO(to_string(r));
  CHECK(r.ok());
}
#endif

TEST_CASE("pipeline over all 2^32 floats with planted faults", "[.][exhaustive]") {
  const std::uint32_t period = 999983;  // prime
  exhaustive_floats g;
  pipeline_options opt;
  opt.batch = 1u << 20;
  const report r = run_pipeline<kvq::fmt::e5m2>(g, faulty_kernel<kvq::fmt::e5m2>{period}, kvq::rounding::nearest_even,
                                                kvq::overflow::satfinite, opt);
  CHECK(r.elements == (std::uint64_t{1} << 32));
  // multiples of the period in [0, 2^32): floor((2^32 - 1) / period) + 1 (zero included)
  CHECK(r.mismatches == ((std::uint64_t{1} << 32) - 1) / period + 1);
  REQUIRE(!r.first.empty());
  CHECK(r.first[0].index == 0);
  CHECK(r.first[1].index == period);
}
