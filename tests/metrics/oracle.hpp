// Naive O(n^2) reference implementations of the metrics, written from the textbook
// definitions and independent of the code under test (no shared helpers).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace oracle {

template <class T>
int sgn(T a, T b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

// Kendall tau-b straight from the pair counts.
template <class T, class U>
double kendall_tau_b(const std::vector<T>& x, const std::vector<U>& y) {
  const std::size_t n = x.size();
  long long c = 0, d = 0, tx = 0, ty = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      const int sx = sgn(x[i], x[j]);
      const int sy = sgn(y[i], y[j]);
      if (sx == 0) ++tx;
      if (sy == 0) ++ty;
      if (sx * sy > 0) ++c;
      if (sx * sy < 0) ++d;
    }
  const long double n0 = static_cast<long double>(n) * (n - 1) / 2;
  return static_cast<double>((c - d) / std::sqrt((n0 - tx) * (n0 - ty)));
}

// Average 1-based ranks by counting.
template <class T>
std::vector<long double> average_ranks(const std::vector<T>& x) {
  std::vector<long double> r(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    long double less = 0, equal = 0;
    for (std::size_t j = 0; j < x.size(); ++j) {
      if (x[j] < x[i]) ++less;
      if (x[j] == x[i]) ++equal;
    }
    r[i] = less + (equal + 1) / 2;
  }
  return r;
}

template <class T, class U>
double spearman_rho(const std::vector<T>& x, const std::vector<U>& y) {
  const auto rx = average_ranks(x);
  const auto ry = average_ranks(y);
  const long double n = static_cast<long double>(x.size());
  long double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    mx += rx[i];
    my += ry[i];
  }
  mx /= n;
  my /= n;
  long double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return static_cast<double>(sxy / std::sqrt(sxx * syy));
}

// Vigna's weighted tau, hyperbolic additive weights, ranks by decreasing (a, b)
// lexicographic order (elements tied in both ranked by decreasing index), pairs
// enumerated explicitly.
template <class T, class U>
long double weighted_tau_one(const std::vector<T>& a, const std::vector<U>& b) {
  const std::size_t n = a.size();
  std::vector<long double> w(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t rank = 0;  // number of elements placed before i
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const bool before = a[j] > a[i] || (a[j] == a[i] && (b[j] > b[i] || (b[j] == b[i] && j > i)));
      if (before) ++rank;
    }
    w[i] = 1.0L / (static_cast<long double>(rank) + 1);
  }
  long double num = 0, nx = 0, ny = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      const long double wij = w[i] + w[j];
      const int sx = sgn(a[i], a[j]);
      const int sy = sgn(b[i], b[j]);
      num += sx * sy * wij;
      if (sx != 0) nx += wij;
      if (sy != 0) ny += wij;
    }
  return num / std::sqrt(nx * ny);
}

template <class T, class U>
double weighted_tau(const std::vector<T>& x, const std::vector<U>& y) {
  return static_cast<double>((weighted_tau_one(x, y) + weighted_tau_one(y, x)) / 2);
}

// Random values from a small set so that ties are frequent.
template <class T>
std::vector<T> tied_values(std::mt19937_64& g, std::size_t n, int levels) {
  std::uniform_int_distribution<int> d(0, levels - 1);
  std::vector<T> v(n);
  for (auto& e : v) e = static_cast<T>(d(g)) / static_cast<T>(levels);
  return v;
}

// A random probability vector (softmax of normal logits), as long double.
inline std::vector<double> random_distribution(std::mt19937_64& g, std::size_t n, double scale) {
  std::normal_distribution<double> nd(0.0, scale);
  std::vector<long double> e(n);
  long double s = 0;
  for (auto& v : e) {
    v = std::exp(static_cast<long double>(nd(g)));
    s += v;
  }
  std::vector<double> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<double>(e[i] / s);
  return p;
}

}  // namespace oracle
