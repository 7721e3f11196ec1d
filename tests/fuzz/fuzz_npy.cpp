// libFuzzer target for the .npy reader (kvq/verify/npy.hpp), the one place kvq parses
// untrusted files. Contract checked on every input:
//  - parse() either throws std::invalid_argument or returns an array whose data size
//    is exactly count * itemsize; any other exception escapes and aborts the run;
//  - an accepted array survives serialize() -> parse() unchanged;
//  - converting an accepted value array to float yields count values.
// Built with -fsanitize=fuzzer,address,undefined under KVQ_FUZZ (Clang); the same entry
// point is replayed over a seed corpus by fuzz_npy_replay in every build.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include <kvq/verify/npy.hpp>

namespace {
[[noreturn]] void violated() { std::abort(); }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kvq::verify;
  npy::array a;
  try {
    a = npy::parse(data, size);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  if (a.data.size() != a.count() * npy::itemsize(a.type)) violated();
  const std::vector<std::uint8_t> img = npy::serialize(a);
  const npy::array b = npy::parse(img.data(), img.size());
  if (b.type != a.type || b.shape != a.shape || b.data != a.data) violated();
  if (a.type != npy::dtype::u8 && a.to_float().size() != a.count()) violated();
  return 0;
}
