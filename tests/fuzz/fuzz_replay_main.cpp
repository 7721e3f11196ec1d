// Replay driver of the fuzz targets fuzz_safetensors, fuzz_npz, fuzz_npy_file and fuzz_mma_text in
// every build (no libFuzzer needed): runs the target's entry point over each seed file
// and the target's built-in hostile seeds, and over deterministic mutations of each:
// every truncation within the first 1024 bytes and 256 evenly spaced ones beyond,
// single-byte changes in the first and the last 160 bytes (where headers and ZIP
// directories live), and counter-based random multi-byte mutations.
// Usage: fuzz_<target>_replay [--edge N] [--tail 0|1] [--random N] FILE...
// (defaults 160, 1, 1000; lighter settings for targets whose inputs cost more)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
std::vector<std::vector<std::uint8_t>> kvq_fuzz_builtin_seeds();

namespace {
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
std::size_t inputs = 0;
std::size_t edge_bytes = 160;
std::uint64_t random_mutations = 1000;
bool mutate_tail = true;
void run(const std::vector<std::uint8_t>& v) {
  LLVMFuzzerTestOneInput(v.data(), v.size());
  ++inputs;
}
void mutate_byte(const std::vector<std::uint8_t>& seed, std::size_t i) {
  for (std::uint8_t x : {std::uint8_t{0x01}, std::uint8_t{0x80}, std::uint8_t{0xFF}}) {
    auto m = seed;
    m[i] = static_cast<std::uint8_t>(m[i] ^ x);
    run(m);
  }
  for (std::uint8_t c : {std::uint8_t{0}, std::uint8_t{'0'}, std::uint8_t{'9'}, std::uint8_t{'"'}, std::uint8_t{','},
                         std::uint8_t{'['}, std::uint8_t{'{'}, std::uint8_t{'}'}, std::uint8_t{0x7F}}) {
    auto m = seed;
    m[i] = c;
    run(m);
  }
}
void replay(const std::vector<std::uint8_t>& seed, std::uint64_t salt) {
  run(seed);
  const std::size_t dense = seed.size() < 1024 ? seed.size() : 1024;
  const std::size_t step = (seed.size() - dense) / 256 + 1;
  for (std::size_t n = 0; n < seed.size(); n += n < dense ? 1 : step)
    run(std::vector<std::uint8_t>(seed.begin(), seed.begin() + static_cast<std::ptrdiff_t>(n)));
  const std::size_t edge = seed.size() < edge_bytes ? seed.size() : edge_bytes;
  for (std::size_t i = 0; i < edge; ++i) mutate_byte(seed, i);
  if (mutate_tail)
    for (std::size_t i = seed.size() - edge; i < seed.size(); ++i)
      if (i >= edge) mutate_byte(seed, i);
  for (std::uint64_t r = 0; r < random_mutations && !seed.empty(); ++r) {
    auto m = seed;
    const std::uint64_t k = 1 + mix(r * 3 + salt) % 6;
    for (std::uint64_t j = 0; j < k; ++j) {
      const std::uint64_t z = mix(r * 1000003 + j + (salt << 40));
      m[z % m.size()] = static_cast<std::uint8_t>(z >> 56);
    }
    run(m);
  }
}
}  // namespace

int main(int argc, char** argv) {
  const char* me = argc > 0 ? argv[0] : "fuzz_replay";
  std::uint64_t salt = 1;
  int files = 0;
  for (int f = 1; f < argc; ++f) {
    const std::string a = argv[f];
    if ((a == "--edge" || a == "--random" || a == "--tail") && f + 1 < argc) {
      const unsigned long long v = std::strtoull(argv[++f], nullptr, 10);
      if (a == "--edge") edge_bytes = static_cast<std::size_t>(v);
      else if (a == "--tail") mutate_tail = v != 0;
      else random_mutations = v;
      continue;
    }
    ++files;
    std::ifstream in(argv[f], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot open %s\n", me, argv[f]);
      return 2;
    }
    replay(std::vector<std::uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), salt++);
  }
  const auto builtin = kvq_fuzz_builtin_seeds();
  for (const auto& s : builtin) replay(s, salt++);
  std::printf("%s: %zu inputs from %d seed files and %zu built-in seeds, no contract violation\n", me, inputs, files,
              builtin.size());
  return 0;
}
