#!/usr/bin/env python3
"""kvq's Python API against its peers, from one run.

    python bench/bench_python.py [--elements N] [--repeats R] [--threads T]

Needs the kvq package and, for the peer columns, ml_dtypes, torch and torchao (a peer
that is not installed is reported as such). Every row checks first that kvq and the
peer give the same bits on the benchmark's own input (the row says "same bits" or
stops with the difference), then times both on the same input: the best of R repeats
of one call over N elements, one thread unless stated, in nanoseconds per element.
Each build of the extension (kvq/_native.py: baseline x86-64, x86-64-v3 and AVX-512, when
this CPU runs them) is timed in its own interpreter (KVQ_ISA), so one run prints all.
torch (and torchao, which runs on torch's kernels) is held to the same instruction level
as the build it is compared with: ATEN_CPU_CAPABILITY=default beside the baseline build
and avx2 beside x86-64-v3 (what a CPU that needs that build would run); beside the
AVX-512 build it picks its own. Each table names the capability torch ran with.
ml_dtypes has no such switch.
Columns: ns/element for kvq (fresh output), kvq with out= (no allocation), the peer,
and the ratio kvq(out=) / peer (< 1: kvq is faster). The first row is a memcpy of the
input (NumPy copyto into an existing array) as the floor.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def best(fn, repeats):
    fn()  # warm: page faults of a fresh output, lazy imports
    t = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def measure(n, repeats, threads):
    """Runs in the child interpreter: returns rows as dicts."""
    import kvq

    rng = np.random.default_rng(0)
    x = (rng.standard_normal(n) * 40).clip(-440, 440).astype(np.float32).reshape(-1, 128)
    rows = []
    per = 1e9 / x.size

    dst = np.empty_like(x)
    rows.append(dict(op="memcpy (numpy.copyto, float32)", peer="", kvq=best(lambda: np.copyto(dst, x), repeats) * per))

    try:
        import ml_dtypes
    except ImportError:
        ml_dtypes = None
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None

    def flat_bits(a):
        return np.asarray(a).view(np.uint8).reshape(-1)

    def row(op, kvq_fn, kvq_out_fn, peers):
        r = dict(op=op, kvq=best(kvq_fn, repeats) * per, kvq_out=best(kvq_out_fn, repeats) * per)
        ref = kvq_fn()
        ref = ref if isinstance(ref, tuple) else (ref,)
        for name, fn, bits in peers:
            got = bits()
            got = got if isinstance(got, tuple) else (got,)
            if not all(np.array_equal(flat_bits(a), flat_bits(b)) for a, b in zip(ref, got)):
                raise SystemExit(f"bench_python: {op}: kvq and {name} differ on the benchmark input")
            rows.append(dict(r, peer=name, peer_ns=best(fn, repeats) * per))
        if not peers:
            rows.append(dict(r, peer="(none)"))

    # Element conversions. Inputs within +-440: the peers have no satfinite.
    for fmt, mld, tdt in (("e4m3", "float8_e4m3fn", "float8_e4m3fn"), ("e5m2", "float8_e5m2", "float8_e5m2")):
        out = np.empty(x.shape, np.uint8)
        peers = []
        if ml_dtypes is not None:
            d = getattr(ml_dtypes, mld)
            peers.append(("ml_dtypes", lambda d=d: x.astype(d), lambda d=d: x.astype(d)))
        if torch is not None:
            tx, td = torch.from_numpy(x), getattr(torch, tdt)
            peers.append(("torch", lambda tx=tx, td=td: tx.to(td), lambda tx=tx, td=td: tx.to(td).view(torch.uint8).numpy()))
        row(f"encode float32 -> {fmt}", lambda fmt=fmt: kvq.encode(x, fmt), lambda fmt=fmt, out=out: kvq.encode(x, fmt, out=out),
            peers)
        codes = kvq.encode(x, fmt)
        fo = np.empty(x.shape, np.float32)
        peers = []
        if ml_dtypes is not None:
            d = getattr(ml_dtypes, mld)
            peers.append(("ml_dtypes", lambda d=d: codes.view(d).astype(np.float32),
                          lambda d=d: codes.view(d).astype(np.float32)))
        if torch is not None:
            tc, td = torch.from_numpy(codes), getattr(torch, tdt)
            peers.append(("torch", lambda tc=tc, td=td: tc.view(td).to(torch.float32),
                          lambda tc=tc, td=td: tc.view(td).to(torch.float32).numpy()))
        row(f"decode {fmt} -> float32", lambda fmt=fmt, codes=codes: kvq.decode(codes, fmt),
            lambda fmt=fmt, codes=codes, fo=fo: kvq.decode(codes, fmt, out=fo), peers)

    # e2m1: ml_dtypes (one code per byte) against kvq's element encoder.
    x6 = (x / 80).astype(np.float32)
    out = np.empty(x.shape, np.uint8)
    peers = []
    if ml_dtypes is not None:
        peers.append(("ml_dtypes", lambda: x6.astype(ml_dtypes.float4_e2m1fn), lambda: x6.astype(ml_dtypes.float4_e2m1fn)))
    row("encode float32 -> e2m1", lambda: kvq.encode(x6, "e2m1"), lambda: kvq.encode(x6, "e2m1", out=out), peers)

    # Block recipes against torchao's own quantizers (same order: nvfp4_torchao,
    # mx*_floor, mx*_rceil_torchao).
    try:
        from torchao.prototype.mx_formats import mx_tensor, nvfp4_tensor
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
    except ImportError:
        mx_tensor = nvfp4_tensor = None
    tx = torch.from_numpy(x) if torch is not None else None

    def qrow(op, scheme, peer):
        c, s, tv = kvq.quantize(x, scheme)
        oc, os_ = np.empty_like(c), np.empty_like(s)
        row(op, lambda: kvq.quantize(x, scheme)[:2], lambda: kvq.quantize(x, scheme, out=(oc, os_))[:2],
            [peer] if peer else [])
        if threads > 1:
            rows[-1]["kvq_threads"] = best(lambda: kvq.quantize(x, scheme, out=(oc, os_), threads=threads), repeats) * per

    def torchao_nvfp4():
        s, d = nvfp4_tensor.nvfp4_quantize(tx, block_size=16)
        return d, s

    def torchao_mx(dtype, mode):
        def f():
            s, d = mx_tensor.to_mx(tx, dtype, 32, mode)
            return d, s
        return f

    def as_bits(f):
        def g():
            d, s = f()
            return d.view(torch.uint8).numpy(), s.view(torch.uint8).numpy()
        return g

    have = nvfp4_tensor is not None
    qrow("quantize nvfp4_torchao", "nvfp4_torchao",
         ("torchao", torchao_nvfp4, as_bits(torchao_nvfp4)) if have else None)
    qrow("quantize nvfp4_te", "nvfp4_te", None)
    qrow("quantize nvfp4_vllm", "nvfp4_vllm", None)
    for scheme, dtype, mode in (("mxfp8_e4m3_floor", "float8_e4m3fn", "FLOOR"),
                                ("mxfp8_e4m3_rceil_torchao", "float8_e4m3fn", "RCEIL"),
                                ("mxfp4_floor", "float4_e2m1fn_x2", "FLOOR"),
                                ("mxfp4_rceil_torchao", "float4_e2m1fn_x2", "RCEIL")):
        peer = None
        if have:
            f = torchao_mx(getattr(torch, dtype), getattr(ScaleCalculationMode, mode))
            peer = ("torchao", f, as_bits(f))
        qrow(f"quantize {scheme}", scheme, peer)
    return rows


def child(args):
    rows = measure(args.elements, args.repeats, args.threads)
    import kvq

    try:
        import torch

        torch_cpu = torch.backends.cpu.get_cpu_capability()
    except ImportError:
        torch_cpu = "not installed"
    print(json.dumps(dict(isa=kvq.isa, torch_cpu=torch_cpu, rows=rows)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--elements", type=int, default=1 << 22, help="elements per call (a multiple of 128)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2, help="also time quantize on this many threads")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.elements <= 0 or args.elements % 128:
        ap.error("--elements must be a positive multiple of 128")
    if args.child:
        return child(args)
    import kvq

    builds = ["baseline"]
    if kvq._kvq.cpu_supports_x86_64_v3():
        try:
            from kvq import _kvq_v3  # noqa: F401
            builds.append("x86-64-v3")
        except ImportError:
            pass
    if kvq._kvq.cpu_supports_avx512():
        try:
            from kvq import _kvq_avx512  # noqa: F401
            builds.append("avx512")
        except ImportError:
            pass
    # torch's kernels at the build's instruction level (unset: torch's own choice)
    torch_capability = {"baseline": "default", "x86-64-v3": "avx2"}
    results = {}
    for b in builds:
        env = dict(os.environ, KVQ_ISA=b)
        env.pop("ATEN_CPU_CAPABILITY", None)
        if b in torch_capability:
            env["ATEN_CPU_CAPABILITY"] = torch_capability[b]
        r = subprocess.run([sys.executable, __file__, "--child", "--elements", str(args.elements), "--repeats",
                            str(args.repeats), "--threads", str(args.threads)],
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            return r.returncode
        results[b] = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"kvq Python API vs peers: {args.elements} float32 elements per call, best of {args.repeats}, one thread "
          f"unless stated; ns/element; every kvq/peer pair checked for the same bits first")
    for b, res in results.items():
        rows = res["rows"]
        print(f"\nbuild: {b} (torch's kernels: {res['torch_cpu']})")
        print(f"{'operation':34} {'kvq':>7} {'out=':>7} {f'{args.threads} thr':>7} {'peer':>10} {'peer ns':>8} "
              f"{'out=/peer':>9}")
        for r in rows:
            if "peer_ns" in r:
                ratio = f"{r['kvq_out'] / r['peer_ns']:9.2f}"
                pn = f"{r['peer_ns']:8.3f}"
            else:
                ratio, pn = f"{'':9}", f"{'':8}"
            ko = f"{r['kvq_out']:7.3f}" if "kvq_out" in r else f"{'':7}"
            kt = f"{r['kvq_threads']:7.3f}" if "kvq_threads" in r else f"{'':7}"
            print(f"{r['op']:34} {r['kvq']:7.3f} {ko} {kt} {r['peer']:>10} {pn} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
