// The SSE2 encoder (kvq/format/sse2.hpp), as kvq::detail::encode_rne_loop_portable runs
// it, against the scalar kvq::encode (itself checked on every float against CUDA in
// test_encode_exhaustive): every float for e4m3 and e5m2, every third float (an odd
// stride: every low-bit residue, every binade) for e2m1, e3m2, e2m3 and ue4m3; both
// overflow policies. Built with the default flags, as a baseline x86-64 build runs it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <kvq/format.hpp>

#include "sweep.hpp"

namespace {

// The loop runs on 2^16 + 5 values per call: its 16-value steps and a tail.
template <class F, kvq::overflow O>
kvqtest::mismatch_log portable_mismatches(std::uint64_t stride) {
  const auto body = [](std::uint64_t first, std::uint64_t last, std::uint64_t step, kvqtest::mismatch_log& log) {
    constexpr std::size_t block = (1u << 16) + 5;
    std::vector<float> x(block);
    std::vector<std::uint8_t> codes(block);
    for (std::uint64_t u0 = first; u0 < last;) {
      std::size_t n = 0;
      for (std::uint64_t u = u0; u < last && n < block; u += step) x[n++] = kvqtest::float_from_bits(static_cast<std::uint32_t>(u));
      kvq::detail::encode_rne_loop_portable<F, O>(x.data(), n, codes.data());
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint8_t want = kvq::encode<F>(x[i], kvq::rounding::nearest_even, O);
        if (codes[i] != want) log.add(u0 + i * step, want, codes[i], -1, "SSE2 loop vs scalar encode");
      }
      log.checked += n;
      u0 += n * step;
    }
  };
  return kvqtest::parallel_sweep(0, std::uint64_t(1) << 32, stride * kvqtest::exhaustive_stride(), body);
}

template <class F>
void check_format(std::uint64_t stride) {
#if defined(KVQ_HAVE_SSE2_ENCODE)
  STATIC_REQUIRE(kvq::detail::sse2::covers<F>);
#endif
  const kvqtest::mismatch_log sat = portable_mismatches<F, kvq::overflow::satfinite>(stride);
  INFO(kvq::format_name<F>() << " satfinite: " << sat.report(8));
  CHECK(sat.count == 0);
  const kvqtest::mismatch_log nosat = portable_mismatches<F, kvq::overflow::nosat>(stride);
  INFO(kvq::format_name<F>() << " nosat: " << nosat.report(8));
  CHECK(nosat.count == 0);
}

}  // namespace

TEST_CASE("the SSE2 float encoder equals the scalar encoder on all floats", "[format][bulk][exhaustive]") {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(KVQ_NO_SSE2)
  // the kernel must be there (else this would check the scalar loop against itself)
#if !defined(KVQ_HAVE_SSE2_ENCODE)
  FAIL("x86-64 with GCC or Clang but the SSE2 encoder was not compiled in");
#endif
#endif
  check_format<kvq::fmt::e4m3>(1);
  check_format<kvq::fmt::e5m2>(1);
  check_format<kvq::fmt::e2m1>(3);
  check_format<kvq::fmt::e3m2>(3);
  check_format<kvq::fmt::e2m3>(3);
  check_format<kvq::fmt::ue4m3>(3);
}
