// Replays the instruction-table fuzz entry point over generated seed tables and
// deterministic mutations of them (every truncation, every single-bit flip of the
// header and of bytes around the counts, the checksum recomputed after structural
// mutations so that the structural checks behind it are reached, counter-based random
// multi-byte mutations), so every build exercises the reader's error paths under the
// sanitizers even without libFuzzer. Usage: fuzz_instr_table_replay [--write-seeds DIR]
// (writes the seed tables, for a libFuzzer corpus).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <kvq/block/instr_table.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {
std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
std::size_t inputs = 0;
void run(const std::vector<std::uint8_t>& v) {
  LLVMFuzzerTestOneInput(v.data(), v.size());
  ++inputs;
}
/// Recomputes the trailing checksum of a (possibly mutated) image.
std::vector<std::uint8_t> reseal(std::vector<std::uint8_t> v) {
  if (v.size() < 8) return v;
  const std::uint64_t h = kvq::instr::detail::fnv1a64(v.data(), v.size() - 8);
  for (int b = 0; b < 8; ++b) v[v.size() - 8 + static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(h >> (8 * b));
  return v;
}
std::vector<std::vector<std::uint8_t>> seeds() {
  std::vector<std::vector<std::uint8_t>> s;
  for (std::uint32_t count : {1u, 5u, 64u, 301u}) {
    std::vector<std::int32_t> c(count);
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::uint64_t z = mix(i + count * 1000ULL) % 10;
      c[i] = z < 5 ? 0 : z < 7 ? 1 : z < 9 ? -1 : static_cast<std::int32_t>(mix(i) % 200) - 100;
      if (c[i] >= -1 && c[i] <= 1 && z == 9) c[i] = 7;
    }
    kvq::instr::instr_table t = kvq::instr::make_table(c.data(), count, {{"model", "rcp_approx_ftz_f32_sm90"}, {"arch", "sm90"}});
    t.set("instruction", "rcp.approx.ftz.f32");
    s.push_back(kvq::instr::serialize(t));
  }
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  const auto seed_images = seeds();
  if (argc == 3 && std::string(argv[1]) == "--write-seeds") {
    for (std::size_t i = 0; i < seed_images.size(); ++i) {
      std::ofstream out(std::string(argv[2]) + "/seed" + std::to_string(i) + ".kvqinstr", std::ios::binary);
      out.write(reinterpret_cast<const char*>(seed_images[i].data()), static_cast<std::streamsize>(seed_images[i].size()));
    }
    return 0;
  }
  for (std::size_t f = 0; f < seed_images.size(); ++f) {
    const auto& seed = seed_images[f];
    run(seed);
    for (std::size_t n = 0; n < seed.size(); ++n)
      run(std::vector<std::uint8_t>(seed.begin(), seed.begin() + static_cast<std::ptrdiff_t>(n)));
    for (std::size_t i = 0; i < seed.size() && i < 200; ++i)
      for (int b = 0; b < 8; ++b) {
        auto m = seed;
        m[i] = static_cast<std::uint8_t>(m[i] ^ (1u << b));
        run(m);
        run(reseal(m));
      }
    for (std::uint64_t r = 0; r < 3000; ++r) {
      auto m = seed;
      const std::uint64_t k = 1 + mix(r * 3 + f) % 6;
      for (std::uint64_t j = 0; j < k; ++j) {
        const std::uint64_t z = mix(r * 1000003 + j + (static_cast<std::uint64_t>(f) << 40));
        m[z % m.size()] = static_cast<std::uint8_t>(z >> 56);
      }
      run(m);
      run(reseal(m));
    }
  }
  std::printf("fuzz_instr_table_replay: %zu inputs from %zu seed tables, no contract violation\n", inputs, seed_images.size());
  return 0;
}
