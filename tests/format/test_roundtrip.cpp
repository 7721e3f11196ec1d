// Round trip, order and symmetry properties of decode/encode, for every format,
// rounding mode and overflow policy.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include <kvq/format.hpp>

#include "formats_under_test.hpp"
#include "sweep.hpp"

using namespace kvqtest;

namespace {

template <class F>
using traits_t = kvq::format_of_t<F>;

// Magnitude codes in value order: 0 .. max finite (and the Inf code for IEEE formats).
template <class F>
bool is_number_code(unsigned c) {
  return !kvq::is_nan_code<F>(static_cast<std::uint8_t>(c));
}

}  // namespace

TEST_CASE("decode then encode returns every non-NaN code", "[roundtrip]") {
  for_each_format([](auto f) {
    using F = decltype(f);
    using T = traits_t<F>;
    for (unsigned c = 0; c < static_cast<unsigned>(kvq::code_count_v<F>); ++c) {
      const auto code = static_cast<std::uint8_t>(c);
      if (kvq::is_nan_code<F>(code)) continue;
      const float vf = kvq::decode<F, float>(code);
      const double vd = kvq::decode<F, double>(code);
      for (rmode r : all_rmodes) {
        for (ovf o : all_ovfs) {
          INFO(kvq::format_name<F>() << " code " << hex(c, 2) << " " << name_of(r) << " " << name_of(o));
          // Inf codes come back only without saturation; satfinite clamps them.
          unsigned want = c;
          if (kvq::is_inf_code<F>(code) && o == ovf::satfinite) want = T::max_finite_code | (c & T::sign_mask);
          CHECK(kvq::encode<F>(vf, to_kvq(r), to_kvq(o)) == want);
          CHECK(kvq::encode<F>(vd, to_kvq(r), to_kvq(o)) == want);
        }
      }
      // The value types round-trip too.
      CHECK(kvq::minifloat<T>(vf).code() == (kvq::is_inf_code<F>(code) ? (T::max_finite_code | (c & T::sign_mask)) : c));
      CHECK(bits_of(static_cast<float>(kvq::minifloat<T>::from_code(code))) == bits_of(vf));
    }
  });
}

TEST_CASE("decode is strictly increasing over the ordered codes", "[roundtrip]") {
  for_each_format([](auto f) {
    using F = decltype(f);
    using T = traits_t<F>;
    // Positive magnitudes in code order, then the negative ones mirrored: the order of
    // the values must be the order of the codes.
    double prev = 0;
    unsigned count = 0;
    const auto increasing = [&](double v) { return count == 0 || v > prev; };
    if (T::is_signed) {
      for (unsigned m = T::magnitude_mask + 1u; m-- > 0;) {
        const auto code = static_cast<std::uint8_t>(m | T::sign_mask);
        if (!is_number_code<F>(code)) continue;
        if (m == 0) continue;  // -0 == +0; checked below
        const double v = kvq::decode<F, double>(code);
        INFO(kvq::format_name<F>() << " code " << hex(code, 2));
        CHECK(increasing(v));
        prev = v;
        ++count;
      }
    }
    for (unsigned m = 0; m <= T::magnitude_mask; ++m) {
      const auto code = static_cast<std::uint8_t>(m);
      if (!is_number_code<F>(code)) continue;
      const double v = kvq::decode<F, double>(code);
      INFO(kvq::format_name<F>() << " code " << hex(code, 2));
      CHECK(increasing(v));
      prev = v;
      ++count;
    }
    // Every code is accounted for: numbers + NaNs + (-0 when it exists).
    unsigned nans = 0;
    for (unsigned c = 0; c < static_cast<unsigned>(kvq::code_count_v<F>); ++c)
      nans += kvq::is_nan_code<F>(static_cast<std::uint8_t>(c)) ? 1u : 0u;
    const unsigned neg_zero = T::has_negative_zero ? 1u : 0u;
    CHECK(count + nans + neg_zero == static_cast<unsigned>(kvq::code_count_v<F>));
    if (T::has_negative_zero) {
      const double nz = kvq::decode<F, double>(T::sign_mask);
      CHECK(nz == 0.0);
      CHECK(std::signbit(nz));
    }
  });
}

TEST_CASE("sign symmetry of decode and encode", "[roundtrip]") {
  for_each_format([](auto f) {
    using F = decltype(f);
    using T = traits_t<F>;
    if constexpr (T::is_signed) {
      // decode(-c) == -decode(c) for every number code.
      for (unsigned m = 0; m <= T::magnitude_mask; ++m) {
        const auto pos = static_cast<std::uint8_t>(m);
        const auto neg = static_cast<std::uint8_t>(m | T::sign_mask);
        if (kvq::is_nan_code<F>(pos) || kvq::is_nan_code<F>(neg)) continue;
        INFO(kvq::format_name<F>() << " code " << hex(m, 2));
        CHECK(kvq::decode<F, double>(neg) == -kvq::decode<F, double>(pos));
      }
      // encode(-x) mirrors encode(x), with up and down swapped, for a sample of
      // floats covering every binade (every 65521st bit pattern of the positive half).
      mismatch_log log;
      for (std::uint64_t u = 0; u < 0x7F800000ull; u += 65521) {
        const float x = float_from_bits(static_cast<std::uint32_t>(u));
        for (rmode r : all_rmodes) {
          const rmode mirrored = r == rmode::up ? rmode::down : r == rmode::down ? rmode::up : r;
          for (ovf o : all_ovfs) {
            const unsigned p = kvq::encode<F>(x, to_kvq(r), to_kvq(o));
            const unsigned n = kvq::encode<F>(-x, to_kvq(mirrored), to_kvq(o));
            unsigned want = p | T::sign_mask;
            if (T::special == kvq::specials::fnuz && (p == 0 || p == T::nan_code)) want = p;  // no -0; NaN unsigned
            ++log.checked;
            if (n != want) log.add(bits_of(-x), want, n, -1, name_of(r));
          }
        }
      }
      INFO(kvq::format_name<F>() << ": encode(-x) vs sign|encode(x): " << log.report(8));
      CHECK(log.count == 0);
    } else {
      // Unsigned formats ignore the sign of the input.
      mismatch_log log;
      for (std::uint64_t u = 0; u < 0x7F800000ull; u += 65521) {
        const float x = float_from_bits(static_cast<std::uint32_t>(u));
        for (rmode r : all_rmodes) {
          for (ovf o : all_ovfs) {
            const unsigned p = kvq::encode<F>(x, to_kvq(r), to_kvq(o));
            const unsigned n = kvq::encode<F>(-x, to_kvq(r), to_kvq(o));
            ++log.checked;
            if (n != p) log.add(bits_of(-x), p, n, -1, name_of(r));
          }
        }
      }
      INFO(kvq::format_name<F>() << ": encode(-x) vs encode(x): " << log.report(8));
      CHECK(log.count == 0);
    }
  });
}

TEST_CASE("rounding modes bracket the input", "[roundtrip]") {
  // For every sampled float in range: down <= x <= up, toward_zero is the one of them
  // nearer zero, and both nearest modes pick one of the two.
  for_each_format([](auto f) {
    using F = decltype(f);
    mismatch_log log;
    for (std::uint64_t u = 0; u < (1ull << 32); u += 65521) {
      const float x = float_from_bits(static_cast<std::uint32_t>(u));
      if (!std::isfinite(x) || std::fabs(static_cast<double>(x)) > kvq::max_finite_v<F>) continue;
      if (!traits_t<F>::is_signed && x < 0) continue;
      const auto dec = [](unsigned c) { return kvq::decode<F, double>(static_cast<std::uint8_t>(c)); };
      const double dn = dec(kvq::encode<F>(x, kvq::rounding::down));
      const double up = dec(kvq::encode<F>(x, kvq::rounding::up));
      const double z = dec(kvq::encode<F>(x, kvq::rounding::toward_zero));
      const double ne = dec(kvq::encode<F>(x, kvq::rounding::nearest_even));
      const double na = dec(kvq::encode<F>(x, kvq::rounding::nearest_away));
      const double xd = static_cast<double>(x);
      const bool ok = (!(traits_t<F>::has_zero || xd >= kvq::min_subnormal_v<F>) || dn <= xd) && up >= xd &&
                      z == (xd < 0 ? up : dn) && (ne == dn || ne == up) && (na == dn || na == up);
      ++log.checked;
      if (!ok) log.add(u, 0, 0, -1, "bracket");
    }
    INFO(kvq::format_name<F>() << ": down <= x <= up violated: " << log.report(8));
    CHECK(log.count == 0);
  });
}
