// kvq/format.hpp — the number-format layer: traits, value types, encode/decode.
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
#include <kvq/format/info.hpp>
