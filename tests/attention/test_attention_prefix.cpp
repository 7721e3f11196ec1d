// run_prefix(q, keys, ...): attention over the first `keys` tokens (causal attention of a
// query at position keys - 1), on K/V prepared once for all n tokens. Where the
// preparation is row-local (no codec, fp32 or bf16 math, a Hadamard rotation, FP8 with a
// per-tensor descale of 1, per-key biases), a path built on the first `keys` rows alone
// must give the same bits; a prefix shorter than 2 or longer than n is refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include <kvq/attention.hpp>
#include <kvq/inject.hpp>

using namespace kvq::attention;
using kvq::matrix_f;

namespace {

kvq::inject::qkv make(std::size_t n, std::size_t d, std::size_t nq) {
  kvq::inject::qkv_config c;
  c.tokens = n;
  c.head_dim = d;
  c.queries = nq;
  c.seed = 19;
  return kvq::inject::generate_qkv(c);
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// The same bits, or NaN in both (a NaN's payload is the hardware's choice).
template <class T>
bool same_bits_or_nan(const T* a, const T* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0 && !(a[i] != a[i] && b[i] != b[i])) return false;
  return true;
}

matrix_f top(const matrix_f& m, std::size_t rows) { return m.topRows(static_cast<Eigen::Index>(rows)); }

// Runs path `full` with run_prefix(keys) and `cut` (built on the first keys rows) with
// run(), for every query, and compares weights and outputs bit for bit.
template <class Path, class Out>
void check_same(const Path& full, const Path& cut, const matrix_f& Q, std::size_t keys, std::size_t d) {
  workspace w1, w2;
  for (Eigen::Index r = 0; r < Q.rows(); ++r) {
    std::vector<double> p1(keys), p2(keys);
    std::vector<Out> o1(d), o2(d);
    full.run_prefix(&Q(r, 0), keys, p1.data(), o1.data(), w1);
    cut.run(&Q(r, 0), p2.data(), o2.data(), w2);
    CHECK(same_bits(p1, p2));
    CHECK(same_bits(o1, o2));
  }
}

}  // namespace

TEST_CASE("run_prefix equals the path built on the prefix", "[attention][prefix]") {
  const std::size_t n = 80, d = 32;
  const auto x = make(n, d, 3);
  const matrix_f &Q = x.q[0], &K = x.k[0], &V = x.v[0];
  std::vector<float> bias(n);
  for (std::size_t t = 0; t < n; ++t) bias[t] = static_cast<float>(t % 7) * 0.25f - 0.5f;
  for (std::size_t keys : {std::size_t{2}, std::size_t{37}, std::size_t{64}, n}) {
    INFO("keys " << keys);
    check_same<reference_attention, double>(reference_attention(K, V), reference_attention(top(K, keys), top(V, keys)),
                                            Q, keys, d);
    check_same<reference_attention, double>(
        reference_attention(K, V, bias),
        reference_attention(top(K, keys), top(V, keys), std::vector<float>(bias.begin(), bias.begin() + keys)), Q,
        keys, d);
    for (int mode = 0; mode < 3; ++mode) {
      storage_options so;
      so.bf16_math = mode == 1;
      so.hadamard = mode == 2;
      check_same<storage_attention, float>(storage_attention(K, V, so), storage_attention(top(K, keys), top(V, keys), so),
                                           Q, keys, d);
    }
    for (bool reverse : {false, true}) {
      fa3_options fo;
      fo.block_n = 16;  // 37 keys: a partial last block
      fo.reverse = reverse;
      check_same<fa3_fp8_attention<>, float>(fa3_fp8_attention<>(K, V, fo),
                                             fa3_fp8_attention<>(top(K, keys), top(V, keys), fo), Q, keys, d);
    }
  }
}

TEST_CASE("run_prefix differs from run when keys are left out", "[attention][prefix]") {
  const auto x = make(40, 16, 1);
  const reference_attention ref(x.k[0], x.v[0]);
  workspace ws;
  std::vector<double> p(40), o1(16), o2(16);
  ref.run(x.q[0].data(), p.data(), o1.data(), ws);
  ref.run_prefix(x.q[0].data(), 20, p.data(), o2.data(), ws);
  CHECK_FALSE(same_bits(o1, o2));
}

TEST_CASE("run_prefix refuses a prefix of fewer than 2 or more than n keys", "[attention][prefix]") {
  const auto x = make(10, 8, 1);
  const reference_attention ref(x.k[0], x.v[0]);
  const storage_attention st(x.k[0], x.v[0], storage_options{});
  const fa3_fp8_attention<> fa(x.k[0], x.v[0], fa3_options{});
  workspace ws;
  std::vector<double> p(11), od(8);
  std::vector<float> of(8);
  for (std::size_t keys : {std::size_t{0}, std::size_t{1}, std::size_t{11}}) {
    CHECK_THROWS_AS(ref.run_prefix(x.q[0].data(), keys, p.data(), od.data(), ws), std::invalid_argument);
    CHECK_THROWS_AS(st.run_prefix(x.q[0].data(), keys, p.data(), of.data(), ws), std::invalid_argument);
    CHECK_THROWS_AS(fa.run_prefix(x.q[0].data(), keys, p.data(), of.data(), ws), std::invalid_argument);
  }
  CHECK_THROWS_WITH(ref.run_prefix(x.q[0].data(), 1, p.data(), od.data(), ws),
                    Catch::Contains("prefix of 1 keys (allowed: 2 to the 10 tokens)"));
}

// run_prefix_batch against run_prefix query by query: every storage option, key counts
// that differ per query (2, odd, even, n), groups beyond query_group, strides above the
// minimum, and a NaN in K (a query whose scores and outputs are not finite).
TEST_CASE("run_prefix_batch gives each query's run_prefix bits (storage and reference)", "[attention][prefix]") {
  const std::size_t n = 97, d = 32;
  const std::size_t nq = storage_attention::query_group + 3;
  const auto x = make(n, d, nq);
  const matrix_f &Q = x.q[0], &V = x.v[0];
  matrix_f K = x.k[0];
  std::vector<float> bias(n);
  for (std::size_t t = 0; t < n; ++t) bias[t] = static_cast<float>(t % 5) * 0.5f - 1.0f;
  // A value-changing transform (a stand-in codec): three significant bits per element.
  const kv_transform coarse = [](const matrix_f& m) {
    matrix_f r = m;
    for (Eigen::Index i = 0; i < r.size(); ++i) {
      int e = 0;
      const float f = std::frexp(r.data()[i], &e);
      r.data()[i] = std::ldexp(std::round(f * 8.0f) / 8.0f, e);
    }
    return r;
  };
  std::vector<std::size_t> keys(nq);
  for (std::size_t v = 0; v < nq; ++v) keys[v] = v == 0 ? 2 : v == 1 ? n : 2 + (v * 37) % (n - 1);
  for (int mode = 0; mode < 7; ++mode) {
    if (mode == 6) K(5, 3) = std::numeric_limits<float>::quiet_NaN();
    storage_options so;
    so.bf16_math = mode == 1 || mode == 5;
    so.hadamard = mode == 2 || mode == 5;
    if (mode == 3) so.q_codec = coarse;
    if (mode >= 3) so.codec.k = so.codec.v = coarse;
    if (mode == 4 || mode == 5) so.bias = bias;
    const storage_attention att(K, V, so);
    const std::size_t p_stride = n + 3, o_stride = d + 1;
    std::vector<double> pb(nq * p_stride, -1.0);
    std::vector<float> ob(nq * o_stride, -1.0f);
    std::vector<query_status> st(nq);
    workspace wb, w1;
    att.run_prefix_batch(Q.data(), d, nq, keys.data(), pb.data(), p_stride, ob.data(), o_stride, st.data(), wb);
    for (std::size_t v = 0; v < nq; ++v) {
      std::vector<double> p1(keys[v]);
      std::vector<float> o1(d);
      const query_status s1 = att.run_prefix(&Q(static_cast<Eigen::Index>(v), 0), keys[v], p1.data(), o1.data(), w1);
      INFO("mode " << mode << ", query " << v << ", keys " << keys[v]);
      CHECK(same_bits_or_nan(p1.data(), pb.data() + v * p_stride, keys[v]));
      CHECK(same_bits_or_nan(o1.data(), ob.data() + v * o_stride, d));
      CHECK(s1.nonfinite_scores == st[v].nonfinite_scores);
      CHECK(s1.nonfinite_output == st[v].nonfinite_output);
      // Nothing written past a query's weights and outputs.
      for (std::size_t t = keys[v]; t < p_stride; ++t) CHECK(pb[v * p_stride + t] == -1.0);
      CHECK(ob[v * o_stride + d] == -1.0f);
    }
    if (mode == 6) CHECK(st[nq - 1].nonfinite_scores);
    // The reference path on the same keys and values, with and without biases.
    if (mode == 0 || mode == 4 || mode == 6) {
      const reference_attention ref(K, V, mode == 4 ? bias : std::vector<float>{});
      std::vector<double> pr(nq * p_stride, -1.0), orf(nq * o_stride, -1.0);
      ref.run_prefix_batch(Q.data(), d, nq, keys.data(), pr.data(), p_stride, orf.data(), o_stride, st.data(), wb);
      for (std::size_t v = 0; v < nq; ++v) {
        std::vector<double> p1(keys[v]), o1(d);
        const query_status s1 = ref.run_prefix(&Q(static_cast<Eigen::Index>(v), 0), keys[v], p1.data(), o1.data(), w1);
        INFO("reference, mode " << mode << ", query " << v << ", keys " << keys[v]);
        CHECK(same_bits_or_nan(p1.data(), pr.data() + v * p_stride, keys[v]));
        CHECK(same_bits_or_nan(o1.data(), orf.data() + v * o_stride, d));
        CHECK(s1.nonfinite_scores == st[v].nonfinite_scores);
        CHECK(s1.nonfinite_output == st[v].nonfinite_output);
        for (std::size_t t = keys[v]; t < p_stride; ++t) CHECK(pr[v * p_stride + t] == -1.0);
        CHECK(orf[v * o_stride + d] == -1.0);
      }
    }
  }
}

TEST_CASE("run_prefix_batch refuses bad key counts and short strides", "[attention][prefix]") {
  const auto x = make(10, 8, 2);
  const storage_attention st(x.k[0], x.v[0], storage_options{});
  workspace ws;
  std::vector<double> p(40);
  std::vector<float> o(40);
  std::vector<query_status> s(2);
  std::size_t keys[2] = {10, 1};
  CHECK_THROWS_WITH(st.run_prefix_batch(x.q[0].data(), 8, 2, keys, p.data(), 10, o.data(), 8, s.data(), ws),
                    Catch::Contains("prefix of 1 keys (allowed: 2 to the 10 tokens)"));
  keys[1] = 11;
  CHECK_THROWS_AS(st.run_prefix_batch(x.q[0].data(), 8, 2, keys, p.data(), 11, o.data(), 8, s.data(), ws),
                  std::invalid_argument);
  keys[1] = 6;
  CHECK_THROWS_WITH(st.run_prefix_batch(x.q[0].data(), 8, 2, keys, p.data(), 9, o.data(), 8, s.data(), ws),
                    Catch::Contains("p_stride 9 is below the 10 weights of query 0"));
  CHECK_THROWS_WITH(st.run_prefix_batch(x.q[0].data(), 8, 2, keys, p.data(), 10, o.data(), 7, s.data(), ws),
                    Catch::Contains("o_stride 7 is below head_dim 8"));
  CHECK_NOTHROW(st.run_prefix_batch(x.q[0].data(), 8, 2, keys, p.data(), 10, o.data(), 8, s.data(), ws));
  const reference_attention ref(x.k[0], x.v[0]);
  std::vector<double> od(40);
  CHECK_THROWS_WITH(ref.run_prefix_batch(x.q[0].data(), 8, 2, keys, p.data(), 9, od.data(), 8, s.data(), ws),
                    Catch::Contains("p_stride 9 is below the 10 weights of query 0"));
  keys[0] = 0;
  CHECK_THROWS_WITH(ref.run_prefix_batch(x.q[0].data(), 8, 2, keys, p.data(), 10, od.data(), 8, s.data(), ws),
                    Catch::Contains("prefix of 0 keys"));
}

// set_keys must leave the object as a fresh construction from the new keys would: the
// stored keys and every query's weights and outputs, for each storage option.
TEST_CASE("storage_attention::set_keys equals constructing from the new keys", "[attention][prefix]") {
  const std::size_t n = 40, d = 16;
  const auto x = make(n, d, 3);
  const auto y = make(n, d, 1);
  const matrix_f &Q = x.q[0], &V = x.v[0];
  matrix_f K2 = y.k[0];
  K2(3, 2) = 40.0f;  // an outlier: the codec's scales change
  const kv_transform coarse = [](const matrix_f& m) {
    matrix_f r = m;
    for (Eigen::Index i = 0; i < r.size(); ++i) r.data()[i] = std::round(r.data()[i] * 4.0f) / 4.0f;
    return r;
  };
  std::vector<float> bias(n, 0.25f);
  for (int mode = 0; mode < 4; ++mode) {
    storage_options so;
    so.bf16_math = mode == 1;
    so.hadamard = mode == 2;
    if (mode == 3) so.codec.k = so.codec.v = coarse, so.bias = bias;
    storage_attention changed(x.k[0], V, so);
    changed.set_keys(K2);
    const storage_attention fresh(K2, V, so);
    INFO("mode " << mode);
    CHECK(std::memcmp(changed.keys().data(), fresh.keys().data(), n * d * sizeof(float)) == 0);
    CHECK(std::memcmp(changed.values().data(), fresh.values().data(), n * d * sizeof(float)) == 0);
    workspace w1, w2;
    for (Eigen::Index r = 0; r < Q.rows(); ++r) {
      std::vector<double> p1(n), p2(n);
      std::vector<float> o1(d), o2(d);
      changed.run(&Q(r, 0), p1.data(), o1.data(), w1);
      fresh.run(&Q(r, 0), p2.data(), o2.data(), w2);
      CHECK(same_bits(p1, p2));
      CHECK(same_bits(o1, o2));
    }
  }
  storage_attention st(x.k[0], V, storage_options{});
  CHECK_THROWS_WITH(st.set_keys(x.k[0].topRows(20)), Catch::Contains("mismatched shapes"));
}
