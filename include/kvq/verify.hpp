/// \file
/// kvq/verify.hpp — umbrella header of the verification layer: bit-for-bit buffer
/// comparison with mismatch reports, the generator -> subject -> reference pipeline,
/// the hard inputs that separate every rounding decision of a recipe,
/// the one verification entry point (check), the .npy reader/writer and the
/// command-line verifier.
#pragma once

#include <kvq/verify/check.hpp>
#include <kvq/verify/compare.hpp>
#include <kvq/verify/element.hpp>
#include <kvq/verify/generators.hpp>
#include <kvq/verify/hard_inputs.hpp>
#include <kvq/verify/hash.hpp>
#include <kvq/verify/kv_layout.hpp>
#include <kvq/verify/npy.hpp>
#include <kvq/verify/npy_verify.hpp>
#include <kvq/verify/pipeline.hpp>
