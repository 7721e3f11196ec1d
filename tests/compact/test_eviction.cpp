// Eviction baselines (StreamingLLM, H2O, SnapKV, random subset) and the reference
// evaluator on constructed caches whose right answer is known by construction.
#include <algorithm>
#include <set>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include <kvq/compact/budget.hpp>
#include <kvq/compact/eviction.hpp>
#include <kvq/compact/reference.hpp>

#include "data.hpp"

using namespace kvq::compact;
using kvq::matrix_d;
using kvq::matrix_f;
using kvq_test_compact::gaussian_matrix;
using kvq_test_compact::plain_attention;

namespace {

constexpr Eigen::Index kN = 256, kD = 32;

std::vector<token_index> range(token_index a, token_index b) {
  std::vector<token_index> r;
  for (token_index t = a; t < b; ++t) r.push_back(t);
  return r;
}

// Background keys of small norm; `heavy` tokens get key 8 e_dir, so a query with
// component 4 along e_dir scores 32/sqrt(32) = 5.7 on them (~300x a background token).
matrix_f planted_keys(const std::vector<token_index>& heavy, Eigen::Index dir, std::uint64_t seed) {
  matrix_f k = gaussian_matrix(kN, kD, seed, 1, 0.2);
  for (token_index t : heavy) {
    k.row(t).setZero();
    k(t, dir) = 8.0f;
  }
  return k;
}

matrix_f queries_along(Eigen::Index m, Eigen::Index dir, std::uint64_t seed, std::uint64_t stream) {
  matrix_f q = gaussian_matrix(m, kD, seed, stream, 0.1);
  for (Eigen::Index i = 0; i < m; ++i) q(i, dir) += 4.0f;
  return q;
}

}  // namespace

TEST_CASE("budget_from_ratio is floor(n / ratio), at least one token") {
  CHECK(budget_from_ratio(256, 1.0) == 256);
  CHECK(budget_from_ratio(256, 10.0) == 25);
  CHECK(budget_from_ratio(256, 3.0) == 85);
  CHECK(budget_from_ratio(256, 255.5) == 1);
  CHECK_THROWS_AS(budget_from_ratio(256, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(budget_from_ratio(256, -2.0), std::invalid_argument);
  CHECK_THROWS_AS(budget_from_ratio(256, 0.5), std::invalid_argument);
  CHECK_THROWS_WITH(budget_from_ratio(256, 256.0), Catch::Contains("ratio"));
  CHECK_THROWS_AS(budget_from_ratio(256, 1e9), std::invalid_argument);
}

TEST_CASE("StreamingLLM keeps exactly the sink tokens and the recent window") {
  const matrix_f k = gaussian_matrix(kN, kD, 11, 1), v = gaussian_matrix(kN, kD, 11, 2);
  const compaction_result r = streaming_llm(k, v, 20, 4);
  std::vector<token_index> want = range(0, 4);
  for (token_index t : range(kN - 16, kN)) want.push_back(t);
  CHECK(r.kept == want);
  REQUIRE(r.keys.rows() == 20);
  for (Eigen::Index j = 0; j < 20; ++j) {
    CHECK(r.keys.row(j) == k.row(want[static_cast<std::size_t>(j)]));
    CHECK(r.values.row(j) == v.row(want[static_cast<std::size_t>(j)]));
    CHECK(r.beta[static_cast<std::size_t>(j)] == 0.0f);
  }
  CHECK(streaming_llm(k, v, 8, 0).kept == range(kN - 8, kN));
  CHECK(streaming_llm(k, v, 8, 8).kept == range(0, 8));
  CHECK(streaming_llm(k, v, kN, 4).kept == range(0, kN));
}

TEST_CASE("H2O keeps the tokens with the most accumulated attention") {
  const std::vector<token_index> heavy{17, 60, 101, 200, 230};
  const matrix_f k = planted_keys(heavy, 0, 21);
  const matrix_f v = gaussian_matrix(kN, kD, 21, 2);
  const matrix_f q = queries_along(40, 0, 21, 3);
  CHECK(h2o(k, v, q, 5).kept == heavy);
  std::vector<token_index> with_recent = heavy;
  for (token_index t : range(kN - 3, kN)) with_recent.push_back(t);
  CHECK(h2o(k, v, q, 8, 3).kept == with_recent);
}

TEST_CASE("SnapKV follows the observation window, pooled over neighbours") {
  // The first 48 queries attend to tokens 17 and 60 (direction 0); the last 16 (the
  // observation window) to two runs of five tokens, 100..104 and 180..184 (direction 1).
  matrix_f k = planted_keys({17, 60}, 0, 31);
  for (token_index t : range(100, 105)) k.row(t).setZero(), k(t, 1) = 8.0f;
  for (token_index t : range(180, 185)) k.row(t).setZero(), k(t, 1) = 8.0f;
  const matrix_f v = gaussian_matrix(kN, kD, 31, 2);
  matrix_f q(64, kD);
  q.topRows(48) = queries_along(48, 0, 31, 3);
  q.bottomRows(16) = queries_along(16, 1, 31, 4);

  std::vector<token_index> runs = range(100, 105);
  for (token_index t : range(180, 185)) runs.push_back(t);
  snapkv_options avg;
  avg.observation_window = 16;
  avg.kernel = 3;
  avg.pooling = snapkv_pooling::avg;
  // Average pooling (kernel 3): run interiors score 1, run ends 2/3, the tokens next to
  // a run 1/3 (in units of one planted token's vote): the ten run tokens win.
  CHECK(snapkv(k, v, q, 10, avg).kept == runs);
  // H2O over all queries prefers the early heavy hitters (48 queries on 2 tokens).
  CHECK(h2o(k, v, q, 2).kept == std::vector<token_index>{17, 60});

  avg.recent_tokens = 2;
  std::vector<token_index> runs_recent = runs;
  runs_recent.push_back(kN - 2);
  runs_recent.push_back(kN - 1);
  CHECK(snapkv(k, v, q, 12, avg).kept == runs_recent);
}

TEST_CASE("SnapKV max pooling keeps the neighbourhood of an isolated heavy hitter") {
  const matrix_f k = planted_keys({150}, 2, 41);
  const matrix_f v = gaussian_matrix(kN, kD, 41, 2);
  const matrix_f q = queries_along(32, 2, 41, 3);
  snapkv_options mx;
  mx.observation_window = 8;
  mx.kernel = 5;
  mx.pooling = snapkv_pooling::max;
  CHECK(snapkv(k, v, q, 5, mx).kept == range(148, 153));
  mx.kernel = 1;  // no pooling: the hitter itself
  CHECK(snapkv(k, v, q, 1, mx).kept == std::vector<token_index>{150});
}

TEST_CASE("random subset is deterministic in the seed, distinct, ascending and spread out") {
  const Eigen::Index n = 1024;
  const matrix_f k = gaussian_matrix(n, 8, 51, 1), v = gaussian_matrix(n, 8, 51, 2);
  const compaction_result a = random_subset(k, v, 512, 7), b = random_subset(k, v, 512, 7);
  const compaction_result c = random_subset(k, v, 512, 8);
  CHECK(a.kept == b.kept);
  CHECK(a.kept != c.kept);
  REQUIRE(a.kept.size() == 512);
  CHECK(std::is_sorted(a.kept.begin(), a.kept.end()));
  CHECK(std::set<token_index>(a.kept.begin(), a.kept.end()).size() == 512);
  CHECK(a.kept.front() >= 0);
  CHECK(a.kept.back() < n);
  // A uniform half of 1024 tokens has 256 +- 8 (1 sigma, hypergeometric) in the first half.
  const auto first_half = std::count_if(a.kept.begin(), a.kept.end(), [](token_index t) { return t < 512; });
  CHECK(first_half > 256 - 48);
  CHECK(first_half < 256 + 48);
  // Smaller budgets of the same seed are prefixes in draw order: nested subsets.
  const compaction_result small = random_subset(k, v, 100, 7);
  CHECK(std::includes(a.kept.begin(), a.kept.end(), small.kept.begin(), small.kept.end()));
}

TEST_CASE("identity subset with beta = 0 is plain attention, bit for bit") {
  const matrix_f k = gaussian_matrix(kN, kD, 61, 1), v = gaussian_matrix(kN, kD, 61, 2);
  const matrix_f q = gaussian_matrix(8, kD, 61, 3, 1.5);
  const compaction_result all = streaming_llm(k, v, kN, 0);  // every token, beta = 0
  REQUIRE(all.kept == range(0, kN));
  const matrix_d o = compacted_attention(q, all);
  const matrix_d w = effective_weights(q, all, kN);
  for (Eigen::Index i = 0; i < q.rows(); ++i) {
    std::vector<double> pw;
    const std::vector<double> ref = plain_attention(k, v, q.row(i).data(), {}, &pw);
    for (Eigen::Index c = 0; c < kD; ++c) CHECK(o(i, c) == ref[static_cast<std::size_t>(c)]);
    for (Eigen::Index t = 0; t < kN; ++t) CHECK(w(i, t) == pw[static_cast<std::size_t>(t)]);
  }
}

TEST_CASE("biased attention over a subset, and its weights scattered onto the original tokens") {
  const matrix_f k = gaussian_matrix(kN, kD, 71, 1), v = gaussian_matrix(kN, kD, 71, 2);
  const matrix_f q = gaussian_matrix(4, kD, 71, 3, 1.5);
  compaction_result r = random_subset(k, v, 30, 3);
  for (std::size_t j = 0; j < r.beta.size(); ++j) r.beta[j] = 0.25f * static_cast<float>(j % 5) - 0.5f;
  const matrix_d o = compacted_attention(q, r);
  const matrix_d w = effective_weights(q, r, kN);
  const std::set<token_index> kept(r.kept.begin(), r.kept.end());
  for (Eigen::Index i = 0; i < q.rows(); ++i) {
    std::vector<double> pw;
    const std::vector<double> ref = plain_attention(r.keys, r.values, q.row(i).data(), r.beta, &pw);
    for (Eigen::Index c = 0; c < kD; ++c) CHECK(o(i, c) == ref[static_cast<std::size_t>(c)]);
    for (Eigen::Index t = 0; t < kN; ++t)
      if (!kept.count(t)) CHECK(w(i, t) == 0.0);
    for (std::size_t j = 0; j < r.kept.size(); ++j) CHECK(w(i, r.kept[j]) == pw[j]);
  }
}

TEST_CASE("eviction baselines reject bad input, naming the problem") {
  const matrix_f k = gaussian_matrix(64, 16, 81, 1), v = gaussian_matrix(64, 16, 81, 2);
  const matrix_f q = gaussian_matrix(8, 16, 81, 3);
  CHECK_THROWS_WITH(streaming_llm(k, v, 0), Catch::Contains("budget"));
  CHECK_THROWS_WITH(streaming_llm(k, v, 65), Catch::Contains("budget"));
  CHECK_THROWS_WITH(streaming_llm(k, v, 4, 5), Catch::Contains("sink"));
  CHECK_THROWS_WITH(streaming_llm(k, matrix_f(63, 16), 4), Catch::Contains("tokens"));
  CHECK_THROWS_WITH(streaming_llm(k, matrix_f(64, 8), 4), Catch::Contains("head_dim"));
  CHECK_THROWS_WITH(h2o(k, v, matrix_f(8, 15), 4), Catch::Contains("head_dim"));
  CHECK_THROWS_WITH(h2o(k, v, matrix_f(0, 16), 4), Catch::Contains("reference queries"));
  CHECK_THROWS_WITH(h2o(k, v, q, 4, 5), Catch::Contains("recent"));
  snapkv_options o;
  o.observation_window = 9;
  CHECK_THROWS_WITH(snapkv(k, v, q, 4, o), Catch::Contains("reference queries"));
  o.observation_window = 4;
  o.kernel = 4;
  CHECK_THROWS_WITH(snapkv(k, v, q, 4, o), Catch::Contains("kernel"));
  CHECK_THROWS_WITH(random_subset(k, v, -1, 1), Catch::Contains("budget"));
  CHECK_THROWS_WITH(streaming_llm(matrix_f(0, 16), matrix_f(0, 16), 1), Catch::Contains("no tokens"));
}
