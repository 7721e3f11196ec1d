// kvq::decode, is_nan_code, is_inf_code: every code of every format against the
// values derived from the bit layout by the test oracle (oracle.hpp), and the traits
// (traits.hpp/formats.hpp) against the format table of docs/design.md.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>

#include <kvq/format.hpp>

#include "formats_under_test.hpp"

using namespace kvqtest;

TEST_CASE("decode: every code equals the value derived from the bit layout", "[decode]") {
  for_each_format([](auto f) {
    using F = decltype(f);
    const layout& L = ref<F>::L;
    for (unsigned c = 0; c < 256; ++c) {
      // Bits above the format's width are ignored.
      const unsigned in_range = c & (L.code_count() - 1u);
      const double want = ref_decode(L, in_range);
      const auto code = static_cast<std::uint8_t>(c);
      const float gf = kvq::decode<F>(code);
      const double gd = kvq::decode<F, double>(code);
      INFO(L.name << " code " << hex(c, 2) << " want " << want);
      CHECK(kvq::is_nan_code<F>(code) == is_nan_code(L, in_range));
      CHECK(kvq::is_inf_code<F>(code) == is_inf_code(L, in_range));
      if (std::isnan(want)) {
        CHECK(std::isnan(gf));
        CHECK(std::isnan(gd));
        // NaN codes decode to a NaN carrying the code's sign bit (documented).
        CHECK(std::signbit(gf) == ((in_range & L.sign_mask()) != 0));
      } else {
        CHECK(bits_of(static_cast<double>(gf)) == bits_of(want));  // also the sign of zero
        CHECK(bits_of(gd) == bits_of(want));
      }
    }
    // The oracle's sorted magnitudes are the decoded positive number codes.
    const table T(L);
    for (std::size_t k = 0; k < T.size(); ++k) {
      CHECK(kvq::decode<F, double>(static_cast<std::uint8_t>(T.code[k])) == T.v[k]);
    }
  });
}

TEST_CASE("decode_n equals decode", "[decode]") {
  for_each_format([](auto f) {
    using F = decltype(f);
    std::uint8_t codes[256];
    float out[256];
    double outd[256];
    for (unsigned c = 0; c < 256; ++c) codes[c] = static_cast<std::uint8_t>(c);
    kvq::decode_n<F>(codes, 256, out);
    kvq::decode_n<F, double>(codes, 256, outd);
    for (unsigned c = 0; c < 256; ++c) {
      INFO(kvq::format_name<F>() << " code " << hex(c, 2));
      CHECK(bits_of(out[c]) == bits_of(kvq::decode<F>(codes[c])));
      CHECK(bits_of(outd[c]) == bits_of(kvq::decode<F, double>(codes[c])));
    }
  });
}

TEST_CASE("traits match the format table", "[decode][traits]") {
  for_each_format([](auto f) {
    using F = decltype(f);
    const layout& L = ref<F>::L;
    const table T(L);
    INFO(L.name);
    CHECK(F::is_signed == L.is_signed);
    CHECK(F::exponent_bits == L.ebits);
    CHECK(F::mantissa_bits == L.mbits);
    CHECK(F::bias == L.bias);
    CHECK(F::bits == L.bits());
    CHECK(F::has_subnormals == L.subnormals);
    CHECK(kvq::code_count_v<F> == static_cast<int>(L.code_count()));
    CHECK(kvq::bits_v<F> == L.bits());
    CHECK(static_cast<unsigned>(F::sign_mask) == L.sign_mask());
    CHECK(static_cast<unsigned>(F::magnitude_mask) == L.mag_mask());
    CHECK(static_cast<unsigned>(F::max_finite_code) == T.max_code);
    CHECK(F::max_finite() == T.v.back());
    CHECK(kvq::max_finite_v<F> == T.v.back());
    const double smallest = T.v[0] == 0.0 ? T.v[1] : T.v[0];
    CHECK(F::min_subnormal() == smallest);
    CHECK(kvq::min_subnormal_v<F> == smallest);
    CHECK(F::has_inf == (L.special == sp::ieee));
    CHECK(F::has_nan == (L.special != sp::none));
    CHECK(F::has_zero == (T.v[0] == 0.0));
    if (F::has_nan) CHECK(static_cast<unsigned>(F::nan_code) == T.nan_code);
    if (F::has_inf) CHECK(static_cast<unsigned>(F::inf_code) == T.inf_code);
    // Smallest normal: the first code with exponent field 1 (field 0 without subnormals).
    const unsigned first_normal = L.subnormals ? (1u << L.mbits) : 0u;
    CHECK(F::min_normal() == ref_decode(L, first_normal));
    CHECK(kvq::min_normal_v<F> == ref_decode(L, first_normal));
    CHECK(std::ldexp(1.0, F::emin) == F::min_normal());
    CHECK(std::ldexp(1.0, F::emax) <= F::max_finite());
    CHECK(std::ldexp(1.0, F::emax + 1) > F::max_finite());
  });
  // The numbers of docs/design.md's format table.
  CHECK(kvq::max_finite_v<kvq::fmt::e4m3> == 448);
  CHECK(kvq::max_finite_v<kvq::fmt::e5m2> == 57344);
  CHECK(kvq::max_finite_v<kvq::fmt::e3m2> == 28);
  CHECK(kvq::max_finite_v<kvq::fmt::e2m3> == 7.5);
  CHECK(kvq::max_finite_v<kvq::fmt::e2m1> == 6);
  CHECK(kvq::max_finite_v<kvq::fmt::ue8m0> == std::ldexp(1.0, 127));
  CHECK(kvq::max_finite_v<kvq::fmt::ue4m3> == 448);
  CHECK(kvq::max_finite_v<kvq::fmt::e4m3fnuz> == 240);
  CHECK(kvq::max_finite_v<kvq::fmt::e5m2fnuz> == 57344);
  CHECK(kvq::min_subnormal_v<kvq::fmt::e4m3> == std::ldexp(1.0, -9));
  CHECK(kvq::min_subnormal_v<kvq::fmt::e5m2> == std::ldexp(1.0, -16));
  CHECK(kvq::min_subnormal_v<kvq::fmt::e3m2> == std::ldexp(1.0, -4));
  CHECK(kvq::min_subnormal_v<kvq::fmt::e2m3> == std::ldexp(1.0, -3));
  CHECK(kvq::min_subnormal_v<kvq::fmt::e2m1> == 0.5);
  CHECK(kvq::min_subnormal_v<kvq::fmt::ue8m0> == std::ldexp(1.0, -127));
  CHECK(kvq::min_subnormal_v<kvq::fmt::ue4m3> == std::ldexp(1.0, -9));
}
