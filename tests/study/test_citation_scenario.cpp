// kvq/study/citation_scenario.hpp's per-length seeds: the scenario's draws are
// counter-based (keyed by the seed and the token index), so two lengths built from one
// seed share their first keys; lab::context_seed must give every length its own keys.
// The oracle is the scenario itself: with the shared seed the 1024-token context's first
// keys equal the 512-token one's bit for bit (shown below), with context_seed they do not.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include <kvq/inject/scenario.hpp>
#include <kvq/study/citation_scenario.hpp>

namespace {
// The number of rows among the first `rows` that are equal in both key matrices.
std::size_t equal_rows(const kvq::matrix_f& a, const kvq::matrix_f& b, std::size_t rows) {
  std::size_t eq = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    bool same = true;
    for (Eigen::Index c = 0; c < a.cols(); ++c)
      if (a(static_cast<Eigen::Index>(r), c) != b(static_cast<Eigen::Index>(r), c)) same = false;
    eq += same;
  }
  return eq;
}
kvq::matrix_f keys(std::size_t n, std::uint64_t seed) {
  const auto sc = kvq::study::lab::citation_scenario(n, 4, 32, seed, 10.0, 8.0, 4, -0.5, 1.5, 0);
  return kvq::inject::build_scenario(sc).data.k[0];
}
}  // namespace

TEST_CASE("context_seed gives every context length its own keys") {
  // The shared seed (the seed rule before the per-length streams): most of the first 512
  // keys of the 1024-token context are the 512-token context's (the spans sit at other
  // positions, so a few rows differ).
  const std::uint64_t shared = 1 * 1000003ull + 0;
  CHECK(equal_rows(keys(512, shared), keys(1024, shared), 512) > 400);
  // Per-length seeds: no key row in common.
  using kvq::study::lab::context_seed;
  CHECK(equal_rows(keys(512, context_seed(1, 0, 512)), keys(1024, context_seed(1, 0, 1024)), 512) == 0);
  // Distinct (seed, index, length) give distinct seeds (the mixer is a bijection; a
  // collision here would mean a broken mixer).
  std::set<std::uint64_t> seen;
  for (std::uint64_t s = 0; s < 4; ++s)
    for (std::uint64_t i = 0; i < 16; ++i)
      for (std::uint64_t n : {4096ull, 16384ull, 32768ull, 65536ull, 131072ull}) seen.insert(context_seed(s, i, n));
  CHECK(seen.size() == 4u * 16u * 5u);
  // splitmix64's published first output for state 0 (Vigna's splitmix64.c: the state is
  // advanced by the golden gamma before mixing): 0xE220A8397B1DCDAF.
  CHECK(kvq::study::lab::mix_seed(0) == 0xE220A8397B1DCDAFull);
}

// lab::span_rank against the definition counted out for every span token: the best
// (smallest) 1-based position in the order by decreasing weight, lower index first among
// equal weights. Weights drawn from a few values (many ties), spans of 1 to 6 tokens,
// some with a NaN weight (rank 1 by the per-token rule: nothing compares above a NaN).
TEST_CASE("span_rank is the best position over the span, ties and NaN included") {
  std::uint64_t state = 12345;
  auto next = [&state]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::size_t>(state >> 33);
  };
  const double levels[] = {0.0, 0.125, 0.25, 0.25, 0.5, 1.0, -0.0};
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t n = 1 + next() % 40;
    std::vector<double> p(n);
    for (double& v : p) v = levels[next() % 7];
    if (trial % 10 == 0) p[next() % n] = std::nan("");
    std::vector<std::size_t> span(1 + next() % 6);
    for (std::size_t& t : span) t = next() % n;
    std::size_t want = n + 1;
    for (std::size_t t : span) {
      std::size_t pos = 1;
      for (std::size_t i = 0; i < n; ++i)
        if (p[i] > p[t] || (p[i] == p[t] && i < t)) ++pos;
      want = std::min(want, pos);
    }
    INFO("trial " << trial);
    CHECK(kvq::study::lab::span_rank(p.data(), n, span) == want);
  }
}

// lab::span_ranks_reference_batch / span_ranks_fp32_batch (ranks from the logits where
// they decide, the weights otherwise) against span_rank of the weights the batched
// kernels compute, on the citation scenario (every query's own span, and spans of keys
// with tied or few-ulp-apart logits and keys of tiny weight, which must take the weights).
TEST_CASE("the span ranks from logits equal span_rank of the weights, decided or not") {
  const std::size_t n = 2048, nq = 24, hd = 64;
  const auto sc = kvq::study::lab::citation_scenario(n, nq, hd, 99, 10.0, 8.0, 4, -0.5, 1.5, 0);
  const kvq::inject::scenario built = kvq::inject::build_scenario(sc);
  kvq::matrix_f K = built.data.k[0];
  const kvq::matrix_f& Q = built.data.q[0];
  // Keys 100 and 101 copy key 50 (equal logits for every query); key 102 is key 50 with
  // every channel one ulp away (logits a few ulps apart).
  for (Eigen::Index c = 0; c < K.cols(); ++c) {
    K(100, c) = K(101, c) = K(50, c);
    K(102, c) = std::nextafter(K(50, c), 1e30f);
  }
  std::vector<std::vector<std::size_t>> spans(nq);
  for (std::size_t q = 0; q < nq; ++q) {
    spans[q] = built.needle_tokens(0, q);
    if (q % 3 == 1) spans[q] = {101, 100};
    if (q % 3 == 2) spans[q] = {50};
    if (q % 4 == 3) {  // a key pointing away from the query: a weight far below 2^-1000
      spans[q] = {200 + q};
      for (Eigen::Index c = 0; c < K.cols(); ++c)
        K(static_cast<Eigen::Index>(200 + q), c) = -1000.0f * Q(static_cast<Eigen::Index>(q), c);
    }
  }
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  std::vector<double> p(nq * n), p_row(n), pw(nq * n);
  std::vector<float> s(nq * n), sw(nq * n);
  std::vector<std::size_t> ref_rank(nq), emu_rank(nq);
  const std::size_t ref_computed =
      kvq::study::lab::span_ranks_reference_batch(Q.data(), nq, K, spans.data(), p.data(), ref_rank.data());
  const std::size_t emu_computed = kvq::study::lab::span_ranks_fp32_batch(Q.data(), nq, K, scale, spans.data(),
                                                                          s.data(), p_row.data(), emu_rank.data());
  kvq::study::lab::weights_reference_batch(Q.data(), nq, K, pw.data());
  for (std::size_t q = 0; q < nq; ++q) {
    INFO("query " << q);
    CHECK(ref_rank[q] == kvq::study::lab::span_rank(pw.data() + q * n, n, spans[q]));
  }
  kvq::study::lab::weights_fp32_batch(Q.data(), nq, K, scale, sw.data(), pw.data());
  for (std::size_t q = 0; q < nq; ++q) {
    INFO("query " << q);
    CHECK(emu_rank[q] == kvq::study::lab::span_rank(pw.data() + q * n, n, spans[q]));
  }
  // The shortcut decides the ordinary queries; the near tie (key 102 next to 50 and its
  // copies: a few fp32 ulps, far apart in double) and the tiny weights send the queries
  // ranking those keys to the weights.
  CHECK(ref_computed >= nq / 4);
  CHECK(ref_computed < nq);
  CHECK(emu_computed >= (nq / 3) * 2);
  CHECK(emu_computed < nq);
}

// lab::logit_screen: one float screen of the queries on the original keys gives the
// reference ranks and the fp32 ranks on keys near the originals (bf16-rounded keys, some
// rows moved far: those take exact logits), the same as span_rank of the weights the
// batched kernels compute on those keys; keys far from the originals are refused (false,
// nothing written). The screen inject_needles keeps gives the same ranks.
TEST_CASE("the span ranks from one shared screen equal span_rank of the weights") {
  const std::size_t n = 2048, nq = 24, hd = 64;
  auto sc = kvq::study::lab::citation_scenario(n, nq, hd, 7, 10.0, 8.0, 4, -0.5, 1.5, 0);
  sc.needle_keep_screen = true;
  kvq::inject::scenario built = kvq::inject::build_scenario(sc);
  const kvq::matrix_f& K = built.data.k[0];
  const kvq::matrix_f& Q = built.data.q[0];
  std::vector<std::vector<std::size_t>> spans(nq);
  for (std::size_t q = 0; q < nq; ++q) spans[q] = built.needle_tokens(0, q);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  std::vector<double> p_row(n), pw(nq * n);
  std::vector<float> s_row(n), sw(nq * n);

  REQUIRE(built.heads[0].needles.screen.size() == nq * n);
  const kvq::study::lab::logit_screen from_needles =
      kvq::study::lab::screen_from_needles(Q.data(), nq, K, scale, built.heads[0].needles);
  REQUIRE(from_needles.x.size() == nq * n);
  CHECK(built.heads[0].needles.screen.empty());  // moved out
  const kvq::study::lab::logit_screen direct = kvq::study::lab::screen_logits(Q.data(), nq, K, scale);

  kvq::study::lab::weights_reference_batch(Q.data(), nq, K, pw.data());
  for (const kvq::study::lab::logit_screen* scr : {&direct, &from_needles}) {
    std::vector<std::size_t> ranks(nq, 0);
    kvq::study::lab::span_ranks_reference_screened(Q.data(), *scr, K, spans.data(), p_row.data(), ranks.data());
    for (std::size_t q = 0; q < nq; ++q) {
      INFO("reference, query " << q << (scr == &direct ? " (own screen)" : " (needles' screen)"));
      CHECK(ranks[q] == kvq::study::lab::span_rank(pw.data() + q * n, n, spans[q]));
    }
  }

  // bf16 keys, with 5 rows moved far (among them a span key and the sink): exact logits.
  kvq::matrix_f Kh = K;
  for (Eigen::Index i = 0; i < Kh.size(); ++i) Kh.data()[i] = kvq::round_bf16(Kh.data()[i]);
  const std::size_t moved[] = {0, 3, 17, spans[5][1], 1500};
  for (std::size_t r : moved)
    for (Eigen::Index c = 0; c < Kh.cols(); ++c) Kh(static_cast<Eigen::Index>(r), c) *= 1.75f;
  double khmax = -1;
  const std::vector<double> dist = kvq::study::lab::key_distance_bounds(K, Kh, &khmax);
  CHECK(khmax == kvq::study::lab::key_norm_bound(Kh));
  for (std::size_t r : moved) CHECK(dist[r] > 10 * dist[1]);
  // round_trip_keys: a scheme's round trip with the same distances, range by range.
  for (const char* name : {"fp8_e4m3", "nvfp4_te", "kivi_int4"}) {
    INFO(name);
    const auto& s = kvq::study::scheme_named(name);
    kvq::matrix_f Kr(K.rows(), K.cols()), Kw(K.rows(), K.cols());
    double rmax = -1, wmax = -1;
    const std::vector<double> rdist = kvq::study::lab::round_trip_keys(s, K, Kr, &rmax);
    s.round_trip(kvq::kv::kv_role::key, K.data(), Kw.data(), static_cast<std::size_t>(K.rows()),
                 static_cast<std::size_t>(K.cols()));
    CHECK(std::memcmp(Kr.data(), Kw.data(), sizeof(float) * static_cast<std::size_t>(K.size())) == 0);
    CHECK(rdist == kvq::study::lab::key_distance_bounds(K, Kw, &wmax));
    CHECK(rmax == wmax);
  }
  kvq::study::lab::weights_fp32_batch(Q.data(), nq, Kh, scale, sw.data(), pw.data());
  for (const kvq::study::lab::logit_screen* scr : {&direct, &from_needles}) {
    std::vector<std::size_t> ranks(nq, 0);
    REQUIRE(kvq::study::lab::span_ranks_fp32_from_screen(Q.data(), *scr, Kh, kvq::study::lab::key_norm_bound(Kh),
                                                         dist, spans.data(), s_row.data(), p_row.data(),
                                                         ranks.data()));
    for (std::size_t q = 0; q < nq; ++q) {
      INFO("bf16 keys, query " << q << (scr == &direct ? " (own screen)" : " (needles' screen)"));
      CHECK(ranks[q] == kvq::study::lab::span_rank(pw.data() + q * n, n, spans[q]));
    }
  }

  // Keys far from the originals everywhere: refused, nothing written.
  kvq::matrix_f Kf = K;
  for (Eigen::Index i = 0; i < Kf.size(); ++i) Kf.data()[i] = Kf.data()[i] * 0.5f + (i % 7 == 0 ? 3.0f : -1.0f);
  std::vector<std::size_t> untouched(nq, 99);
  CHECK_FALSE(kvq::study::lab::span_ranks_fp32_from_screen(
      Q.data(), direct, Kf, kvq::study::lab::key_norm_bound(Kf), kvq::study::lab::key_distance_bounds(K, Kf),
      spans.data(), s_row.data(), p_row.data(), untouched.data()));
  CHECK(std::count(untouched.begin(), untouched.end(), std::size_t(99)) == static_cast<std::ptrdiff_t>(nq));

  // Without keep_screen (or with the background means) inject_needles keeps none.
  sc.needle_keep_screen = false;
  CHECK(kvq::inject::build_scenario(sc).heads[0].needles.screen.empty());
  sc.needle_keep_screen = true;
  sc.needle_background_means = true;
  CHECK(kvq::inject::build_scenario(sc).heads[0].needles.screen.empty());
}
