// The one thread pool (kvq/core/parallel.hpp): every index runs exactly once whatever the
// thread count, chunks are cut at multiples of the grain, task exceptions come back to
// the caller, and bad arguments are errors.
#include <catch2/catch.hpp>

#include <kvq/core/parallel.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

TEST_CASE("parallel_chunks: a fixed partition covering every index once", "[core][parallel]") {
  for (const std::size_t n : {0u, 1u, 7u, 64u, 1000u})
    for (const unsigned threads : {1u, 2u, 3u, 8u})
      for (const std::size_t grain : {1u, 4u, 64u}) {
        INFO("n " << n << " threads " << threads << " grain " << grain);
        std::vector<std::atomic<int>> hits(n);
        std::mutex m;
        std::vector<std::pair<std::size_t, std::size_t>> chunks;
        kvq::detail::parallel_chunks("test", n, threads, grain, [&](std::size_t b, std::size_t e) {
          for (std::size_t i = b; i < e; ++i) ++hits[i];
          std::lock_guard<std::mutex> lock(m);
          chunks.emplace_back(b, e);
        });
        for (std::size_t i = 0; i < n; ++i) CHECK(hits[i] == 1);
        CHECK(chunks.size() <= threads);
        for (const auto& c : chunks) {
          CHECK(c.first % grain == 0);
          CHECK((c.second % grain == 0 || c.second == n));
          if (n > 0) CHECK(c.first < c.second);
        }
        if (n == 0) CHECK(chunks == std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}});
      }
}

TEST_CASE("parallel_tasks: every task once, the first exception rethrown", "[core][parallel]") {
  for (const unsigned threads : {1u, 2u, 5u, 64u}) {
    INFO("threads " << threads);
    std::vector<std::atomic<int>> hits(100);
    kvq::detail::parallel_tasks("test", hits.size(), threads, [&](std::size_t i) { ++hits[i]; });
    for (auto& h : hits) CHECK(h == 1);
  }
  // After a failure no new task starts. The window between the throw and the flag being
  // set is a race on several threads, so the bound is checked where it is deterministic
  // (one thread: exactly the tasks up to the failing one) and, on several threads, with
  // tasks slow enough (1 ms) that a queue of 400 cannot drain inside that window.
  for (const unsigned threads : {1u, 2u, 5u}) {
    INFO("threads " << threads);
    std::atomic<int> ran{0};
    CHECK_THROWS_WITH(kvq::detail::parallel_tasks("test", 400, threads,
                                                  [&](std::size_t i) {
                                                    ++ran;
                                                    if (i == 3) throw std::runtime_error("task 3 failed");
                                                    if (threads > 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                                                  }),
                      "task 3 failed");
    if (threads == 1)
      CHECK(ran == 4);
    else
      CHECK(ran < 400);
  }
  int calls = 0;
  kvq::detail::parallel_tasks("test", 0, 4, [&](std::size_t) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("parallel: zero threads or grain are errors naming the caller", "[core][parallel][errors]") {
  auto nop = [](std::size_t, std::size_t) {};
  CHECK_THROWS_AS(kvq::detail::parallel_chunks("kvq::x", 10, 0, 1, nop), std::invalid_argument);
  CHECK_THROWS_WITH(kvq::detail::parallel_chunks("kvq::x", 10, 2, 0, nop), Catch::Contains("kvq::x"));
  CHECK_THROWS_WITH(kvq::detail::parallel_tasks("kvq::y", 10, 0, [](std::size_t) {}), Catch::Contains("threads is 0"));
}

TEST_CASE("run_threads joins the started threads when the calling thread's part throws", "[core][parallel]") {
  std::atomic<int> done{0};
  CHECK_THROWS_AS(kvq::detail::run_threads(4,
                                           [&](std::size_t k) {
                                             if (k == 0) throw std::logic_error("caller part");
                                             ++done;
                                           }),
                  std::logic_error);
  CHECK(done == 3);  // every other thread ran and was joined before the throw came back
}
