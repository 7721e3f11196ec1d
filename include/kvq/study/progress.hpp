/// \file
/// kvq/study/progress.hpp — progress of a run on stderr, only when stderr is a terminal.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

/// isatty of the platform (_isatty on Windows).
#if defined(_WIN32)
#include <io.h>
#define KVQ_STUDY_ISATTY(fd) _isatty(fd)
#else
#include <unistd.h>
#define KVQ_STUDY_ISATTY(fd) isatty(fd)
#endif

namespace kvq::study {

// ---------------------------------------------------------------------------
/// Progress on stderr, only when stderr is a terminal (never pollutes pipes or logs).
class progress {
 public:
  /// A display labelled `label`; prints nothing unless enabled.
  progress(std::string label, bool enabled) : label_(std::move(label)), on_(enabled) {
    t0_ = std::chrono::steady_clock::now();
  }
  /// Whether stderr is a terminal.
  static bool stderr_is_terminal() { return KVQ_STUDY_ISATTY(2) != 0; }
  /// A study with several phases announces the whole work first; otherwise each
  /// run_tasks call restarts the bar with its own total.
  void plan(double work) {
    total_ = work;
    done_ = 0;
    planned_ = true;
  }
  /// Whether plan() was called.
  bool planned() const { return planned_; }
  /// Restarts the bar with a total of `work` (run_tasks() does so unless planned).
  void set_total(double work) {
    total_ = work;
    done_ = 0;
  }
  /// Adds `work` done; redraws at most every 200 ms (thread-safe).
  void advance(double work) {
    if (!on_) return;
    std::lock_guard<std::mutex> lock(m_);
    done_ += work;
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(200) && done_ < total_) return;
    last_ = now;
    double secs = std::chrono::duration<double>(now - t0_).count();
    double frac = total_ > 0 ? std::min(1.0, done_ / total_) : 1.0;
    std::fprintf(stderr, "\r\033[K[%s] %5.1f%%  %.1f s", label_.c_str(), 100 * frac, secs);
    if (frac > 0.02 && frac < 1) std::fprintf(stderr, "  (~%.0f s left)", secs / frac - secs);
    std::fflush(stderr);
  }
  /// Clears the line.
  void finish() {
    if (!on_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }

 private:
  std::string label_;
  bool on_;
  bool planned_ = false;
  double total_ = 0, done_ = 0;
  std::mutex m_;
  std::chrono::steady_clock::time_point t0_, last_{};
};

}  // namespace kvq::study
