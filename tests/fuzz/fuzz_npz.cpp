// libFuzzer target for the .npz reader (kvq/study/npz.hpp: ZIP central directory,
// ZIP64, inflate with zlib, CRC-32, then the strict .npy reader on each member).
// Contract checked on every input: read_directory() and read_array() either throw
// std::invalid_argument or succeed; an accepted member inflates to exactly its stated
// size and parses to an array of count * itemsize bytes. Any other exception, sanitizer
// report or crash aborts the run. Replayed over seeds by fuzz_npz_replay in every build.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <kvq/study/npz.hpp>

namespace {
[[noreturn]] void violated() { std::abort(); }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace npz = kvq::study::npz;
  const kvq::study::memory_source src(data, size);
  std::vector<npz::member> dir;
  try {
    dir = npz::read_directory(src);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  for (const auto& m : dir) {
    try {
      if (npz::read_member(src, m).size() != m.uncompressed) violated();
      const kvq::verify::npy::array a = npz::read_array(src, m);
      if (a.data.size() != a.count() * kvq::verify::npy::itemsize(a.type)) violated();
    } catch (const std::invalid_argument&) {
    }
  }
  return 0;
}

// Hostile inputs the replay adds to its seed files: end records pointing outside the
// file, ZIP64 records with huge counts and offsets.
std::vector<std::vector<std::uint8_t>> kvq_fuzz_builtin_seeds() {
  auto put = [](std::vector<std::uint8_t>& v, std::size_t at, std::uint64_t x, int n) {
    for (int i = 0; i < n; ++i) v[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(x >> (8 * i));
  };
  std::vector<std::vector<std::uint8_t>> seeds;
  {  // end record only, directory 0xFFFFFFF0 bytes at offset 0
    std::vector<std::uint8_t> v(22, 0);
    put(v, 0, 0x06054b50, 4);
    put(v, 8, 1, 2);
    put(v, 10, 1, 2);
    put(v, 12, 0xFFFFFFF0u, 4);
    seeds.push_back(v);
  }
  {  // ZIP64 locator + record claiming 2^63 entries at offset 2^64 - 1
    std::vector<std::uint8_t> v(56 + 20 + 22, 0);
    put(v, 0, 0x06064b50, 4);
    put(v, 24, std::uint64_t{1} << 63, 8);
    put(v, 32, std::uint64_t{1} << 63, 8);
    put(v, 40, ~std::uint64_t{0}, 8);
    put(v, 48, ~std::uint64_t{0}, 8);
    put(v, 56, 0x07064b50, 4);
    put(v, 64, 0, 8);
    put(v, 72, 1, 4);
    put(v, 76, 0x06054b50, 4);
    put(v, 84, 0xFFFF, 2);
    put(v, 86, 0xFFFF, 2);
    put(v, 88, 0xFFFFFFFFu, 4);
    put(v, 92, 0xFFFFFFFFu, 4);
    seeds.push_back(v);
  }
  {  // one deflated entry stating 4 GiB uncompressed from 2 bytes
    std::vector<std::uint8_t> v(30 + 5 + 2 + 46 + 5 + 22, 0);
    put(v, 0, 0x04034b50, 4);
    put(v, 8, 8, 2);
    put(v, 26, 5, 2);
    std::memcpy(v.data() + 30, "a.npy", 5);
    const std::size_t cd = 37;
    put(v, cd, 0x02014b50, 4);
    put(v, cd + 10, 8, 2);
    put(v, cd + 20, 2, 4);
    put(v, cd + 24, 0xFFFFFFFEu, 4);
    put(v, cd + 28, 5, 2);
    std::memcpy(v.data() + cd + 46, "a.npy", 5);
    const std::size_t e = cd + 51;
    put(v, e, 0x06054b50, 4);
    put(v, e + 8, 1, 2);
    put(v, e + 10, 1, 2);
    put(v, e + 12, 51, 4);
    put(v, e + 16, cd, 4);
    seeds.push_back(v);
  }
  return seeds;
}
