// A KV storage scheme of your own, registered with the library and run through a study:
// symmetric INT4 with one fp32 absmax scale per token (row), a per-token variant of the
// schemes in the registry. After register_scheme() the name works everywhere a scheme
// name does: --schemes of every study, kvq::attention::codec_of, kvq::kv::find_scheme.
//
//   custom_scheme [--quick] [study options]     runs `outliers` with bf16, nvfp4_te and
//                                               int4_absmax_row unless --schemes is given
#include "studies.hpp"  // kvq::study::outliers::definition(), from the kvq_studies library

#include <kvq/study.hpp>

#include <kvq/kv/registry.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace {

// out = dequantize(quantize(in)) for one head, tokens x head_dim row-major.
void int4_absmax_row(kvq::kv::kv_role, const float* in, float* out, std::size_t tokens, std::size_t head_dim) {
  for (std::size_t t = 0; t < tokens; ++t) {
    const float* x = in + t * head_dim;
    float amax = 0.0f;
    for (std::size_t c = 0; c < head_dim; ++c) amax = std::fmax(amax, std::fabs(x[c]));
    const float scale = amax > 0.0f ? amax / 7.0f : 1.0f;
    for (std::size_t c = 0; c < head_dim; ++c) {
      const float q = std::fmin(7.0f, std::fmax(-7.0f, std::nearbyint(x[c] / scale)));  // ties to even
      out[t * head_dim + c] = q * scale;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  kvq::kv::register_scheme(kvq::kv::make_scheme(
      "int4_absmax_row", "INT4 symmetric, one fp32 absmax scale per token",
      [](std::size_t head_dim) { return 4.0 + 32.0 / static_cast<double>(head_dim); }, int4_absmax_row,
      /*block=*/1, kvq::kv::scale_grouping::row_blocks));

  std::vector<std::string> args(argv, argv + argc);
  bool has_schemes = false;
  for (const auto& a : args) has_schemes = has_schemes || a == "--schemes" || a.rfind("--schemes=", 0) == 0;
  if (!has_schemes) {
    args.push_back("--schemes");
    args.push_back("bf16,nvfp4_te,int4_absmax_row");
  }
  std::vector<char*> av;
  for (auto& a : args) av.push_back(a.data());
  return kvq::study::run_standalone(kvq::study::outliers::definition(), static_cast<int>(av.size()), av.data());
}
