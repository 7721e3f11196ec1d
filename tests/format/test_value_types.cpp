// The one-byte value types: storage size, std::numeric_limits against the format
// table of docs/design.md, comparisons, and Eigen casts against element-wise encode/decode.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>

#include <Eigen/Core>
#include <kvq/format.hpp>
#include <kvq/format/eigen.hpp>

#include "formats_under_test.hpp"

using namespace kvqtest;

namespace {

// The format table of docs/design.md (max finite, min subnormal), plus the smallest normal
// and epsilon (2^-M: the gap above 1) from the bit layouts written there.
struct expected_limits {
  double max, min_normal, denorm_min, epsilon;
  bool is_signed, has_inf, has_nan, has_denorm;
};

template <class V>
void check_limits(const expected_limits& e) {
  using L = std::numeric_limits<V>;
  const auto f = [](V v) { return static_cast<double>(static_cast<float>(v)); };
  INFO(kvq::format_name<V>());
  STATIC_REQUIRE(L::is_specialized);
  STATIC_REQUIRE(sizeof(V) == 1);
  STATIC_REQUIRE(std::is_trivially_copyable<V>::value);
  CHECK(L::is_signed == e.is_signed);
  CHECK(L::has_infinity == e.has_inf);
  CHECK(L::has_quiet_NaN == e.has_nan);
  CHECK_FALSE(L::is_integer);
  CHECK_FALSE(L::is_exact);
  CHECK_FALSE(L::is_iec559);
  CHECK(L::is_bounded);
  CHECK(L::radix == 2);
  CHECK(f(L::max()) == e.max);
  CHECK(f(L::min()) == e.min_normal);
  CHECK(f(L::denorm_min()) == e.denorm_min);
  CHECK(f(L::epsilon()) == e.epsilon);
  CHECK(f(L::round_error()) == 0.5);
  // lowest: -max for signed formats; the smallest value for unsigned ones (0 for
  // ue4m3; ue8m0 has no zero, its smallest value is 2^-127).
  CHECK(f(L::lowest()) == (e.is_signed ? -e.max : e.has_denorm ? 0.0 : e.min_normal));
  // digits/exponents in the <limits> conventions: min() == 2^(min_exponent-1),
  // 2^(max_exponent-1) <= max() < 2^max_exponent, 1 + epsilon has digits bits.
  CHECK(std::ldexp(1.0, L::min_exponent - 1) == e.min_normal);
  CHECK(std::ldexp(1.0, L::max_exponent - 1) <= e.max);
  CHECK(std::ldexp(1.0, L::max_exponent) > e.max);
  CHECK(std::ldexp(1.0, 1 - L::digits) == e.epsilon);
#if __cplusplus < 202302L
  CHECK((L::has_denorm == std::denorm_present) == e.has_denorm);
#endif
  if (e.has_inf) {
    CHECK(f(L::infinity()) == std::numeric_limits<double>::infinity());
  }
  if (e.has_nan) {
    CHECK(std::isnan(f(L::quiet_NaN())));
    CHECK(L::quiet_NaN().is_nan());
  }
  CHECK_FALSE(L::max().is_nan());
  // The format value table of the oracle agrees.
  const table T(ref<kvq::format_of_t<V>>::L);
  CHECK(T.v.back() == e.max);
  CHECK((T.v[0] == 0.0 ? T.v[1] : T.v[0]) == e.denorm_min);
}

}  // namespace

TEST_CASE("value types: one byte, numeric_limits as in the format table", "[value]") {
  const double p = 1.0;
  //                         max                     min normal            denorm_min         epsilon  sgn  inf   nan   denorm
  check_limits<kvq::e4m3>({448, std::ldexp(p, -6), std::ldexp(p, -9), 0.125, true, false, true, true});
  check_limits<kvq::e5m2>({57344, std::ldexp(p, -14), std::ldexp(p, -16), 0.25, true, true, true, true});
  check_limits<kvq::e3m2>({28, 0.25, std::ldexp(p, -4), 0.25, true, false, false, true});
  check_limits<kvq::e2m3>({7.5, 1.0, 0.125, 0.125, true, false, false, true});
  check_limits<kvq::e2m1>({6, 1.0, 0.5, 0.5, true, false, false, true});
  check_limits<kvq::ue8m0>({std::ldexp(p, 127), std::ldexp(p, -127), std::ldexp(p, -127), 1.0, false, false, true, false});
  check_limits<kvq::ue4m3>({448, std::ldexp(p, -6), std::ldexp(p, -9), 0.125, false, false, true, true});
  check_limits<kvq::e4m3fnuz>({240, std::ldexp(p, -7), std::ldexp(p, -10), 0.125, true, false, true, true});
  check_limits<kvq::e5m2fnuz>({57344, std::ldexp(p, -15), std::ldexp(p, -17), 0.25, true, false, true, true});
  check_limits<kvq::e4m3b11fnuz>({30, std::ldexp(p, -10), std::ldexp(p, -13), 0.125, true, false, true, true});
}

TEST_CASE("value types: conversions, codes and comparisons", "[value]") {
  using kvq::e4m3;
  CHECK(e4m3(1.0f).code() == kvq::encode<kvq::fmt::e4m3>(1.0f));
  CHECK(e4m3(1.0625 + 1e-12).code() == kvq::encode<kvq::fmt::e4m3>(1.0625 + 1e-12));  // double ctor: one rounding
  CHECK(static_cast<float>(e4m3::from_code(0x7E)) == 448.0f);
  CHECK(static_cast<double>(kvq::e5m2::from_code(0x7C)) == std::numeric_limits<double>::infinity());
  CHECK(kvq::e2m1::from_code(0xF7).code() == 0x7);  // bits above the format width are cleared
  CHECK(kvq::e3m2::from_code(0xFF).code() == 0x3F);
  CHECK(e4m3(0.0f) == e4m3(-0.0f));
  CHECK(e4m3(1.0f) < e4m3(2.0f));
  CHECK(e4m3(-2.0f) < e4m3(1.0f));
  CHECK_FALSE(e4m3::from_code(0x7F) == e4m3::from_code(0x7F));  // NaN is unordered
  CHECK(e4m3::from_code(0x7F).is_nan());
  CHECK(kvq::e5m2::from_code(0xFC).is_inf());
  CHECK((-e4m3(1.5f)).code() == 0xBC);
  CHECK((-kvq::e4m3fnuz(0.0f)).code() == 0x00);  // no -0 in fnuz
  CHECK((-kvq::ue8m0(4.0f)).code() == kvq::ue8m0(4.0f).code());
  // Every code of every format: the value type decodes exactly like kvq::decode.
  for_each_format([](auto f) {
    using F = decltype(f);
    using V = kvq::minifloat<F>;
    for (unsigned c = 0; c < static_cast<unsigned>(kvq::code_count_v<F>); ++c) {
      const V v = V::from_code(static_cast<std::uint8_t>(c));
      INFO(kvq::format_name<F>() << " code " << hex(c, 2));
      CHECK(bits_of(static_cast<float>(v)) == bits_of(kvq::decode<F>(static_cast<std::uint8_t>(c))));
      CHECK(bits_of(static_cast<double>(v)) == bits_of(kvq::decode<F, double>(static_cast<std::uint8_t>(c))));
    }
  });
}

namespace {

template <class F>
void check_eigen_cast() {
  using V = kvq::minifloat<F>;
  std::mt19937 rng(7u);
  std::uniform_int_distribution<std::uint32_t> any;
  std::normal_distribution<float> normal(0.0f, 3.0f);
  Eigen::MatrixXf m(37, 29);
  for (Eigen::Index j = 0; j < m.cols(); ++j) {
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
      // Mostly values in range, some arbitrary bit patterns (NaN, Inf, huge, tiny).
      m(i, j) = (i + j) % 5 == 0 ? float_from_bits(any(rng)) : normal(rng) * static_cast<float>(kvq::max_finite_v<F>) / 8;
    }
  }
  m(0, 0) = std::numeric_limits<float>::quiet_NaN();
  m(1, 0) = -std::numeric_limits<float>::infinity();
  m(2, 0) = -0.0f;
  const auto q = m.template cast<V>();
  const Eigen::Matrix<V, Eigen::Dynamic, Eigen::Dynamic> qm = q;
  const Eigen::MatrixXf back = qm.template cast<float>();
  unsigned bad = 0;
  for (Eigen::Index j = 0; j < m.cols(); ++j) {
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
      const std::uint8_t want = kvq::encode<F>(m(i, j));
      const float wantf = kvq::decode<F>(want);
      const bool ok = qm(i, j).code() == want && bits_of(back(i, j)) == bits_of(wantf);
      bad += ok ? 0u : 1u;
    }
  }
  INFO(kvq::format_name<F>());
  CHECK(bad == 0);
  // Zero() and Ones() construct the codes of 0 and 1.
  using MQ = Eigen::Matrix<V, 3, 3>;
  const MQ z = MQ::Zero();
  const MQ o = MQ::Ones();
  CHECK(z(1, 2).code() == kvq::encode<F>(0.0f));
  CHECK(o(2, 1).code() == kvq::encode<F>(1.0f));
  STATIC_REQUIRE(sizeof(Eigen::Matrix<V, 4, 4>) == 16);
}

}  // namespace

TEST_CASE("Eigen: MatrixXf::cast<kvq::...>() and back match element-wise encode/decode", "[value][eigen]") {
  for_each_format([](auto f) { check_eigen_cast<decltype(f)>(); });
  // The literal usage of the design notes.
  Eigen::MatrixXf m = Eigen::MatrixXf::Random(8, 8) * 500.0f;
  auto q = m.cast<kvq::e4m3>();
  Eigen::MatrixXf back = q.cast<float>();
  for (Eigen::Index j = 0; j < m.cols(); ++j)
    for (Eigen::Index i = 0; i < m.rows(); ++i)
      CHECK(back(i, j) == kvq::decode<kvq::fmt::e4m3>(kvq::encode<kvq::fmt::e4m3>(m(i, j))));
}
