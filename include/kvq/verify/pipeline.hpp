/// \file
/// kvq/verify/pipeline.hpp — generator -> subject -> reference -> verifier, in the
/// spirit of Hauser's TestFloat: a user plugs in their own conversion (a wrapper around
/// their GPU kernel, a library function) as the subject and kvq's encoder (or any other
/// callable) as the reference; the pipeline feeds both the same inputs in batches and
/// compares the codes bit for bit.
///
/// Signatures (batch form, so a kernel wrapper can launch once per batch):
///   subject / reference: void(const float* in, std::size_t n, std::uint8_t* codes_out)
/// For a per-element function std::uint8_t(float) wrap it in elementwise{f}.
///
/// The pipeline drives a conversion callable over generated inputs; buffers a kernel has
/// already written (codes, block scales) are checked with kvq::verify::check
/// (kvq/verify/check.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <kvq/format/bulk.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/format/policy.hpp>
#include <kvq/verify/compare.hpp>

namespace kvq::verify {

/// kvq's own encoder as a batch callable.
template <class F>
struct kvq_encoder {
  /// Rounding passed to kvq::encode_n.
  rounding r = rounding::nearest_even;
  /// Overflow policy passed to kvq::encode_n.
  overflow o = overflow::satfinite;
  /// Encodes in[0..n) to out[0..n) with kvq::encode_n<F>.
  void operator()(const float* in, std::size_t n, std::uint8_t* out) const { kvq::encode_n<F>(in, n, out, r, o); }
};

/// Adapts std::uint8_t f(float) to the batch signature.
template <class Fn>
struct elementwise {
  /// The per-element function, std::uint8_t(float) or convertible to it.
  Fn f;
  /// out[i] = f(in[i]) for i < n.
  void operator()(const float* in, std::size_t n, std::uint8_t* out) const {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(f(in[i]));
  }
};
/// Deduction guide: elementwise{f} deduces Fn from f.
template <class Fn>
elementwise(Fn) -> elementwise<Fn>;

/// Batching and reporting options of run_pipeline().
struct pipeline_options {
  /// Inputs per subject and reference call (0 is taken as 1).
  std::size_t batch = std::size_t{1} << 16;  // inputs per subject call
  /// Mismatches kept in the report.
  std::size_t max_listed = 10;                // mismatches kept in the report
  /// Report name; empty: "codes (\<format\>)".
  std::string name;                           // report name (default: "codes (<format>)")
};

/// Runs the generator to exhaustion. The report's "expected" side is the reference,
/// "actual" the subject; decoded values use format F; inputs are listed with each
/// mismatch.
template <class F, class Gen, class Subject, class Reference>
report run_pipeline(Gen& gen, Subject&& subject, Reference&& reference, const pipeline_options& opt = {}) {
  const std::size_t batch = opt.batch ? opt.batch : 1;
  std::vector<float> in(batch);
  std::vector<std::uint8_t> expected(batch), actual(batch);
  comparator<std::uint8_t, code_decoder<F>> cmp(
      opt.name.empty() ? std::string("codes (") + format_name<F>() + ")" : opt.name, opt.max_listed);
  for (;;) {
    const std::size_t n = gen.next(in.data(), batch);
    if (n == 0) break;
    reference(static_cast<const float*>(in.data()), n, expected.data());
    subject(static_cast<const float*>(in.data()), n, actual.data());
    cmp.add(expected.data(), actual.data(), n, in.data());
  }
  return cmp.result();
}

/// The subject against kvq::encode<F>(x, r, o).
template <class F, class Gen, class Subject>
report run_pipeline(Gen& gen, Subject&& subject, rounding r = rounding::nearest_even,
                    overflow o = overflow::satfinite, const pipeline_options& opt = {}) {
  return run_pipeline<F>(gen, std::forward<Subject>(subject), kvq_encoder<F>{r, o}, opt);
}

}  // namespace kvq::verify
