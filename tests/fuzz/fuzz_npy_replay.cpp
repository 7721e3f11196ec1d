// Replays the fuzz entry point over the seed files and deterministic mutations of them
// (every truncation, single-byte changes in the first 160 bytes, counter-based random
// multi-byte mutations), so every build exercises the reader's error paths under the
// sanitizers even without libFuzzer. Usage: fuzz_npy_replay FILE...
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
void run(const std::vector<std::uint8_t>& v) { LLVMFuzzerTestOneInput(v.data(), v.size()); }
}  // namespace

int main(int argc, char** argv) {
  std::size_t inputs = 0;
  for (int f = 1; f < argc; ++f) {
    std::ifstream in(argv[f], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "fuzz_npy_replay: cannot open %s\n", argv[f]);
      return 2;
    }
    const std::vector<std::uint8_t> seed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    run(seed);
    ++inputs;
    for (std::size_t n = 0; n < seed.size(); ++n) {
      run(std::vector<std::uint8_t>(seed.begin(), seed.begin() + static_cast<std::ptrdiff_t>(n)));
      ++inputs;
    }
    const std::size_t head = seed.size() < 160 ? seed.size() : 160;
    for (std::size_t i = 0; i < head; ++i) {
      for (std::uint8_t x : {std::uint8_t{0x01}, std::uint8_t{0x80}, std::uint8_t{0xFF}}) {
        auto m = seed;
        m[i] = static_cast<std::uint8_t>(m[i] ^ x);
        run(m);
        ++inputs;
      }
      for (char c : std::string("0123456789(),:'\" {}<>|TF\n")) {
        auto m = seed;
        m[i] = static_cast<std::uint8_t>(c);
        run(m);
        ++inputs;
      }
    }
    for (std::uint64_t r = 0; r < 2000 && !seed.empty(); ++r) {
      auto m = seed;
      const std::uint64_t k = 1 + mix(r * 3 + static_cast<std::uint64_t>(f)) % 6;
      for (std::uint64_t j = 0; j < k; ++j) {
        const std::uint64_t z = mix(r * 1000003 + j + (static_cast<std::uint64_t>(f) << 40));
        m[z % m.size()] = static_cast<std::uint8_t>(z >> 56);
      }
      run(m);
      ++inputs;
    }
  }
  std::printf("fuzz_npy_replay: %zu inputs from %d seed files, no contract violation\n", inputs, argc - 1);
  return 0;
}
