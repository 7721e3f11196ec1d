"""A study on a captured head (``kvq.run_study(name, kv=PATH)``, docs/kv-input.md) is the
model's own causal attention, checked against an independent NumPy float64 oracle.

The sinks study's ``sink_mass_ref`` is the mean over the queries of the reference attention
mass on the first ``sinks`` keys, and on a captured head ``gap_achieved`` is the mean over
the queries of (mean sink logit - mean logit of the other keys the query sees). Both
depend only on the captured Q and K and on which keys each query sees, so NumPy recomputes
them from the file alone: the queries are the last ``queries`` captured positions, and the
query at position p sees keys 0..p (all 16 with ``non_causal=True``), logits q.k/sqrt(d),
softmax in float64. kvq's reference is double attention with its own (tree-ordered) sums
and exp, NumPy another order, so the two agree to rounding only: rtol 1e-12. A wrong key
set, wrong query rows, a zeroed query channel or an injected sink moves these numbers by
far more (the test checks that the causal and non-causal oracles differ by more than 1e-3).
"""

import math
import pathlib

import numpy as np
import pytest

import kvq

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "kv"
NPZ = DATA / "small.npz"

try:
    kvq.studies()
    HAVE_ENGINE = True
except ImportError:
    HAVE_ENGINE = False
pytestmark = pytest.mark.skipif(not HAVE_ENGINE, reason="kvq built without the study engine")

RTOL = 1e-12


def captured(layer=0, head=0):
    """Q of query head `head` and K of its K/V head (grouped-query attention), float64."""
    with np.load(NPZ) as z:
        q = z[f"layers.{layer}.q"].astype(np.float64)
        k = z[f"layers.{layer}.k"].astype(np.float64)
    group = q.shape[0] // k.shape[0]
    return q[head], k[head // group]


def oracle(q, k, queries, sinks, causal):
    """(mean sink mass, mean gap) over the last `queries` positions."""
    n, d = k.shape
    mass, gap = [], []
    for p in range(n - queries, n):
        seen = p + 1 if causal else n
        logits = k[:seen] @ q[p] / math.sqrt(d)
        w = np.exp(logits - logits.max())
        w /= w.sum()
        mass.append(w[:sinks].sum())
        gap.append(logits[:sinks].mean() - logits[sinks:].mean())
    return float(np.mean(mass)), float(np.mean(gap))


def sinks_run(**kw):
    return kvq.run_study("sinks", quick=True, threads=2, kv=str(NPZ), paths="bf16", sinks=[1, 4], **kw)


def column(r, sinks, name):
    t = r["tables"]["sinks"]
    vals = t[name][t["sinks"] == sinks]
    assert len(vals) == 2  # keep_sinks 0 and 1 share the reference
    assert vals[0] == vals[1]
    return float(vals[0])


@pytest.mark.parametrize("non_causal", [False, True])
@pytest.mark.parametrize("head", [0, 1])
def test_sinks_reference_matches_numpy(non_causal, head):
    r = sinks_run(kv_head=head, non_causal=non_causal)
    kv = r["setup"]["kv_input"]
    assert kv["causal"] is (not non_causal)
    assert kv["query_rows"] == [12, 13, 14, 15]  # the last 4 (the --quick query count) of 16
    assert kv["treatments"] == []
    assert r["grid"]["deltas"] == [0] and r["grid"]["massive"] == 0
    q, k = captured(head=head)
    for s in (1, 4):
        mass, gap = oracle(q, k, 4, s, causal=not non_causal)
        assert column(r, s, "sink_mass_ref") == pytest.approx(mass, rel=RTOL, abs=1e-300)
        assert column(r, s, "gap_achieved") == pytest.approx(gap, rel=RTOL)


def test_oracle_discriminates():
    # The test above would notice non-causal attention or the first rows as queries.
    q, k = captured()
    causal = oracle(q, k, 4, 4, causal=True)
    assert abs(oracle(q, k, 4, 4, causal=False)[1] - causal[1]) > 1e-3
    first_rows = q[[0, 1, 2, 3]]
    moved = np.vstack([q[:12], first_rows])
    assert abs(oracle(moved, k, 4, 4, causal=True)[1] - causal[1]) > 1e-3


def test_treatments_are_opt_in_and_recorded():
    r = sinks_run(kv_treatments=True, deltas=8)
    kv = r["setup"]["kv_input"]
    assert kv["causal"] is True
    assert "sinks with logit gap Delta (deltas)" in kv["treatments"]
    # Injected sinks: the reference is no longer the captured head's.
    q, k = captured()
    mass, _ = oracle(q, k, 4, 4, causal=True)
    assert abs(column(r, 4, "sink_mass_ref") - mass) > 1e-3


def test_outliers_on_captured_head():
    r = kvq.run_study("outliers", quick=True, threads=2, kv=NPZ, schemes="bf16,nvfp4_te")
    t = r["tables"]["outliers"]
    assert set(t["magnitude"].tolist()) == {0.0}
    assert set(t["context"].tolist()) == {16} and set(t["queries"].tolist()) == {2}
    kv = r["setup"]["kv_input"]
    assert kv["query_rows"] == [14, 15] and kv["causal"] is True and kv["treatments"] == []
    zeroed = kvq.run_study("outliers", quick=True, threads=2, kv=NPZ, schemes="bf16,nvfp4_te", kv_treatments=True,
                           magnitudes=0)
    assert "queries zeroed on outlier_channels" in zeroed["setup"]["kv_input"]["treatments"]
    assert not np.array_equal(zeroed["tables"]["outliers"]["kl"], t["kl"])


def test_bad_kv_input():
    with pytest.raises(ValueError, match="--magnitudes sets a synthetic treatment.*--kv-treatments"):
        kvq.run_study("outliers", quick=True, kv=NPZ, magnitudes=[0, 100])
    with pytest.raises(ValueError, match="study citations does not take kv"):
        kvq.run_study("citations", quick=True, kv=NPZ)
    with pytest.raises(ValueError, match="need kv=FILE"):
        kvq.run_study("outliers", quick=True, non_causal=True)
    with pytest.raises(ValueError, match="kv_rope: unknown value 'rotary'"):
        kvq.run_study("outliers", quick=True, kv=NPZ, kv_rope="rotary")
    with pytest.raises(ValueError, match="--kv-layer 7 is out of range"):
        kvq.run_study("outliers", quick=True, kv=NPZ, kv_layer=7)
