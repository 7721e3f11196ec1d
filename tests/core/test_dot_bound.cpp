// kvq/core/dot_bound.hpp: dot_screen_block under every instruction-set copy stays within
// dot_bound of the fixed-tree dot products in float and in double (tree_dot, itself
// checked against exact arithmetic in test_reduce), on random vectors of many lengths and
// magnitudes, subnormal products included; norm_upper is never below the norm computed
// in long double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include <kvq/core/dot_bound.hpp>
#include <kvq/core/reduce.hpp>

#include "isa_copies.hpp"

TEST_CASE("dot_screen_block is within dot_bound of the tree dot products", "[core][dot_bound]") {
  std::mt19937_64 gen(77);
  for (std::size_t n : {1, 3, 8, 13, 64, 128, 200}) {
    for (double mag : {1.0, 1e-20, 1e-42, 1e15}) {
      for (std::size_t nv : {1, 4, 7}) {
        for (std::size_t nr : {1, 2, 3, 10, 131, 260}) {
          std::normal_distribution<float> nd(0.0f, 1.0f);
          std::vector<float> a(nv * n), rows(nr * (n + 1));
          for (auto& v : a) v = static_cast<float>(nd(gen) * mag);
          for (auto& v : rows) v = static_cast<float>(nd(gen) * (gen() % 8 == 0 ? 100.0 : 1.0));
          const std::size_t stride = n + 1;  // rows with a gap
          std::vector<double> kn(nr);
          for (std::size_t r = 0; r < nr; ++r) kn[r] = kvq::reduce::norm_upper(rows.data() + r * stride, n);
          kvq_test::for_each_isa([&](kvq::isa isa) {
            std::vector<float> of(nv * nr);
            std::vector<double> od(nv * nr), od_scaled(nv * nr);
            kvq::reduce::dot_screen_block<float>(a.data(), n, nv, rows.data(), stride, nr, n, of.data(), nr);
            kvq::reduce::dot_screen_block<double>(a.data(), n, nv, rows.data(), stride, nr, n, od.data(), nr);
            kvq::reduce::dot_screen_block<double>(a.data(), n, nv, rows.data(), stride, nr, n, od_scaled.data(), nr,
                                                  0.125);
            const kvq::reduce::dot_bound bf = kvq::reduce::dot_bound_of<float>(n);
            const kvq::reduce::dot_bound bd = kvq::reduce::dot_bound_of<double>(n);
            for (std::size_t v = 0; v < nv; ++v) {
              const double qn = kvq::reduce::norm_upper(a.data() + v * n, n);
              for (std::size_t r = 0; r < nr; ++r) {
                const float* row = rows.data() + r * stride;
                const double tf = static_cast<double>(kvq::reduce::tree_dot<float>(a.data() + v * n, row, n));
                const double td = kvq::reduce::tree_dot<double>(a.data() + v * n, row, n);
                INFO("isa " << kvq::isa_name(isa) << ", n " << n << ", magnitude " << mag << ", v " << v << ", r "
                            << r);
                REQUIRE(std::fabs(static_cast<double>(of[v * nr + r]) - tf) <= bf(qn * kn[r]));
                REQUIRE(std::fabs(od[v * nr + r] - td) <= bd(qn * kn[r]));
                REQUIRE(od_scaled[v * nr + r] == od[v * nr + r] * 0.125);
              }
            }
          });
        }
      }
    }
  }
}

TEST_CASE("dot_bound: the bound's range and norm_upper", "[core][dot_bound]") {
  CHECK(std::isinf(kvq::reduce::dot_bound_of<float>(128)(0x1p121)));
  CHECK(kvq::reduce::dot_bound_of<float>(128)(0x1p119) < 0x1p119);
  CHECK(std::isinf(kvq::reduce::dot_bound_of<float>(std::size_t(1) << 23)(1.0)));
  // The bound grows with n and is far below the norm product for head dimensions.
  CHECK(kvq::reduce::dot_bound_of<float>(64)(1.0) < kvq::reduce::dot_bound_of<float>(128)(1.0));
  CHECK(kvq::reduce::dot_bound_of<float>(128)(1.0) < 1e-4);
  std::mt19937_64 gen(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (std::size_t n : {0, 1, 5, 128, 4097}) {
    std::vector<float> a(n);
    for (auto& v : a) v = nd(gen) * (gen() % 2 ? 1e-3f : 1e3f);
    long double s = 0;
    for (float v : a) s += static_cast<long double>(v) * static_cast<long double>(v);
    const double nu = kvq::reduce::norm_upper(a.data(), n);
    CHECK(static_cast<long double>(nu) >= std::sqrt(s));
    CHECK(static_cast<long double>(nu) <= std::sqrt(s) * (1.0L + 1e-9L));
  }
}

TEST_CASE("norm_upper and distance_upper: above the long double values, by at most 1e-9, in every copy",
          "[core][dot_bound]") {
  std::mt19937_64 gen(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (std::size_t n : {0, 1, 3, 4, 5, 15, 16, 17, 33, 128, 131, 4097}) {
    std::vector<float> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      const float m = gen() % 2 ? 1e-3f : 1e3f;
      a[i] = nd(gen) * m;
      // b near a (a quantized copy), far from it, or equal to it.
      const int kind = static_cast<int>(gen() % 3);
      b[i] = kind == 0 ? a[i] * (1.0f + 0x1p-4f * nd(gen)) : kind == 1 ? nd(gen) * m : a[i];
    }
    long double sa = 0, sd = 0;
    for (std::size_t i = 0; i < n; ++i) {
      sa += static_cast<long double>(a[i]) * static_cast<long double>(a[i]);
      const long double e = static_cast<long double>(a[i]) - static_cast<long double>(b[i]);  // exact here
      sd += e * e;
    }
    kvq_test::for_each_isa([&](kvq::isa isa) {
      INFO("isa " << kvq::isa_name(isa) << ", n " << n);
      const long double nu = kvq::reduce::norm_upper(a.data(), n), du = kvq::reduce::distance_upper(a.data(), b.data(), n);
      CHECK(nu >= std::sqrt(sa));
      CHECK(nu <= std::sqrt(sa) * (1.0L + 1e-9L));
      CHECK(du >= std::sqrt(sd));
      CHECK(du <= std::sqrt(sd) * (1.0L + 1e-9L));
    });
  }
  // Equal rows are at distance 0; the distance is symmetric.
  const std::vector<float> x = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f};
  CHECK(kvq::reduce::distance_upper(x.data(), x.data(), x.size()) == 0.0);
  const std::vector<float> y = {1.0f, 2.0f, -3.0f, 4.0f, 0.5f};
  CHECK(kvq::reduce::distance_upper(x.data(), y.data(), x.size()) ==
        kvq::reduce::distance_upper(y.data(), x.data(), x.size()));
}

TEST_CASE("rows_norm_upper and rows_distance_upper: the per-row bounds, in every copy", "[core][dot_bound]") {
  std::mt19937_64 gen(12);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (std::size_t d : {1, 16, 67, 128}) {
    const std::size_t rows = 300, stride = d + 3;  // rows apart in memory: the stride is used
    std::vector<float> a(rows * stride), b(rows * stride);
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = nd(gen) * (i % 7 == 0 ? 30.0f : 1.0f);
      b[i] = a[i] * (1.0f + 0x1p-5f * nd(gen));
    }
    a[(rows / 2) * stride] = 1e4f;  // one row far larger than the rest
    kvq_test::for_each_isa([&](kvq::isa isa) {
      INFO("isa " << kvq::isa_name(isa) << ", d " << d);
      double amax = 0, bmax = 0;
      std::vector<double> dist(rows, -1.0);
      for (std::size_t r = 0; r < rows; ++r) {
        amax = std::max(amax, kvq::reduce::norm_upper(a.data() + r * stride, d));
        bmax = std::max(bmax, kvq::reduce::norm_upper(b.data() + r * stride, d));
      }
      CHECK(kvq::reduce::rows_norm_upper(a.data(), rows, d, stride) == amax);
      CHECK(kvq::reduce::rows_norm_upper(a.data(), 0, d, stride) == 0.0);
      CHECK(kvq::reduce::rows_distance_upper(a.data(), b.data(), rows, d, stride, dist.data()) == bmax);
      for (std::size_t r = 0; r < rows; ++r)
        REQUIRE(dist[r] == kvq::reduce::distance_upper(a.data() + r * stride, b.data() + r * stride, d));
    });
  }
}
