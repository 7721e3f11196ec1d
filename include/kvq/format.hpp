/// \file
/// kvq/format.hpp — the number-format layer: traits, value types, encode/decode.
#pragma once

#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/format/policy.hpp>
#include <kvq/format/traits.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/format/encode.hpp>
#include <kvq/format/decode.hpp>
#include <kvq/format/value.hpp>
#include <kvq/format/bulk.hpp>
#include <kvq/format/parallel.hpp>
#include <kvq/format/info.hpp>

/// \namespace kvq::fmt
/// The named format traits types (kvq::fmt::e4m3, kvq::fmt::e2m1, kvq::fmt::ue8m0, ...):
/// instances of kvq::minifloat_format, with the matching value types kvq::e4m3, ...
/// in kvq (kvq/format/formats.hpp, kvq/format/value.hpp).
