// Fixed-shape tree reductions, bf16 rounding and the Hadamard rotation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <kvq/attention/hadamard.hpp>
#include <kvq/core/reduce.hpp>
#include <kvq/core/float16.hpp>

#include "isa_copies.hpp"

namespace {

// The documented shape, written directly: split at the largest power of two < n.
template <class T>
T tree_ref(const T* x, std::size_t n) {
  if (n == 0) return T(0);
  if (n == 1) return x[0];
  std::size_t h = 1;
  while (h * 2 < n) h *= 2;
  return tree_ref(x, h) + tree_ref(x + h, n - h);
}

std::uint64_t bits(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, 8);
  return u;
}

// Inputs with every class a dot product meets: normal values of many magnitudes, ±0,
// subnormals, ±Inf and NaN (rarely, so most rows stay finite).
float edge_value(std::mt19937& gen) {
  const auto k = static_cast<unsigned>(gen() % 200);
  if (k == 0) return std::numeric_limits<float>::quiet_NaN();
  if (k == 1) return std::numeric_limits<float>::infinity();
  if (k == 2) return -std::numeric_limits<float>::infinity();
  if (k == 3) return -0.0f;
  if (k == 4) return std::numeric_limits<float>::denorm_min() * static_cast<float>(gen() % 1000);
  return std::ldexp(std::uniform_real_distribution<float>(-1, 1)(gen), static_cast<int>(gen() % 60) - 30);
}

// tree_dot_rows against the documented shape over the rounded products, written directly.
template <class Acc>
void check_dot_rows(std::mt19937& gen, std::size_t n, std::size_t n_rows, std::size_t stride) {
  std::vector<float> a(n), rows(n_rows * stride + 1);
  for (auto& v : a) v = edge_value(gen);
  for (auto& v : rows) v = edge_value(gen);
  std::vector<Acc> out(n_rows + 1, Acc(12345));
  kvq::reduce::tree_dot_rows<Acc>(a.data(), rows.data(), stride, n_rows, n, out.data());
  for (std::size_t r = 0; r < n_rows; ++r) {
    std::vector<Acc> prod(n);
    for (std::size_t i = 0; i < n; ++i) prod[i] = static_cast<Acc>(a[i]) * static_cast<Acc>(rows[r * stride + i]);
    const Acc want = tree_ref(prod.data(), n);
    INFO("n = " << n << ", rows = " << n_rows << ", row " << r);
    if (want != want) {
      REQUIRE(out[r] != out[r]);
    } else {
      REQUIRE(bits(out[r]) == bits(want));
    }
  }
  REQUIRE(out[n_rows] == Acc(12345));  // nothing written past the rows
}

// tree_dot_rows_at on m rows picked at random (repeats and any order) from n_rows.
template <class Acc>
void check_dot_rows_at(std::mt19937& gen, std::size_t n, std::size_t n_rows, std::size_t m) {
  const std::size_t stride = n + 1;
  std::vector<float> a(n), rows(n_rows * stride);
  for (auto& v : a) v = edge_value(gen);
  for (auto& v : rows) v = edge_value(gen);
  std::vector<std::size_t> idx(m);
  for (auto& i : idx) i = gen() % n_rows;
  std::vector<Acc> out(m + 1, Acc(12345));
  kvq::reduce::tree_dot_rows_at<Acc>(a.data(), rows.data(), stride, idx.data(), m, n, out.data());
  for (std::size_t k = 0; k < m; ++k) {
    std::vector<Acc> prod(n);
    for (std::size_t i = 0; i < n; ++i) prod[i] = static_cast<Acc>(a[i]) * static_cast<Acc>(rows[idx[k] * stride + i]);
    const Acc want = tree_ref(prod.data(), n);
    INFO("n = " << n << ", m = " << m << ", entry " << k << " (row " << idx[k] << ")");
    if (want != want) {
      REQUIRE(out[k] != out[k]);
    } else {
      REQUIRE(bits(out[k]) == bits(want));
    }
  }
  REQUIRE(out[m] == Acc(12345));  // nothing written past the list
}

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

}  // namespace

TEST_CASE("tree sum has the documented shape for every length", "[reduce][quick]") {
  std::mt19937 gen(3);
  std::vector<float> x(1100);
  for (auto& v : x) v = std::ldexp(std::uniform_real_distribution<float>(-1, 1)(gen), static_cast<int>(gen() % 40) - 20);
  for (std::size_t n = 0; n <= x.size(); ++n) {
    const float a = kvq::reduce::tree_sum(x.data(), n);
    REQUIRE(bits(a) == bits(tree_ref(x.data(), n)));
  }
  // example from the header: n = 6 is ((x0 + x1) + (x2 + x3)) + (x4 + x5)
  const float y[6] = {1e8f, 1.0f, -1e8f, 1.0f, 3.0f, 0.5f};
  CHECK(kvq::reduce::tree_sum(y, 6) == ((y[0] + y[1]) + (y[2] + y[3])) + (y[4] + y[5]));
  CHECK(kvq::reduce::levels_needed(0) == 0);
  CHECK(kvq::reduce::levels_needed(1) == 1);
  CHECK(kvq::reduce::levels_needed(131072) == 18);
}

TEST_CASE("dot, strided, max and vector accumulators follow the same tree", "[reduce][quick]") {
  std::mt19937 gen(4);
  const std::size_t n = 777, d = 5;
  std::vector<float> a(n), b(n), m(n * d);
  for (auto& v : a) v = std::uniform_real_distribution<float>(-3, 3)(gen);
  for (auto& v : b) v = std::uniform_real_distribution<float>(-3, 3)(gen);
  for (auto& v : m) v = std::uniform_real_distribution<float>(-3, 3)(gen);
  std::vector<float> prod(n);
  for (std::size_t i = 0; i < n; ++i) prod[i] = a[i] * b[i];
  CHECK(bits(kvq::reduce::tree_dot<float>(a.data(), b.data(), n)) == bits(tree_ref(prod.data(), n)));
  // double accumulation of float products: exact products, tree in double
  std::vector<double> pd(n);
  for (std::size_t i = 0; i < n; ++i) pd[i] = double(a[i]) * double(b[i]);
  CHECK(kvq::reduce::tree_dot<double>(a.data(), b.data(), n) == kvq::reduce::tree_sum(pd.data(), n));
  // columns through the vector accumulator == strided tree per column
  std::vector<float> storage(kvq::reduce::max_levels * d), tmp(d), out(d);
  kvq::reduce::tree_vector_accumulator<float> acc(storage.data(), d);
  for (std::size_t t = 0; t < n; ++t) acc.push_scaled(a[t], &m[t * d], tmp.data());
  acc.result(out.data());
  for (std::size_t c = 0; c < d; ++c) {
    std::vector<float> col(n);
    for (std::size_t t = 0; t < n; ++t) col[t] = a[t] * m[t * d + c];
    CHECK(bits(out[c]) == bits(tree_ref(col.data(), n)));
    CHECK(bits(kvq::reduce::tree_sum_strided(&m[c], n, static_cast<std::ptrdiff_t>(d))) ==
          bits(tree_ref(std::vector<float>([&] {
                          std::vector<float> v(n);
                          for (std::size_t t = 0; t < n; ++t) v[t] = m[t * d + c];
                          return v;
                        }()).data(),
                        n)));
  }
  // max: exact, NaN-propagating, -inf when empty
  CHECK(kvq::reduce::tree_max(a.data(), n) == *std::max_element(a.begin(), a.end()));
  CHECK(kvq::reduce::tree_max(a.data(), 0) == -std::numeric_limits<float>::infinity());
  a[500] = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(kvq::reduce::tree_max(a.data(), n)));
}

// push_scaled_pair against the documented tree written directly (tree_ref per column of
// the rounded products), for pairs pushed at every parity of the count, with NaN and
// infinities among the rows.
template <class T>
void check_pairs(std::uint32_t seed) {
  std::mt19937 gen(seed);
  const std::size_t d = 9;
  for (std::size_t n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 64, 100, 255, 256, 257}) {
    std::vector<float> w(n), m(n * d);
    for (auto& v : w) v = std::uniform_real_distribution<float>(-3, 3)(gen);
    for (auto& v : m) v = std::uniform_real_distribution<float>(-3, 3)(gen);
    if (n > 5) {
      m[3 * d + 1] = std::numeric_limits<float>::infinity();
      m[4 * d + 1] = -std::numeric_limits<float>::infinity();
      std::uint32_t u = 0x7fc12345u;  // a NaN with a payload
      std::memcpy(&m[2 * d + 4], &u, 4);
      m[5 * d + 6] = -std::numeric_limits<float>::quiet_NaN();
    }
    // Pairs from the start, or a single push first (every pair at an odd count).
    for (std::size_t first_single : {0, 1}) {
      std::vector<T> storage(kvq::reduce::max_levels * d), tmp(d), out(d);
      kvq::reduce::tree_vector_accumulator<T> acc(storage.data(), d);
      std::size_t t = 0;
      if (first_single && n > 0) acc.push_scaled(w[t], &m[t * d], tmp.data()), ++t;
      for (; t + 1 < n; t += 2) acc.push_scaled_pair(w[t], &m[t * d], w[t + 1], &m[(t + 1) * d], tmp.data());
      if (t < n) acc.push_scaled(w[t], &m[t * d], tmp.data());
      CHECK(acc.count == n);
      acc.result(out.data());
      for (std::size_t c = 0; c < d; ++c) {
        std::vector<T> col(n);
        for (std::size_t r = 0; r < n; ++r) col[r] = static_cast<T>(w[r]) * static_cast<T>(m[r * d + c]);
        INFO("n " << n << " column " << c << " first_single " << first_single);
        CHECK(bits(out[c]) == bits(tree_ref(col.data(), n)));
      }
    }
  }
}

TEST_CASE("push_scaled_pair gives two push_scaled calls' bits at either parity of the count", "[reduce][quick]") {
  check_pairs<float>(11);
  check_pairs<double>(12);
}

TEST_CASE("tree_dot_rows gives each row's tree_dot bits, any length, row count and stride", "[reduce][quick]") {
  std::mt19937 gen(5);
  for (std::size_t n : {0, 1, 2, 3, 5, 7, 8, 31, 32, 33, 64, 80, 96, 127, 128, 129, 200, 256, 300}) {
    kvq_test::for_each_isa([&](kvq::isa i) {
      INFO("kernel copy " << kvq::isa_name(i));
      for (std::size_t n_rows : {0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 33}) {
        check_dot_rows<float>(gen, n, n_rows, n);
        check_dot_rows<double>(gen, n, n_rows, n);
      }
      check_dot_rows<float>(gen, n, 19, n + 3);  // rows of a wider matrix
      check_dot_rows<double>(gen, n, 19, n + 5);
    });
  }
  for (std::size_t n : {0, 1, 7, 8, 9, 64, 128, 131}) {
    kvq_test::for_each_isa([&](kvq::isa i) {
      INFO("kernel copy " << kvq::isa_name(i));
      for (std::size_t m : {0, 1, 3, 4, 7, 8, 9, 17, 40}) {
        check_dot_rows_at<float>(gen, n, 13, m);
        check_dot_rows_at<double>(gen, n, 13, m);
      }
    });
  }
  // the lanes accumulator alone: lane j equals tree_sum of lane j's values
  kvq::reduce::tree_accumulator_lanes<float, 3> acc;
  std::vector<float> lane[3];
  for (int t = 0; t < 1000; ++t) {
    float v[3];
    for (int j = 0; j < 3; ++j) {
      v[j] = edge_value(gen);
      if (!std::isfinite(v[j])) v[j] = 1.0f;
      lane[j].push_back(v[j]);
    }
    acc.push(v);
  }
  float res[3];
  acc.result(res);
  for (int j = 0; j < 3; ++j) CHECK(bits(res[j]) == bits(tree_ref(lane[j].data(), lane[j].size())));
}

TEST_CASE("bf16 rounding is round-to-nearest-even with NaN and overflow", "[rounding][quick]") {
  using kvq::round_bf16;
  CHECK(round_bf16(1.0f) == 1.0f);
  CHECK(round_bf16(1.0f + 0x1p-8f) == 1.0f);                    // tie -> even (down)
  CHECK(round_bf16(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);      // tie -> even (up)
  CHECK(round_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 1.0f + 0x1p-7f);
  CHECK(std::isinf(round_bf16(std::numeric_limits<float>::max())));
  CHECK(std::isnan(round_bf16(std::numeric_limits<float>::quiet_NaN())));
  // signalling-NaN pattern whose payload sits in the low half stays a NaN
  float snan;
  const std::uint32_t u = 0x7f800001u;
  std::memcpy(&snan, &u, 4);
  CHECK(std::isnan(round_bf16(snan)));
  CHECK(round_bf16(-2.5f) == -2.5f);
  CHECK(round_bf16(std::numeric_limits<float>::denorm_min()) == 0.0f);
}

TEST_CASE("Hadamard rotation: H4 explicitly, orthogonality, self-inverse", "[hadamard][quick]") {
  float x[4] = {1, 2, 3, 4};
  kvq::attention::hadamard_rotate(x, 4);
  // H4 = [[1,1,1,1],[1,-1,1,-1],[1,1,-1,-1],[1,-1,-1,1]] / 2
  CHECK(x[0] == 5.0f);
  CHECK(x[1] == -1.0f);
  CHECK(x[2] == -2.0f);
  CHECK(x[3] == 0.0f);
  CHECK(kvq::attention::hadamard_scale(64) == 0.125f);
  std::mt19937 gen(8);
  std::vector<float> v(128), w(128), y(128);
  for (auto& e : v) e = std::uniform_real_distribution<float>(-1, 1)(gen);
  for (auto& e : w) e = std::uniform_real_distribution<float>(-1, 1)(gen);
  double dot0 = 0, n0 = 0;
  for (int i = 0; i < 128; ++i) {
    dot0 += double(v[i]) * w[i];
    n0 += double(v[i]) * v[i];
  }
  y = v;
  kvq::attention::hadamard_rotate(y.data(), 128);
  kvq::attention::hadamard_rotate(w.data(), 128);
  double dot1 = 0, n1 = 0;
  for (int i = 0; i < 128; ++i) {
    dot1 += double(y[i]) * w[i];
    n1 += double(y[i]) * y[i];
  }
  CHECK(dot1 == Approx(dot0).margin(1e-5));
  CHECK(n1 == Approx(n0).epsilon(1e-6));
  kvq::attention::hadamard_rotate(y.data(), 128);
  for (int i = 0; i < 128; ++i) CHECK(y[i] == Approx(v[i]).margin(1e-6));
  // an outlier channel is spread evenly
  std::vector<float> o(64, 0.0f);
  o[7] = 800.0f;
  kvq::attention::hadamard_rotate(o.data(), 64);
  for (float e : o) CHECK(std::fabs(e) == 100.0f);
}
