// Physics sanity that any correct emulator shows (issue: "Tests"):
//  - bf16 storage gives near-zero distortion;
//  - e5m2 distorts more than e4m3 on in-range data;
//  - per-tensor fp8 with scale 1.0 saturates when K outliers exceed 448 (and a Hadamard
//    rotation, spreading the outlier, avoids it);
//  - a larger sink gap Delta makes FP8 P-casting flush more of the remaining P to zero
//    (and S = 256 flushes less than S = 1).
// The distortion measures are computed here directly (total variation, argmax).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include <kvq/attention.hpp>
#include <kvq/inject.hpp>

using namespace kvq::attention;
namespace ki = kvq::inject;

namespace {

struct distortion {
  double mean_tv = 0, max_tv = 0, mean_out_rel = 0;
  std::size_t argmax_flips = 0, queries = 0;
};

template <class Emu>
distortion measure(const reference_attention& ref, const Emu& emu, const matrix_f& Q) {
  distortion d;
  compare(ref, emu, Q, [&](const query_result& r) {
    double tv = 0;
    std::size_t am_r = 0, am_e = 0;
    for (std::size_t t = 0; t < r.tokens; ++t) {
      tv += std::fabs(r.p_ref[t] - r.p_emu[t]);
      if (r.p_ref[t] > r.p_ref[am_r]) am_r = t;
      if (r.p_emu[t] > r.p_emu[am_e]) am_e = t;
    }
    tv *= 0.5;
    double num = 0, den = 0;
    for (std::size_t j = 0; j < r.head_dim; ++j) {
      num += (r.o_emu[j] - r.o_ref[j]) * (r.o_emu[j] - r.o_ref[j]);
      den += r.o_ref[j] * r.o_ref[j];
    }
    d.mean_tv += tv;
    d.max_tv = std::max(d.max_tv, tv);
    d.mean_out_rel += std::sqrt(num / den);
    d.argmax_flips += am_r != am_e;
    ++d.queries;
  });
  d.mean_tv /= static_cast<double>(d.queries);
  d.mean_out_rel /= static_cast<double>(d.queries);
  return d;
}

ki::qkv gaussian(std::size_t n, std::size_t d, std::size_t nq, std::uint64_t seed, double kstd = 1.0) {
  ki::qkv_config c;
  c.tokens = n;
  c.head_dim = d;
  c.queries = nq;
  c.seed = seed;
  c.k_std = kstd;
  return ki::generate_qkv(c);
}

storage_attention storage(const ki::qkv& x, kv_codec codec, bool hadamard = false) {
  storage_options o;
  o.codec = std::move(codec);
  o.hadamard = hadamard;
  return storage_attention(x.k[0], x.v[0], o);
}

}  // namespace

TEST_CASE("bf16 storage gives near-zero distortion", "[attention][physics][quick]") {
  const auto x = gaussian(2048, 128, 16, 1, 2.0);
  reference_attention ref(x.k[0], x.v[0]);
  const distortion b = measure(ref, storage(x, bf16_codec()), x.q[0]);
  const distortion e = measure(ref, storage(x, per_tensor_codec<kvq::fmt::e4m3>()), x.q[0]);
  INFO("bf16: mean TV " << b.mean_tv << ", output rel " << b.mean_out_rel << "; e4m3: mean TV " << e.mean_tv);
  CHECK(b.max_tv < 5e-3);
  CHECK(b.mean_out_rel < 5e-3);
  CHECK(b.argmax_flips == 0);
  CHECK(b.mean_tv * 8 < e.mean_tv);  // an order of magnitude below FP8
}

TEST_CASE("e5m2 distorts more than e4m3 on in-range data", "[attention][physics][quick]") {
  for (double kstd : {0.5, 1.0, 3.0}) {
    const auto x = gaussian(2048, 128, 16, 2, kstd);
    REQUIRE(x.k[0].cwiseAbs().maxCoeff() < 448.0f);  // in range of both formats
    reference_attention ref(x.k[0], x.v[0]);
    const distortion e4 = measure(ref, storage(x, per_tensor_codec<kvq::fmt::e4m3>()), x.q[0]);
    const distortion e5 = measure(ref, storage(x, per_tensor_codec<kvq::fmt::e5m2>()), x.q[0]);
    INFO("k std " << kstd << ": e4m3 mean TV " << e4.mean_tv << ", e5m2 mean TV " << e5.mean_tv);
    CHECK(e5.mean_tv > 1.5 * e4.mean_tv);
    CHECK(e5.mean_out_rel > e4.mean_out_rel);
  }
}

TEST_CASE("per-tensor fp8 with scale 1.0 saturates when K outliers exceed 448", "[attention][physics][quick]") {
  for (float gain : {40.0f, 300.0f}) {
    auto x = gaussian(2048, 128, 16, 3);
    ki::channel_outlier_config oc;
    oc.channels = {5, 77};
    oc.gain = gain;
    const auto rec = ki::inject_channel_outliers(x.k[0], oc);
    const bool beyond = rec.max_abs > 448.0f;
    CHECK(beyond == (gain == 300.0f));
    reference_attention ref(x.k[0], x.v[0]);
    const storage_attention st = storage(x, per_tensor_codec<kvq::fmt::e4m3>(1.0f, 1.0f));
    const float kmax = st.keys().cwiseAbs().maxCoeff();
    std::size_t clipped = 0;
    for (Eigen::Index i = 0; i < x.k[0].size(); ++i)
      clipped += std::fabs(x.k[0].data()[i]) > 464.0f ? 1 : 0;  // beyond 448's rounding range
    const distortion plain = measure(ref, st, x.q[0]);
    const distortion rotated = measure(ref, storage(x, per_tensor_codec<kvq::fmt::e4m3>(), true), x.q[0]);
    INFO("gain " << gain << ": max |K| " << rec.max_abs << ", stored max " << kmax << ", clipped " << clipped
                 << ", mean TV " << plain.mean_tv << " (Hadamard " << rotated.mean_tv << ")");
    if (beyond) {
      CHECK(kmax == 448.0f);
      CHECK(clipped > 0);
      for (Eigen::Index i = 0; i < x.k[0].size(); ++i)
        if (std::fabs(x.k[0].data()[i]) > 464.0f) CHECK(std::fabs(st.keys().data()[i]) == 448.0f);
      // saturation distorts badly; spreading the outlier with Hadamard avoids the clip
      CHECK(plain.mean_tv > 0.05);
      CHECK(rotated.mean_tv < 0.5 * plain.mean_tv);
    } else {
      CHECK(kmax < 448.0f);
      CHECK(clipped == 0);
    }
  }
}

TEST_CASE("a larger sink gap makes FP8 P-casting flush more of the remaining P to zero", "[attention][physics][quick]") {
  // P8 = e4m3(2^max_offset * exp(s - m)) is zero once s - m < -(max_offset + 10) ln 2, m
  // being the running maximum when the token's block is processed.
  const std::size_t n = 4096, block = 128;
  auto flushed = [&](double delta, int max_offset, bool reverse, bool sink_block_only) {
    ki::scenario_config c;
    c.shape.tokens = n;
    c.shape.head_dim = 128;
    c.shape.queries = 8;
    c.shape.seed = 4;
    ki::sink_config sk;
    sk.count = 1;
    sk.delta = delta;
    c.sinks = sk;
    const auto s = ki::build_scenario(c);
    reference_attention ref(s.data.k[0], s.data.v[0]);
    fa3_options fo;
    fo.max_offset = max_offset;
    fo.reverse = reverse;
    fo.block_n = block;
    fa3_fp8_attention<> fa(s.data.k[0], s.data.v[0], fo);
    std::size_t zero = 0, total = 0;
    compare(ref, fa, s.data.q[0], [&](const query_result& r) {
      for (std::size_t t = 1; t < r.tokens; ++t) {  // the remaining (non-sink) tokens
        if (sink_block_only && t >= block) continue;
        ++total;
        if (r.p_emu[t] == 0.0 && r.p_ref[t] > 0.0) ++zero;
      }
    });
    return static_cast<double>(zero) / static_cast<double>(total);
  };
  // Forward KV order: the sink's block comes first and sets the running max for all.
  std::vector<double> f;
  for (double delta : {2.0, 8.0, 12.0, 16.0}) f.push_back(flushed(delta, 8, false, false));
  INFO("forward order, flushed fraction for Delta = 2, 8, 12, 16: " << f[0] << ", " << f[1] << ", " << f[2] << ", "
                                                                      << f[3]);
  for (std::size_t i = 1; i < f.size(); ++i) CHECK(f[i] >= f[i - 1]);
  CHECK(f[0] == 0.0);
  CHECK(f.back() > 0.9);
  // S = 1 (no 2^8 offset) flushes more than S = 256 at the same gap
  const double s1 = flushed(8.0, 0, false, false);
  INFO("S = 1 at Delta = 8: " << s1);
  CHECK(s1 > f[1] + 0.2);
  // FA3's reverse order meets the sink block last: only that block is cast against the
  // sink's maximum, the rest is rescaled in fp32 afterwards.
  const double rev_all = flushed(16.0, 8, true, false), rev_blk = flushed(16.0, 8, true, true);
  INFO("reverse order at Delta = 16: all " << rev_all << ", sink block " << rev_blk);
  CHECK(rev_blk > 0.9);
  CHECK(rev_all <= static_cast<double>(block - 1) / static_cast<double>(n - 1) + 1e-12);
  CHECK(flushed(12.0, 8, true, true) >= flushed(8.0, 8, true, true));
}
