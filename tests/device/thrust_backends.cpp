// Device algorithms on a CPU Thrust backend (compiled once per backend: CPP, OMP, TBB;
// see CMakeLists.txt) must be bit-identical to the serial emulator, with 1 and 2
// threads. Each check compares element by element and by content hash.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device_checks.hpp"

#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_OMP
#include <omp.h>
#elif THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_TBB
#include <tbb/global_control.h>
#endif

namespace {

// Limits the backend to `threads` workers while alive (CPP is always serial).
class thread_limit {
 public:
  explicit thread_limit(int threads) {
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_OMP
    previous_ = omp_get_max_threads();
    omp_set_num_threads(threads);
#elif THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_TBB
    control_ = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                     static_cast<std::size_t>(threads));
#else
    (void)threads;
#endif
  }
  ~thread_limit() {
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_OMP
    omp_set_num_threads(previous_);
#endif
  }
  thread_limit(const thread_limit&) = delete;
  thread_limit& operator=(const thread_limit&) = delete;

 private:
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_OMP
  int previous_ = 1;
#elif THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_TBB
  std::unique_ptr<tbb::global_control> control_;
#endif
};

void require_all(const std::vector<kvq_test::check_result>& results) {
  REQUIRE(!results.empty());
  for (const auto& r : results) {
    INFO(r.name << ": " << r.mismatches << " of " << r.n << " differ (first at " << r.first_mismatch
                << "), device hash " << r.device_hash << ", serial hash " << r.serial_hash);
    CHECK(r.ok());
  }
}

}  // namespace

TEST_CASE("backend is the one this binary was built for", "[device]") {
  const std::string name = kvq::device::system_name();
#if defined(KVQ_EXPECT_SYSTEM)
  CHECK(name == KVQ_EXPECT_SYSTEM);
#endif
  CHECK(name != "cuda");
}

TEST_CASE("content hash: device reduction equals the serial sum and sees every bit", "[device]") {
  for (int threads : {1, 2}) {
    thread_limit limit(threads);
    std::vector<std::uint32_t> v(100003);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint32_t>(i * 2654435761u);
    thrust::device_vector<std::uint32_t> d(v.begin(), v.end());
    const std::uint64_t h = kvq::device::content_hash(d);
    CHECK(h == kvq::device::content_hash_serial(v.data(), v.size()));
    // Independent recomputation from the definition (sum of mixed terms, then finish).
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::uint64_t z = i + 0x9E3779B97F4A7C15ull;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z = (z ^ (z >> 31)) ^ v[i];
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      sum += z ^ (z >> 31);
    }
    CHECK(h == kvq::device::hash_finish(sum, v.size()));
    // One flipped bit, a swap, or a dropped element changes the hash.
    for (std::size_t pos : {std::size_t(0), std::size_t(4711), v.size() - 1}) {
      auto w = v;
      w[pos] ^= 1u << (pos % 32);
      thrust::device_vector<std::uint32_t> dw(w.begin(), w.end());
      CHECK(kvq::device::content_hash(dw) != h);
    }
    auto s = v;
    std::swap(s[10], s[11]);
    CHECK(kvq::device::content_hash_serial(s.data(), s.size()) != h);
    CHECK(kvq::device::content_hash_serial(v.data(), v.size() - 1) != h);
    // -0.0f and +0.0f are different bits.
    const float zeros[2] = {0.0f, -0.0f};
    CHECK(kvq::device::content_hash_serial(zeros, 1) != kvq::device::content_hash_serial(zeros + 1, 1));
  }
}

TEST_CASE("element-wise encode/decode are bit-identical to the serial emulator", "[device]") {
  for (int threads : {1, 2}) {
    thread_limit limit(threads);
    INFO("backend " << kvq::device::system_name() << ", threads " << threads);
    require_all(kvq_test::all_conversion_checks(std::size_t(1) << 16));
  }
}

TEST_CASE("block quantize/dequantize of every scheme is bit-identical to the serial emulator", "[device]") {
  for (int threads : {1, 2}) {
    thread_limit limit(threads);
    INFO("backend " << kvq::device::system_name() << ", threads " << threads);
    require_all(kvq_test::all_block_checks(96));
  }
}

TEST_CASE("deterministic math and tree reductions are bit-identical to the serial functions", "[device]") {
  for (int threads : {1, 2}) {
    thread_limit limit(threads);
    INFO("backend " << kvq::device::system_name() << ", threads " << threads);
    require_all(kvq_test::all_math_checks(std::size_t(1) << 15));
  }
}

TEST_CASE("attention kernels and per-query metrics are bit-identical to the serial functions", "[device]") {
  for (int threads : {1, 2}) {
    thread_limit limit(threads);
    INFO("backend " << kvq::device::system_name() << ", threads " << threads);
    require_all(kvq_test::attention_metrics_checks(6, 300, 64));
  }
}

TEST_CASE("device block quantize rejects a length that is not a multiple of the block size", "[device]") {
  thrust::device_vector<float> x(100, 1.0f);
  thrust::device_vector<std::uint8_t> codes;
  thrust::device_vector<std::uint8_t> scales;
  thrust::device_vector<float> zeros;
  CHECK_THROWS_WITH(kvq::device::quantize(kvq::block::nvfp4_te{}, x, kvq::block::tensor_value::computed(), codes,
                                          scales, zeros),
                    Catch::Contains("100") && Catch::Contains("16"));
}

TEST_CASE("a wrong result is detected by the comparison", "[device]") {
  // The checks above must be able to fail: corrupt one element of a device result.
  const std::vector<float> in = kvq_test::float_inputs(4096);
  thrust::device_vector<float> d_in(in.begin(), in.end());
  thrust::device_vector<std::uint8_t> d_codes(in.size());
  kvq::device::encode<kvq::fmt::e4m3>(d_in.begin(), d_in.end(), d_codes.begin());
  std::vector<std::uint8_t> expected(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) expected[i] = kvq::encode<kvq::fmt::e4m3>(in[i]);
  CHECK(kvq_test::compare("ok", d_codes, expected).ok());
  d_codes[1234] = static_cast<std::uint8_t>(d_codes[1234] ^ 0x01u);
  const auto bad = kvq_test::compare("corrupted", d_codes, expected);
  CHECK_FALSE(bad.ok());
  CHECK(bad.mismatches == 1);
  CHECK(bad.first_mismatch == 1234);
  CHECK(bad.device_hash != bad.serial_hash);
}
