// tests/format/formats_under_test.hpp — pairs each kvq format type with the test's own
// layout description, and maps the oracle's enums onto kvq's.
#pragma once

#include <kvq/format.hpp>

#include "oracle.hpp"

namespace kvqtest {

template <class F>
struct ref;
template <> struct ref<kvq::fmt::e4m3> { static constexpr const layout& L = L_e4m3; };
template <> struct ref<kvq::fmt::e5m2> { static constexpr const layout& L = L_e5m2; };
template <> struct ref<kvq::fmt::e3m2> { static constexpr const layout& L = L_e3m2; };
template <> struct ref<kvq::fmt::e2m3> { static constexpr const layout& L = L_e2m3; };
template <> struct ref<kvq::fmt::e2m1> { static constexpr const layout& L = L_e2m1; };
template <> struct ref<kvq::fmt::ue8m0> { static constexpr const layout& L = L_ue8m0; };
template <> struct ref<kvq::fmt::ue4m3> { static constexpr const layout& L = L_ue4m3; };
template <> struct ref<kvq::fmt::e4m3fnuz> { static constexpr const layout& L = L_e4m3fnuz; };
template <> struct ref<kvq::fmt::e5m2fnuz> { static constexpr const layout& L = L_e5m2fnuz; };
template <> struct ref<kvq::fmt::e4m3b11fnuz> { static constexpr const layout& L = L_e4m3b11fnuz; };

inline constexpr rmode all_rmodes[] = {rmode::nearest_even, rmode::toward_zero, rmode::up, rmode::down,
                                       rmode::nearest_away};
inline constexpr ovf all_ovfs[] = {ovf::satfinite, ovf::nosat};

inline kvq::rounding to_kvq(rmode r) {
  switch (r) {
    case rmode::nearest_even: return kvq::rounding::nearest_even;
    case rmode::toward_zero: return kvq::rounding::toward_zero;
    case rmode::up: return kvq::rounding::up;
    case rmode::down: return kvq::rounding::down;
    case rmode::nearest_away: return kvq::rounding::nearest_away;
  }
  return kvq::rounding::nearest_even;
}
inline kvq::overflow to_kvq(ovf o) { return o == ovf::satfinite ? kvq::overflow::satfinite : kvq::overflow::nosat; }

// Calls fn(F{}) for every named format's traits type.
template <class Fn>
void for_each_format(Fn&& fn) {
  fn(kvq::fmt::e4m3{});
  fn(kvq::fmt::e5m2{});
  fn(kvq::fmt::e3m2{});
  fn(kvq::fmt::e2m3{});
  fn(kvq::fmt::e2m1{});
  fn(kvq::fmt::ue8m0{});
  fn(kvq::fmt::ue4m3{});
  fn(kvq::fmt::e4m3fnuz{});
  fn(kvq::fmt::e5m2fnuz{});
  fn(kvq::fmt::e4m3b11fnuz{});
}

}  // namespace kvqtest
