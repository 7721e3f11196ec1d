// libFuzzer target for the text layouts of inner-product vectors (kvq/mma/text.hpp), the
// parsers behind `kvq mma`. Contract checked on every input, line by line:
// parse_hex_words, parse_binary_word and parse_case either throw std::invalid_argument or
// succeed, and a parsed case either evaluates or throws std::invalid_argument (sizes or
// values its preset does not take). Any other exception, sanitizer report or crash aborts
// the run. Replayed over built-in seeds by fuzz_mma_text_replay in every build.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <kvq/mma/text.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    try {
      (void)kvq::mma::parse_hex_words(line);
    } catch (const std::invalid_argument&) {
    }
    try {
      (void)kvq::mma::parse_binary_word(line);
    } catch (const std::invalid_argument&) {
    }
    try {
      const kvq::mma::vector_case v = kvq::mma::parse_case(line);
      (void)kvq::mma::evaluate(v);
    } catch (const std::invalid_argument&) {
    }
    start = end + 1;
  }
  return 0;
}

// Seeds: one valid line of each layout (block-scaled mxf8f6f4 and mxf4nvf4, MFMA, a
// recorded a/b line and a c/d line), which the replay truncates and mutates.
std::vector<std::vector<std::uint8_t>> kvq_fuzz_builtin_seeds() {
  auto repeat = [](const char* word, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += std::string(" ") + word;
    return s;
  };
  const std::vector<std::string> lines = {
      "mxf8f6f4 ue8m0 32 e4m3 e4m3 |" + repeat("3f800000", 32) + " |" + repeat("bf000000", 32) +
          " | 3f800000 | 40000000 | 3f000000 | c1fc0000\n",
      "mxf4nvf4 ue4m3 16 e2m1 e2m1 |" + repeat("3f000000", 64) + " |" + repeat("40c00000", 64) + " |" +
          repeat("3f800000", 4) + " |" + repeat("3e000000", 4) + " | 00000000\n",
      "cdna3_fp8 e4m3fnuz e4m3fnuz | 3f800000 40000000 c0800000 | 3e800000 3f800000 3f800000 | b2800000 | 3f800000\n",
      "cdna3_bf16 bf16 bf16 | 3f800000 | 3f800000 | 00000000\n# comment\n\n",
      "3f800000 40000000 7f800000 80000000\n00111111100000000000000000000000\n",
  };
  std::vector<std::vector<std::uint8_t>> seeds;
  for (const auto& l : lines) seeds.emplace_back(l.begin(), l.end());
  return seeds;
}
