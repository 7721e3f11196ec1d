// A KV storage scheme of your own: symmetric INT4 with one fp32 absmax scale per token.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <kvq/attention.hpp>

// out = dequantize(quantize(in)) for one head, tokens x head_dim row-major.
void int4_absmax_row(kvq::kv::kv_role, const float* in, float* out, std::size_t tokens, std::size_t head_dim) {
  for (std::size_t t = 0; t < tokens; ++t) {
    const float* x = in + t * head_dim;
    float amax = 0.0f;
    for (std::size_t c = 0; c < head_dim; ++c) amax = std::max(amax, std::fabs(x[c]));
    const float scale = amax > 0.0f ? amax / 7.0f : 1.0f;
    for (std::size_t c = 0; c < head_dim; ++c)
      out[t * head_dim + c] = std::clamp(std::nearbyint(x[c] / scale), -7.0f, 7.0f) * scale;
  }
}

int main() {
  kvq::kv::register_scheme(kvq::kv::make_scheme(
      "int4_absmax_row", "INT4 symmetric, one fp32 absmax scale per token",
      [](std::size_t head_dim) { return 4.0 + 32.0 / static_cast<double>(head_dim); },  // codes + scale
      int4_absmax_row));

  // From now on the name works wherever a scheme name does.
  const kvq::kv::scheme& s = kvq::kv::find_scheme("int4_absmax_row");
  kvq::matrix_f k(2, 4);
  k << 7.0f, 3.4f, -1.6f, 0.2f,  //
      14.0f, -7.0f, 1.0f, 3.0f;
  const kvq::matrix_f kh = s.round_trip_matrix(kvq::kv::kv_role::key, k);
  std::printf("%s: %g bits per value at head_dim 128\n", s.name.c_str(), s.bits_per_value(128));
  for (Eigen::Index r = 0; r < kh.rows(); ++r)
    std::printf("row %ld: %g %g %g %g\n", static_cast<long>(r), kh(r, 0), kh(r, 1), kh(r, 2), kh(r, 3));

  kvq::attention::storage_options so;
  so.codec = kvq::attention::codec_of("int4_absmax_row");  // ready for storage_attention
  std::printf("codec: %s\n", so.codec.name.c_str());
}
