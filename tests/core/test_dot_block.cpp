// Batched dot products and the blocked sum/max trees against the documented tree shape,
// written directly (split at the largest power of two below n), over the rounded products.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <kvq/core/dot_block.hpp>

#include "isa_copies.hpp"

namespace {

template <class T, class Op>
T tree_ref(const T* x, std::size_t n, Op op) {
  if (n == 1) return x[0];
  std::size_t h = 1;
  while (h * 2 < n) h *= 2;
  return op(tree_ref(x, h, op), tree_ref(x + h, n - h, op));
}
struct plus {
  template <class T>
  T operator()(T a, T b) const { return a + b; }
};
struct nanmax {  // the documented max: NaN if either is NaN (left first), else a > b ? a : b
  template <class T>
  T operator()(T a, T b) const { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
};

template <class T>
auto bits_of(T x) {
  typename std::conditional<sizeof(T) == 8, std::uint64_t, std::uint32_t>::type u;
  std::memcpy(&u, &x, sizeof(T));
  return u;
}

float dot_edge_value(std::mt19937& gen) {
  const unsigned k = gen() % 64;
  if (k == 0) return 0.0f;
  if (k == 1) return -0.0f;
  if (k == 2) return std::numeric_limits<float>::denorm_min() * static_cast<float>(gen() % 1000);
  if (k == 3) return 3.0e38f;  // products and sums that overflow to inf
  return std::ldexp(std::uniform_real_distribution<float>(-1, 1)(gen), static_cast<int>(gen() % 60) - 30);
}

template <class Acc>
void check_block(std::mt19937& gen, std::size_t n, std::size_t n_vec, std::size_t n_rows) {
  const std::size_t a_stride = n + 1, row_stride = n + 3, out_stride = n_rows + 2;
  std::vector<float> a(n_vec * a_stride + 1), rows(n_rows * row_stride + 1);
  for (auto& v : a) v = dot_edge_value(gen);
  for (auto& v : rows) v = dot_edge_value(gen);
  std::vector<Acc> out(n_vec * out_stride + 1, Acc(12345));
  kvq::reduce::tree_dot_block<Acc>(a.data(), a_stride, n_vec, rows.data(), row_stride, n_rows, n, out.data(),
                                   out_stride);
  std::vector<Acc> prod(n);
  for (std::size_t v = 0; v < n_vec; ++v)
    for (std::size_t r = 0; r < n_rows; ++r) {
      for (std::size_t i = 0; i < n; ++i)
        prod[i] = static_cast<Acc>(a[v * a_stride + i]) * static_cast<Acc>(rows[r * row_stride + i]);
      const Acc want = n == 0 ? Acc(0) : tree_ref(prod.data(), n, plus{});
      const Acc got = out[v * out_stride + r];
      INFO("n = " << n << ", vectors = " << n_vec << ", rows = " << n_rows << ", v " << v << ", row " << r);
      if (want != want) {
        REQUIRE(got != got);
      } else {
        REQUIRE(bits_of(got) == bits_of(want));
      }
    }
  // nothing written outside [v * out_stride, v * out_stride + n_rows)
  for (std::size_t v = 0; v < n_vec; ++v)
    for (std::size_t r = n_rows; r < out_stride; ++r)
      if (v * out_stride + r < out.size()) REQUIRE(out[v * out_stride + r] == Acc(12345));
}

}  // namespace

TEST_CASE("tree_dot_block gives every pair tree_dot's bits: any length, batch and row count", "[reduce][quick]") {
  std::mt19937 gen(11);
  for (std::size_t n : {0, 1, 3, 7, 8, 9, 16, 31, 64, 100, 128, 129}) {
    for (std::size_t n_rows : {0, 1, 3, 4, 5, 8, 9, 17}) {
      for (std::size_t n_vec : {0, 1, 2, 5}) {
        kvq_test::for_each_isa([&](kvq::isa i) {
          INFO("kernel copy " << kvq::isa_name(i));
          check_block<float>(gen, n, n_vec, n_rows);
          check_block<double>(gen, n, n_vec, n_rows);
        });
      }
    }
  }
}

TEST_CASE("tree_sum_blocked and tree_max_blocked follow the documented tree for every length", "[reduce][quick]") {
  std::mt19937 gen(12);
  std::vector<double> x(700);
  std::vector<float> xf(700);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(gen), static_cast<int>(gen() % 80) - 40);
    xf[i] = static_cast<float>(x[i]);
  }
  // equal values of both signs (which zero the max keeps) and a NaN with a payload
  x[65] = 0.0;
  x[66] = -0.0;
  for (std::size_t n = 0; n <= x.size(); ++n) {
    INFO("n = " << n);
    if (n == 0) {
      REQUIRE(kvq::reduce::tree_sum_blocked(x.data(), 0) == 0.0);
      REQUIRE(kvq::reduce::tree_max_blocked(xf.data(), 0) == -std::numeric_limits<float>::infinity());
      continue;
    }
    REQUIRE(bits_of(kvq::reduce::tree_sum_blocked(x.data(), n)) == bits_of(tree_ref(x.data(), n, plus{})));
    REQUIRE(bits_of(kvq::reduce::tree_sum_blocked(xf.data(), n)) == bits_of(tree_ref(xf.data(), n, plus{})));
    REQUIRE(bits_of(kvq::reduce::tree_max_blocked(x.data(), n)) == bits_of(tree_ref(x.data(), n, nanmax{})));
    REQUIRE(bits_of(kvq::reduce::tree_max_blocked(xf.data(), n)) == bits_of(tree_ref(xf.data(), n, nanmax{})));
  }
  // NaNs with different payloads: the max tree decides which one comes out (max2 returns
  // an operand); a sum of two NaNs is a NaN whose payload IEEE 754 leaves to the
  // hardware and the compiler's operand order, so only its NaN-ness is checked.
  std::uint64_t p1 = 0x7ff8000000000001ull, p2 = 0x7ff8000000000002ull;
  std::memcpy(&x[10], &p1, 8);
  std::memcpy(&x[300], &p2, 8);
  for (std::size_t n : {11, 64, 129, 301, 700}) {
    INFO("n = " << n);
    REQUIRE(bits_of(kvq::reduce::tree_max_blocked(x.data(), n)) == bits_of(tree_ref(x.data(), n, nanmax{})));
    REQUIRE(std::isnan(kvq::reduce::tree_sum_blocked(x.data(), n)));
  }
}
