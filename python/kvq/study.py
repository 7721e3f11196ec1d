"""The studies of the kvq command, from Python: ``kvq.run_study(name, **grid)`` runs the
same study code as ``kvq study NAME`` and returns its tables as NumPy columns.
``run_study("model", ...)`` runs the Python-only decoder study (``kvq.model_study``:
SmolLM2-135M with its KV cache stored by kvq's schemes; needs torch and transformers).

Grid options are keyword arguments named as on the command line with ``-`` written
``_`` (``outlier_channels=2`` is ``--outlier-channels 2``). Values are turned into the
option text the command line would get: a list or tuple is comma-joined, an int is
written in decimal, a float with ``repr`` (the shortest text that reads back as the same
double), a str is passed as it is (``contexts="1k,4k"`` works as on the command line).
"""

from __future__ import annotations

import json
import numbers
import os
from typing import Any, Dict, List, Optional, Union

import numpy as np

__all__ = ["run_study", "studies"]


def _engine():
    try:
        from . import _study
    except ImportError as e:  # built without nlohmann-json / CLI11
        raise ImportError("kvq was built without the study engine (it needs nlohmann-json and CLI11 at build "
                          "time); kvq.run_study is not available") from e
    return _study


_MODEL_PARAMS = {"contexts": "token counts (1k = 1024), 64 .. 8k", "schemes": "kvq scheme names",
                 "queries": "attention rows recorded per layer", "citations": "citation trials per context, at most",
                 "out": "directory for the CSV and JSON files",
                 "compounding": "True: instead, FA3 FP8 arithmetic in every layer of the decode step "
                                "(model_compounding)",
                 "paths": "with compounding: FA3 paths (ideal_fp32, sm90, sm90_promote_N)",
                 "steps": "with compounding: decode steps per context"}


def studies() -> List[Dict[str, Any]]:
    """The studies: one dict per study with ``name``, ``summary``, ``description`` and
    ``params`` (each: ``name``, ``kind``, ``default``, ``quick_default``, ``help``,
    ``allowed``; defaults as option text). The last is ``model`` (Python only: it
    needs torch and transformers; ``kvq.model_study``)."""
    out = list(_engine().studies())
    from . import model_study as ms

    def text(v):
        return ",".join(str(x) for x in v) if isinstance(v, list) else str(v)

    out.append({"name": "model", "summary": "SmolLM2-135M (Q4_1 weights) on legal text with kvq KV schemes",
                "description": (ms.__doc__ or "").strip(),
                "params": [{"name": k, "kind": "list" if k in ("contexts", "schemes", "paths") else "text" if k == "out"
                            else "bool" if k == "compounding" else "int",
                            "default": text(ms.FA3_DEFAULTS.get(k, "") if k in ("paths", "steps")
                                            else ms.DEFAULTS.get(k, "")),
                            "quick_default": text(ms.FA3_QUICK.get(k, "") if k in ("paths", "steps")
                                                  else ms.QUICK.get(k, "")), "help": h, "allowed": ""}
                           for k, h in _MODEL_PARAMS.items()]})
    return out


def _run_model_study(quick, seed, threads, grid) -> Dict[str, Any]:
    from . import model_study as ms

    unknown = sorted(set(grid) - set(_MODEL_PARAMS))
    if unknown:
        raise ValueError(f"run_study: the model study has no option {unknown[0]!r} (allowed: "
                         f"{', '.join(_MODEL_PARAMS)})")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= int(seed) < 2**63:
        raise ValueError(f"run_study: seed {seed!r} is not a valid seed")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, numbers.Integral)
                                or not 1 <= int(threads) <= 4096):
        raise ValueError(f"run_study: threads {threads!r} is not a valid thread count (allowed: 1 to 4096)")
    if grid.get("compounding"):
        extra = sorted(set(grid) & {"schemes", "queries", "citations"})
        if extra:
            raise ValueError(f"run_study: the model study's compounding part has no option {extra[0]!r}")
        r = ms.run_compounding(contexts=grid.get("contexts"), paths=grid.get("paths"), steps=grid.get("steps"),
                               quick=bool(quick), out=grid.get("out"), threads=threads)
    else:
        extra = sorted(set(grid) & {"paths", "steps"})
        if extra:
            raise ValueError(f"run_study: option {extra[0]!r} of the model study needs compounding=True")
        r = ms.run(contexts=grid.get("contexts"), schemes=grid.get("schemes"), quick=bool(quick), seed=int(seed),
                   out=grid.get("out"), queries=grid.get("queries"), citations=grid.get("citations"),
                   threads=threads)
    return {"tables": r["tables"], "titles": r["titles"], "help": r["help"], "findings": r["findings"],
            "setup": r["setup"], "grid": r["grid"], "threads": r["setup"]["torch_threads"]}


def _option_text(key: str, value) -> str:
    if isinstance(value, bool) or value is None:
        raise ValueError(f"run_study: {key}={value!r}: grid values are numbers, names or lists of them")
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    if isinstance(value, (list, tuple, np.ndarray)):
        items = list(value)
        if not items:
            raise ValueError(f"run_study: {key} is an empty list")
        for v in items:
            if isinstance(v, (list, tuple, np.ndarray)):
                raise ValueError(f"run_study: {key}: nested lists are not grid values")
        return ",".join(_option_text(key, v) for v in items)
    raise ValueError(f"run_study: {key}={value!r}: grid values are numbers, names or lists of them, "
                     f"not {type(value).__name__}")


def _column(values: list) -> np.ndarray:
    if all(isinstance(v, int) for v in values):
        return np.array(values, dtype=np.int64)
    if all(isinstance(v, (int, float)) for v in values):
        return np.array(values, dtype=np.float64)
    return np.array(values, dtype=object)


def run_study(name: str, quick: bool = False, seed: int = 1, threads: Optional[int] = None,
              kv: Optional[Union[str, os.PathLike]] = None, kv_layer: int = 0, kv_head: int = 0,
              kv_rope: str = "post", kv_treatments: bool = False, non_causal: bool = False,
              **grid) -> Dict[str, Any]:
    """Run the study ``name`` (``kvq.studies()`` lists them) on its default grid
    (``quick=True``: the ``--quick`` grid) with the given overrides.

    ``kv``: run on one head captured from a model (a .safetensors, .npz or .npy file, as
    ``kvq.capture`` writes it), as ``kvq study NAME --kv FILE``; ``kv_layer``,
    ``kv_head``, ``kv_rope``, ``kv_treatments`` and ``non_causal`` are ``--kv-layer``,
    ``--kv-head``, ``--kv-rope``, ``--kv-treatments`` and ``--non-causal``. By default
    the queries are the model's own at the last captured positions, attention is causal
    and no synthetic treatment is applied (docs/kv-input.md); ``setup["kv_input"]``
    records it. Only outliers, rotation and sinks take ``kv``.

    ``seed`` and ``threads`` are ``--seed`` and ``--threads`` (default: all hardware
    threads; the results do not depend on it). Returns a dict:

    * ``tables``: {file stem: {column: 1-D array}}, one entry per CSV file the command
      would write (``"outliers"`` for outliers.csv, ``"sinks_budget"`` for
      sinks_budget.csv): int64 columns for integer cells, float64 for reals, object
      arrays of str for text;
    * ``titles``: {file stem: the table's heading}; ``help``: {file stem: {column: meaning}};
    * ``findings``: the plain-words lines; ``setup`` and ``grid``: dicts, as in the
      study's JSON file; ``threads``: the thread count used.

    Raises ``ValueError`` naming the problem for an unknown study or grid option, or a
    value the grid rejects (the command line's message).
    """
    if not isinstance(name, str):
        raise ValueError(f"run_study: name must be a str, got {type(name).__name__}")
    if name == "model":
        if kv is not None:
            raise ValueError("run_study: study model does not take kv (it runs the model itself)")
        return _run_model_study(quick, seed, threads, grid)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= int(seed) < 2**64:
        raise ValueError(f"run_study: seed {seed!r} is not a valid seed (allowed: 0 to {2**64 - 1})")
    if threads is None:
        threads = 0
    elif isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or not 1 <= int(threads) <= 4096:
        raise ValueError(f"run_study: threads {threads!r} is not a valid thread count (allowed: 1 to 4096)")
    overrides = [(key.replace("_", "-"), _option_text(key, value)) for key, value in grid.items()]
    kv_path = ""
    if kv is not None:
        kv_path = os.fspath(kv)
        if not isinstance(kv_path, str) or not kv_path:
            raise ValueError(f"run_study: kv={kv!r} is not a file name")
        for key, v in (("kv_layer", kv_layer), ("kv_head", kv_head)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 0 <= int(v) < 2**31:
                raise ValueError(f"run_study: {key}={v!r} is not a valid index (allowed: 0, 1, 2, ...)")
        if not isinstance(kv_rope, str):
            raise ValueError(f"run_study: kv_rope={kv_rope!r} (allowed: 'post', 'pre')")
    elif (kv_layer, kv_head, kv_rope, kv_treatments, non_causal) != (0, 0, "post", False, False):
        raise ValueError("run_study: kv_layer, kv_head, kv_rope, kv_treatments and non_causal need kv=FILE")
    raw = _engine().run_study(name, bool(quick), int(seed), int(threads), overrides, kv_path, int(kv_layer),
                              int(kv_head), kv_rope, bool(kv_treatments), bool(non_causal))
    tables, titles, helps = {}, {}, {}
    for t in raw["tables"]:
        stem = name if not t["name"] else f"{name}_{t['name']}"
        cols = [c for c, _ in t["columns"]]
        rows = t["rows"]
        tables[stem] = {c: _column([r[i] for r in rows]) if rows else np.array([], dtype=np.float64)
                        for i, c in enumerate(cols)}
        titles[stem] = t["title"]
        helps[stem] = dict(t["columns"])
    return {"tables": tables, "titles": titles, "help": helps, "findings": list(raw["findings"]),
            "setup": json.loads(raw["setup"]), "grid": json.loads(raw["grid"]), "threads": raw["threads"]}
