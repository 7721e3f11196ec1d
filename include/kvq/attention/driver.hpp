/// \file
/// kvq/attention/driver.hpp — run the queries of one head through the reference and an
/// emulated path, query by query, with the NaN/Inf guard.
///
/// ~~~
///   compare(ref, emu, Q, visit, opt)   calls visit(const query_result&) for each query
///                                      row, in order, with both weight vectors and both
///                                      outputs (valid during the call only): memory is
///                                      O(threads * n), never O(queries * n)
///   attend(emu, Q, opt, report, ref)   the emulated outputs (queries x d)
///   attend_reference(ref, Q, opt)      the double outputs
/// ~~~
///
/// Threads: opt.threads queries are computed at a time, each on its own thread with its
/// own scratch; the visitor is always called on the calling thread in query order, and
/// every value is independent of the thread count.
///
/// Guard (opt.guard): when a NaN or Inf reaches a query's emulated scores, that query's
/// emulated weights and output are replaced by the high-precision (reference) ones and the
/// query is counted as a fallback — the "fall back to FP16" guardrail.
/// A path with key biases (a compacted cache) needs a reference built with the same
/// biases (reference_attention(K, V, bias)) for compare() and the guard to mean anything. Without the guard,
/// non-finite outputs are counted (queries and elements) and passed through unchanged.
#pragma once

#include <cstddef>
#include <string>
#include <kvq/core/parallel.hpp>
#include <type_traits>
#include <vector>

#include <kvq/attention/variants.hpp>

namespace kvq {
namespace attention {

/// How the driver runs the queries of a head.
struct run_options {
  /// Queries computed at a time, each on its own thread (0 counts as 1); no value
  /// depends on it.
  unsigned threads = 1;
  /// The NaN/Inf guard: a query whose emulated scores hold a NaN or Inf gets the
  /// reference weights and output instead (see the file comment).
  bool guard = false;
};

/// Counts of one compare() or attend() run.
struct attention_report {
  /// Queries run.
  std::size_t queries = 0;
  /// Queries replaced by the reference (guard on).
  std::size_t fallbacks = 0;                // queries replaced by the reference (guard on)
  /// Queries whose emulated scores held a NaN or Inf.
  std::size_t nonfinite_score_queries = 0;  // queries whose emulated scores had a NaN/Inf
  /// Queries left with a non-finite output (after any fallback).
  std::size_t nonfinite_output_queries = 0; // queries left with a non-finite output
  /// Non-finite output elements left (after any fallback).
  std::size_t nonfinite_outputs = 0;        // non-finite output elements left
};

/// One query's results as compare() passes them to its visitor; the pointers are
/// valid during the call only.
struct query_result {
  /// Query row in Q.
  std::size_t index = 0;  // query row
  /// \var tokens
  /// Context length n (entries of p_ref and p_emu).
  /// \var head_dim
  /// Head dimension d (entries of o_ref and o_emu).
  std::size_t tokens = 0, head_dim = 0;
  /// Reference weights (tokens doubles).
  const double* p_ref = nullptr;  // tokens
  /// Emulated effective weights (tokens doubles; the reference's after a fallback).
  const double* p_emu = nullptr;  // tokens (the reference's after a fallback)
  /// Reference output (head_dim doubles).
  const double* o_ref = nullptr;  // head_dim
  /// Emulated output (head_dim floats; the reference's, rounded to float, after a fallback).
  const float* o_emu = nullptr;   // head_dim
  /// What the emulated kernel saw, before any fallback.
  query_status status;            // of the emulated path, before any fallback
  /// Whether the guard replaced this query's emulated results by the reference.
  bool fell_back = false;
};

namespace detail {

inline void check_queries(const char* where, const matrix_f& Q, std::size_t d) {
  if (static_cast<std::size_t>(Q.cols()) != d)
    fail(where, "mismatched shapes: " + shape_of("Q", Q) + " but the keys have head_dim " + std::to_string(d));
}

template <class Emu>
void check_pair(const char* where, const reference_attention& ref, const Emu& emu) {
  if (ref.tokens() != emu.tokens() || ref.head_dim() != emu.head_dim())
    fail(where, "reference is " + std::to_string(ref.tokens()) + "x" + std::to_string(ref.head_dim()) +
                    " but the emulated path is " + std::to_string(emu.tokens()) + "x" + std::to_string(emu.head_dim()));
}

struct slot {
  std::vector<double> p_ref, p_emu, o_ref;
  std::vector<float> o_emu;
  workspace ws;
  query_status st;
};

/// Runs job(slot, row) for rows [r0, r1) on up to `threads` threads (at most `threads`
/// rows, so one row each); row r0 + i uses slot i.
template <class Job>
void run_batch(std::vector<slot>& slots, std::size_t r0, std::size_t r1, unsigned threads, Job& job) {
  kvq::detail::parallel_chunks("kvq::attention::compare", r1 - r0, threads, 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) job(slots[i], r0 + i);
  });
}

inline std::size_t count_nonfinite(const float* o, std::size_t d) {
  std::size_t c = 0;
  for (std::size_t j = 0; j < d; ++j)
    if (!finite(o[j])) ++c;
  return c;
}

}  // namespace detail

/// Runs every row of Q (queries x head_dim) through ref and emu and calls
/// visit(const query_result&) for each, in row order, on the calling thread. Emu is a
/// path with float outputs (storage_attention, fa3_fp8_attention); memory is
/// O(threads * n). Throws std::invalid_argument if ref and emu differ in tokens or
/// head_dim, or Q's columns differ from head_dim.
/// \return the counts of the run.
template <class Emu, class Visitor>
attention_report compare(const reference_attention& ref, const Emu& emu, const matrix_f& Q, Visitor&& visit,
                         const run_options& opt = {}) {
  const char* where = "kvq::attention::compare";
  detail::check_pair(where, ref, emu);
  detail::check_queries(where, Q, ref.head_dim());
  const std::size_t n = ref.tokens(), d = ref.head_dim(), nq = static_cast<std::size_t>(Q.rows());
  const unsigned threads = opt.threads == 0 ? 1u : opt.threads;
  std::vector<detail::slot> slots(threads);
  for (auto& s : slots) {
    s.p_ref.resize(n);
    s.p_emu.resize(n);
    s.o_ref.resize(d);
    s.o_emu.resize(d);
  }
  auto job = [&](detail::slot& s, std::size_t row) {
    const float* q = Q.data() + row * d;
    ref.run(q, s.p_ref.data(), s.o_ref.data(), s.ws);
    s.st = emu.run(q, s.p_emu.data(), s.o_emu.data(), s.ws);
  };
  attention_report rep;
  for (std::size_t r0 = 0; r0 < nq; r0 += threads) {
    const std::size_t r1 = (r0 + threads < nq) ? r0 + threads : nq;
    detail::run_batch(slots, r0, r1, threads, job);
    for (std::size_t i = 0; i < r1 - r0; ++i) {
      detail::slot& s = slots[i];
      query_result qr;
      qr.index = r0 + i;
      qr.tokens = n;
      qr.head_dim = d;
      qr.status = s.st;
      ++rep.queries;
      if (s.st.nonfinite_scores) ++rep.nonfinite_score_queries;
      if (opt.guard && s.st.nonfinite_scores) {
        s.p_emu = s.p_ref;
        for (std::size_t j = 0; j < d; ++j) s.o_emu[j] = static_cast<float>(s.o_ref[j]);
        qr.fell_back = true;
        ++rep.fallbacks;
      }
      const std::size_t bad = detail::count_nonfinite(s.o_emu.data(), d);
      if (bad) {
        ++rep.nonfinite_output_queries;
        rep.nonfinite_outputs += bad;
      }
      qr.p_ref = s.p_ref.data();
      qr.p_emu = s.p_emu.data();
      qr.o_ref = s.o_ref.data();
      qr.o_emu = s.o_emu.data();
      visit(static_cast<const query_result&>(qr));
    }
  }
  return rep;
}

/// Emulated outputs of all query rows. With opt.guard, `fallback` (the high-precision
/// path over the original K/V) is required.
/// Returns a queries x head_dim matrix; `report`, if given, receives the counts.
/// Throws std::invalid_argument if Q's columns differ from head_dim, the guard is on
/// without a fallback, or the fallback's shape differs from emu's.
template <class Emu>
matrix_f attend(const Emu& emu, const matrix_f& Q, const run_options& opt = {}, attention_report* report = nullptr,
                const reference_attention* fallback = nullptr) {
  const char* where = "kvq::attention::attend";
  detail::check_queries(where, Q, emu.head_dim());
  if (opt.guard && fallback == nullptr) kvq::detail::fail(where, "guard requested without a reference path");
  if (fallback) detail::check_pair(where, *fallback, emu);
  const std::size_t n = emu.tokens(), d = emu.head_dim(), nq = static_cast<std::size_t>(Q.rows());
  const unsigned threads = opt.threads == 0 ? 1u : opt.threads;
  matrix_f out(static_cast<Eigen::Index>(nq), static_cast<Eigen::Index>(d));
  std::vector<detail::slot> slots(threads);
  for (auto& s : slots) {
    s.p_emu.resize(n);
    s.p_ref.resize(opt.guard ? n : 0);
    s.o_ref.resize(opt.guard ? d : 0);
  }
  auto job = [&](detail::slot& s, std::size_t row) {
    const float* q = Q.data() + row * d;
    float* o = out.data() + row * d;
    s.st = emu.run(q, s.p_emu.data(), o, s.ws);
    if (opt.guard && s.st.nonfinite_scores) {
      fallback->run(q, s.p_ref.data(), s.o_ref.data(), s.ws);
      for (std::size_t j = 0; j < d; ++j) o[j] = static_cast<float>(s.o_ref[j]);
    }
  };
  attention_report rep;
  for (std::size_t r0 = 0; r0 < nq; r0 += threads) {
    const std::size_t r1 = (r0 + threads < nq) ? r0 + threads : nq;
    detail::run_batch(slots, r0, r1, threads, job);
    for (std::size_t i = 0; i < r1 - r0; ++i) {
      const query_status& st = slots[i].st;
      ++rep.queries;
      if (st.nonfinite_scores) {
        ++rep.nonfinite_score_queries;
        if (opt.guard) ++rep.fallbacks;
      }
      const std::size_t bad = detail::count_nonfinite(out.data() + (r0 + i) * d, d);
      if (bad) {
        ++rep.nonfinite_output_queries;
        rep.nonfinite_outputs += bad;
      }
    }
  }
  if (report) *report = rep;
  return out;
}

/// Double-precision outputs of all query rows.
/// Throws std::invalid_argument if Q's columns differ from head_dim.
inline matrix_d attend_reference(const reference_attention& ref, const matrix_f& Q, const run_options& opt = {}) {
  detail::check_queries("kvq::attention::attend_reference", Q, ref.head_dim());
  const std::size_t n = ref.tokens(), d = ref.head_dim(), nq = static_cast<std::size_t>(Q.rows());
  const unsigned threads = opt.threads == 0 ? 1u : opt.threads;
  matrix_d out(static_cast<Eigen::Index>(nq), static_cast<Eigen::Index>(d));
  std::vector<detail::slot> slots(threads);
  for (auto& s : slots) s.p_ref.resize(n);
  auto job = [&](detail::slot& s, std::size_t row) {
    ref.run(Q.data() + row * d, s.p_ref.data(), out.data() + row * d, s.ws);
  };
  for (std::size_t r0 = 0; r0 < nq; r0 += threads)
    detail::run_batch(slots, r0, (r0 + threads < nq) ? r0 + threads : nq, threads, job);
  return out;
}

/// Attention weights of one query row under a path (n doubles).
/// Throws std::invalid_argument if Q's columns differ from head_dim or row is not a
/// row of Q.
template <class Path>
std::vector<double> probabilities(const Path& path, const matrix_f& Q, std::size_t row) {
  detail::check_queries("kvq::attention::probabilities", Q, path.head_dim());
  if (row >= static_cast<std::size_t>(Q.rows()))
    kvq::detail::fail("kvq::attention::probabilities", "row " + std::to_string(row) + " of " + kvq::detail::shape_of("Q", Q));
  std::vector<double> p(path.tokens());
  workspace ws;
  if constexpr (std::is_same<Path, reference_attention>::value) {
    std::vector<double> o(path.head_dim());
    path.run(Q.data() + row * path.head_dim(), p.data(), o.data(), ws);
  } else {
    std::vector<float> o(path.head_dim());
    path.run(Q.data() + row * path.head_dim(), p.data(), o.data(), ws);
  }
  return p;
}

}  // namespace attention
}  // namespace kvq
