/// \file
/// kvq/study/progress.hpp — progress of a run on stderr: redrawn in place on a terminal,
/// plain lines into a pipe or log, nothing with --quiet.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
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
/// Progress on stderr. On a terminal: one line redrawn in place (every 200 ms). Into a
/// pipe or a log: a plain line ("[study]  40%  12.3 s") at every tenth of the work and at
/// least every 30 s, never a carriage return, so logs stay readable and a long run shows
/// that it is alive. Off with --quiet. Enumerators: `off` (prints nothing),
/// `terminal` (one line redrawn in place), `lines` (plain lines).
enum class progress_mode { off, terminal, lines };

/// The progress display of one run (see progress_mode). advance() may be called from
/// any worker thread; plan() and set_total() set the total work, in the caller's units.
/// It writes only to stderr and never affects a study's results.
class progress {
 public:
  /// A display labelled `label` ("[label] ...") in the given mode; the clock starts now.
  progress(std::string label, progress_mode mode) : label_(std::move(label)), mode_(mode) {
    t0_ = std::chrono::steady_clock::now();
    last_ = t0_;
  }
  /// The old spelling: enabled = redraw on a terminal, otherwise silent.
  progress(std::string label, bool enabled)
      : progress(std::move(label), enabled ? progress_mode::terminal : progress_mode::off) {}
  /// Whether stderr (file descriptor 2) is a terminal.
  static bool stderr_is_terminal() { return KVQ_STUDY_ISATTY(2) != 0; }
  /// The mode for a run: off when quiet, else in place on a terminal, else plain lines.
  static progress_mode mode_for_stderr(bool quiet) {
    if (quiet) return progress_mode::off;
    return stderr_is_terminal() ? progress_mode::terminal : progress_mode::lines;
  }
  /// A study with several phases announces the whole work first; otherwise each
  /// run_tasks call restarts the bar with its own total.
  void plan(double work) {
    std::lock_guard<std::mutex> lock(m_);
    total_ = work;
    done_ = 0;
    tenths_ = 0;
    planned_ = true;
  }
  /// Whether plan() was called.
  bool planned() const { return planned_; }
  /// Restarts the bar with a total of `work` (run_tasks() does so unless planned).
  void set_total(double work) {
    std::lock_guard<std::mutex> lock(m_);
    total_ = work;
    done_ = 0;
    tenths_ = 0;
  }
  /// Adds `work` done; redraws at most every 200 ms (thread-safe).
  void advance(double work) {
    if (mode_ == progress_mode::off) return;
    std::lock_guard<std::mutex> lock(m_);
    done_ += work;
    const auto now = std::chrono::steady_clock::now();
    const double frac = total_ > 0 ? std::min(1.0, done_ / total_) : 1.0;
    const double secs = std::chrono::duration<double>(now - t0_).count();
    if (mode_ == progress_mode::terminal) {
      if (now - last_ < std::chrono::milliseconds(200) && done_ < total_) return;
      last_ = now;
      std::fprintf(stderr, "\r\033[K[%s] %5.1f%%  %.1f s", label_.c_str(), 100 * frac, secs);
      if (frac > 0.02 && frac < 1) std::fprintf(stderr, "  (~%.0f s left)", secs / frac - secs);
      std::fflush(stderr);
      return;
    }
    const int tenths = static_cast<int>(frac * 10.0);
    if (tenths <= tenths_ && now - last_ < std::chrono::seconds(30)) return;
    tenths_ = std::max(tenths_, tenths);
    last_ = now;
    std::fprintf(stderr, "[%s] %3.0f%%  %.1f s\n", label_.c_str(), std::floor(100 * frac), secs);
    std::fflush(stderr);
  }
  /// Clears the line.
  void finish() {
    if (mode_ == progress_mode::terminal) {
      std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
    }
  }
  /// The display mode.
  progress_mode mode() const { return mode_; }

 private:
  std::string label_;
  progress_mode mode_;
  bool planned_ = false;
  int tenths_ = 0;  // lines mode: the last tenth of the work reported
  double total_ = 0, done_ = 0;
  std::mutex m_;
  std::chrono::steady_clock::time_point t0_, last_;
};

}  // namespace kvq::study
