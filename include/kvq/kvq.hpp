// kvq/kvq.hpp — everything: one include per layer umbrella, lower layers first.
// Each layer adds its umbrella here when it lands.
#pragma once

#include <kvq/config.hpp>
#include <kvq/core.hpp>
#include <kvq/format.hpp>
#include <kvq/mma.hpp>
#include <kvq/block.hpp>
#include <kvq/kv.hpp>
#include <kvq/inject.hpp>
#include <kvq/attention.hpp>
#include <kvq/compact.hpp>
#include <kvq/metrics.hpp>
#include <kvq/verify.hpp>
