// libFuzzer target for npy::read(path), the .npy reader's file path (kvq/verify/npy.hpp),
// whose own handling of the header length (read first, bounded, then the rest) differs
// from the in-memory parse(). Each input is written to a temporary file and read back.
// Contract: read(file) and parse(bytes) agree — both throw std::invalid_argument, or
// both return the same array. Any other outcome, sanitizer report or crash aborts.
// Replayed over seeds by fuzz_npy_file_replay in every build.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include <kvq/verify/npy.hpp>

namespace {
[[noreturn]] void violated() { std::abort(); }

// One temporary file per process, rewritten for every input.
const std::string& temp_path() {
  static const std::string path = [] {
    // TMPDIR, else the memory-backed /dev/shm where there is one (thousands of writes).
    const char* dir = std::getenv("TMPDIR");
    std::string base = dir && *dir ? dir : "";
    if (base.empty()) base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string p = base + "/kvq_fuzz_npy_file_XXXXXX";
    std::vector<char> buf(p.begin(), p.end());
    buf.push_back('\0');
    const int fd = ::mkstemp(buf.data());
    if (fd < 0) std::abort();
    ::close(fd);
    std::atexit([] { std::remove(temp_path().c_str()); });
    return std::string(buf.data());
  }();
  return path;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace npy = kvq::verify::npy;
  const std::string& path = temp_path();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  bool mem_ok = true, file_ok = true;
  npy::array a, b;
  try {
    a = npy::parse(data, size);
  } catch (const std::invalid_argument&) {
    mem_ok = false;
  }
  try {
    b = npy::read(path);
  } catch (const std::invalid_argument&) {
    file_ok = false;
  }
  if (mem_ok != file_ok) violated();
  if (mem_ok && (a.type != b.type || a.shape != b.shape || a.data != b.data)) violated();
  return 0;
}

// Hostile inputs the replay adds to its seed files: header lengths at and past every
// limit, for format versions 1.0 and 2.0.
std::vector<std::vector<std::uint8_t>> kvq_fuzz_builtin_seeds() {
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  auto image = [&](int major, std::uint64_t hlen, bool with_dict, std::size_t data) {
    std::vector<std::uint8_t> v = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<std::uint8_t>(major), 0};
    for (int i = 0; i < (major == 1 ? 2 : 4); ++i) v.push_back(static_cast<std::uint8_t>(hlen >> (8 * i)));
    if (with_dict) v.insert(v.end(), dict.begin(), dict.end());
    v.resize(v.size() + data, 0x3F);
    return v;
  };
  return {
      image(1, dict.size(), true, 4),  // valid
      image(2, dict.size(), true, 4),  // valid, version 2.0
      image(1, 0xFFFF, true, 4),
      image(2, 0xFFFFFFFFu, true, 4),
      image(2, 65537, true, 4),
      image(1, dict.size() + 1, true, 0),
      image(3, 0, false, 0),
      image(1, 0, false, 0),
  };
}
