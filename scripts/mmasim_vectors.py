#!/usr/bin/env python3
"""Test vectors for kvq::mma from MMA-Sim (microsoft/MMA-Sim, MIT licence, arXiv 2511.10909).

MMA-Sim is not part of kvq: put a checkout of it on PYTHONPATH (it needs torch) and run

  python3 scripts/mmasim_vectors.py generate OUTDIR      # block-scaled vectors
  python3 scripts/mmasim_vectors.py generate-mfma OUTDIR # AMD CDNA3 MFMA vectors
  python3 scripts/mmasim_vectors.py hardware TCDIR       # MMA-Sim against the recorded
                                                          # hardware inner products

Each instruction model is MMA-Sim's own simulator class, instantiated with the PTX
qualifier; the only change is m = n = 1 (one inner product per call, which the classes
compute element by element anyway).

Output format of `generate` (one file per instruction kind, gzip text, one case a line):
  a: K 8-hex-digit fp32 words (element values), '|',
  b: K words, '|', sa: K/block scale words, '|', sb: K/block words, '|',
  c: one word, '|', d: one word (MMA-Sim's result)
Scale words are the fp32 word of the scale's value (ue8m0 2^e; ue4m3 the e4m3 value,
its NaN written as the fp32 word 7fc00000).
"""
import gzip
import math
import random
import struct
import sys

import torch


def w(x):
    return "%08x" % struct.unpack("<I", struct.pack("<f", float(x)))[0]


def fw(u):
    return struct.unpack("<f", struct.pack("<I", u))[0]


def single(inst):
    inst.m = 1
    inst.n = 1
    return inst


# ---------------------------------------------------------------- hardware comparison
def hardware(tcdir):
    from mmasim.simulator import nv_ptx as sim

    def read(path):
        with gzip.open(path, "rt") as f:
            return [l.strip() for l in f if l.strip()]

    files = [
        # gpu, folder, out, MMA-Sim class, arch, qualifier, c is zero
        ("A100", "bf16", "fp32", sim.mma, "Ampere", "m16n8k8.f32.bf16.bf16.f32", False),
        ("A100", "fp16", "fp32", sim.mma, "Ampere", "m16n8k8.f32.f16.f16.f32", False),
        ("A100", "fp16", "fp16", sim.mma, "Ampere", "m16n8k8.f16.f16.f16.f16", False),
        ("L40S", "bf16", "fp32", sim.mma, "Ada Lovelace", "m16n8k16.f32.bf16.bf16.f32", False),
        ("L40S", "fp16", "fp32", sim.mma, "Ada Lovelace", "m16n8k16.f32.f16.f16.f32", False),
        ("L40S", "fp16", "fp16", sim.mma, "Ada Lovelace", "m16n8k16.f16.f16.f16.f16", False),
        ("L40S", "E4M3", "fp32", sim.mma, "Ada Lovelace", "m16n8k32.f32.e4m3.e4m3.f32", False),
        ("L40S", "E5M2", "fp32", sim.mma, "Ada Lovelace", "m16n8k32.f32.e5m2.e5m2.f32", False),
        ("H100", "bf16", "fp32", sim.wgmma, "Hopper", "m64n8k16.f32.bf16.bf16", False),
        ("H100", "fp16", "fp32", sim.wgmma, "Hopper", "m64n8k16.f32.f16.f16", False),
        ("H100", "fp16", "fp16", sim.wgmma, "Hopper", "m64n8k16.f16.f16.f16", False),
        ("H100", "E4M3", "fp32", sim.wgmma, "Hopper", "m64n8k32.f32.e4m3.e4m3", True),
        ("H100", "E5M2", "fp32", sim.wgmma, "Hopper", "m64n8k32.f32.e5m2.e5m2", True),
        ("B200", "bf16", "fp32", sim.tcgen05mma, "Blackwell", "m128n8k16.f32.bf16.bf16", False),
        ("B200", "fp16", "fp32", sim.tcgen05mma, "Blackwell", "m128n8k16.f32.f16.f16", False),
        ("B200", "fp16", "fp16", sim.tcgen05mma, "Blackwell", "m128n8k16.f16.f16.f16", False),
        ("B200", "E4M3", "fp32", sim.tcgen05mma, "Blackwell", "m128n8k32.f32.e4m3.e4m3", False),
        ("B200", "E5M2", "fp32", sim.tcgen05mma, "Blackwell", "m128n8k32.f32.e5m2.e5m2", False),
    ]
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
    for gpu, fmt, out, cls, arch, q, czero in files:
        inst = single(cls(arch, q))
        base = "%s/%s/%s" % (tcdir, gpu, fmt)
        A = read("%s/a_%s_%s.txt.gz" % (base, gpu, fmt))
        B = read("%s/b_%s_%s.txt.gz" % (base, gpu, fmt))
        C = read("%s/c_%s_fp32.txt.gz" % (base, gpu))
        D = read("%s/d_%s_%s.txt.gz" % (base, gpu, out))
        bad = []
        n = min(limit, len(A))
        for i in range(n):
            a = [fw(int(t, 16)) for t in A[i].split()]
            b = [fw(int(t, 16)) for t in B[i].split()]
            c = 0.0 if czero else fw(int(C[i], 2))
            At = torch.tensor([a], dtype=torch.float32).to(inst.a_type)
            Bt = torch.tensor([b], dtype=torch.float32).to(inst.b_type).T.contiguous()
            Ct = torch.tensor([[c]], dtype=torch.float32).to(inst.c_type)
            # pad to the instruction's k with zeros
            if At.shape[1] < inst.k:
                pad = inst.k - At.shape[1]
                At = torch.cat([At, torch.zeros((1, pad), dtype=inst.a_type)], 1)
                Bt = torch.cat([Bt, torch.zeros((pad, 1), dtype=inst.b_type)], 0)
            d = inst(At, Bt, Ct)[0, 0].float().item()
            want = int(D[i], 2)
            if int(w(d), 16) != want:
                bad.append(i + 1)
        print("%s %s -> %s (%s %s): %d of %d differ%s" % (
            gpu, fmt, out, arch, q, len(bad), n,
            (", first lines " + " ".join(map(str, bad[:8]))) if bad else ""), flush=True)


# ---------------------------------------------------------------- block-scaled vectors
FMT_DTYPE = {
    "e4m3": torch.float8_e4m3fn,
    "e5m2": torch.float8_e5m2,
}
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def codes(fmt):
    """Every finite value of an element format, with and without sign."""
    if fmt == "e2m1":
        return E2M1 + [-x for x in E2M1]
    vals = torch.arange(256, dtype=torch.uint8).view(FMT_DTYPE[fmt]).float().tolist()
    return [v for v in vals if math.isfinite(v)]


def special(fmt):
    if fmt == "e4m3":
        return [float("nan")]
    if fmt == "e5m2":
        return [float("inf"), float("-inf"), float("nan")]
    return []


def scale_values(sfmt):
    if sfmt == "ue8m0":
        return [2.0 ** e for e in range(-127, 128)]
    vals = torch.arange(0x7F, dtype=torch.uint8).view(torch.float8_e4m3fn).float().tolist()
    return vals  # 0 .. 448, no NaN


def rand_fp32(rng, e_lo, e_hi):
    m = rng.getrandbits(23)
    e = rng.randint(e_lo, e_hi)
    x = (1.0 + m * 2.0 ** -23) * 2.0 ** e
    return -x if rng.random() < 0.5 else x


def fp32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


class Instr:
    def __init__(self, name, cls, arch, qualifier, kind, sfmt, block, pairs):
        self.name, self.kind, self.sfmt, self.block, self.pairs = name, kind, sfmt, block, pairs
        self.inst = single(cls(arch, qualifier))
        self.k = self.inst.k
        self.nscales = self.k // block

    def run(self, fa, fb, a, b, sa, sb, c):
        from mmasim.isa.common import encode_fp4
        inst = self.inst
        if self.kind == "mxf8f6f4":
            A = torch.tensor([a], dtype=torch.float32).to(FMT_DTYPE[fa])
            B = torch.tensor([b], dtype=torch.float32).to(FMT_DTYPE[fb]).T.contiguous()
        else:
            A = torch.zeros((1, self.k // 2), dtype=torch.uint8)
            B = torch.zeros((self.k // 2, 1), dtype=torch.uint8)
            for i in range(self.k):
                A[0, i // 2] |= encode_fp4(a[i]) << (i % 2 * 4)
                B[i // 2, 0] |= encode_fp4(b[i]) << (i % 2 * 4)
        C = torch.tensor([[c]], dtype=torch.float32)
        SA = torch.tensor([sa], dtype=torch.float32).to(inst.s_type)
        SB = torch.tensor([sb], dtype=torch.float32).to(inst.s_type).T.contiguous()
        # the scales must be exactly the values written to the file
        assert all(x == y or (x != x and y != y) for x, y in zip(SA.float().flatten().tolist(), sa))
        D = inst(A, B, C, SA, SB)
        return D.float().view(torch.int32)[0, 0].item() & 0xFFFFFFFF

    def line(self, fa, fb, a, b, sa, sb, c):
        d = self.run(fa, fb, a, b, sa, sb, c)
        return "%s %s %d %s %s | %s | %s | %s | %s | %s | %08x" % (
            self.kind, self.sfmt, self.block, fa, fb,
            " ".join(map(w, a)), " ".join(map(w, b)), " ".join(map(w, sa)), " ".join(map(w, sb)), w(c), d)


def cases(ins, rng, n_random):
    """(fa, fb, a, b, sa, sb, c) tuples: random, then hard cases."""
    k, ns = ins.k, ins.nscales
    out = []
    svals = scale_values(ins.sfmt)
    for t in range(n_random):
        fa, fb = ins.pairs[t % len(ins.pairs)]
        ca, cb = codes(fa), codes(fb)
        a = [rng.choice(ca) for _ in range(k)]
        b = [rng.choice(cb) for _ in range(k)]
        if ins.sfmt == "ue8m0":
            spread = 127 if t % 4 == 0 else 20
            sa = [2.0 ** rng.randint(-spread, spread) for _ in range(ns)]
            sb = [2.0 ** rng.randint(-spread, spread) for _ in range(ns)]
        else:
            sa = [rng.choice(svals) for _ in range(ns)]
            sb = [rng.choice(svals) for _ in range(ns)]
        r = rng.random()
        if r < 0.15:
            c = 0.0
        else:
            # c near the products' scale, so that alignment and cancellation matter
            e = int(math.log2(max(sa))) + int(math.log2(max(sb))) + rng.randint(-30, 12)
            e = max(-149, min(127, e))
            c = rand_fp32(rng, e, e) if e >= -126 else fp32(rng.getrandbits(23) * 2.0 ** -149)
        out.append((fa, fb, a, b, sa, sb, c))
    # hard cases
    one = 1.0
    for fa, fb in ins.pairs:
        ca, cb = codes(fa), codes(fb)
        amax, bmax = max(ca), max(cb)
        amin = min(x for x in ca if x > 0)  # smallest subnormal
        bmin = min(x for x in cb if x > 0)
        smax = max(svals)
        smin = min(x for x in svals if x > 0)
        nan_s = float("nan")
        H = []
        ones_s = [one] * ns
        # scale extremes: overflow to Inf, underflow to subnormal / zero
        H.append(([amax] * k, [bmax] * k, [smax] * ns, [smax] * ns, 0.0))
        H.append(([amax] * k, [-bmax] * k, [smax] * ns, [smax] * ns, 0.0))
        H.append(([amax] * k, [bmax] * k, [smin] * ns, [smin] * ns, 0.0))
        H.append(([amax] * k, [bmax] * k, [smax] * ns, [smin] * ns, 1.0))
        H.append(([amin] * k, [bmin] * k, [smin] * ns, [smin] * ns, 0.0))
        H.append(([amin] * k, [bmin] * k, [smax] * ns, [smax] * ns, -0.0))
        if ins.sfmt == "ue8m0":
            for e in (-60, -70, -75, -80, -90):
                H.append(([amax, amin] + [amin] * (k - 2), [bmax] * k, [2.0 ** e] * ns, [2.0 ** e] * ns, 0.0))
                H.append(([amax] * k, [bmax] * k, [2.0 ** e] * ns, [2.0 ** e] * ns, fp32(2.0 ** -130)))
        else:
            H.append(([amax] * k, [bmax] * k, [0.0] * ns, [smax] * ns, 1.0))
            H.append(([amax] * k, [bmax] * k, [0.0] + [smax] * (ns - 1), [smax] * ns, -3.0))
            sub = [x for x in svals if 0 < x < 2.0 ** -6]
            H.append(([amax] * k, [bmin] * k, sub[:1] * ns, sub[-1:] * ns, fp32(2.0 ** -140)))
        # NaN scales
        H.append(([one] * k, [one] * k, [nan_s] + ones_s[1:], ones_s, 1.0))
        H.append(([one] * k, [one] * k, ones_s, ones_s[:-1] + [nan_s], 0.0))
        # c specials and extremes
        H.append(([one] * k, [one] * k, ones_s, ones_s, float("nan")))
        H.append(([one] * k, [one] * k, ones_s, ones_s, 3.4028234663852886e38))
        H.append(([amax] * k, [bmax] * k, [2.0 ** 100 if ins.sfmt == "ue8m0" else smax] * ns, ones_s, 3.4028234663852886e38))
        H.append(([one] * k, [-one] * k, ones_s, ones_s, -3.4028234663852886e38))
        H.append(([one] * k, [one] * k, ones_s, ones_s, fp32(2.0 ** -149)))
        H.append(([amin] * k, [bmin] * k, ones_s, ones_s, fp32(-(2.0 ** -140))))
        if ins.kind == "mxf8f6f4":
            H.append(([one] * k, [one] * k, ones_s, ones_s, float("inf")))
            H.append(([one] * k, [one] * k, ones_s, ones_s, float("-inf")))
        # exact cancellation, tiny remainder, signed zeros
        half = k // 2
        a = [rng.choice(ca) for _ in range(half)]
        b = [rng.choice(cb) for _ in range(half)]
        H.append((a + a, b + [-x for x in b], ones_s, ones_s, 0.0))
        H.append((a + a, b + [-x for x in b], ones_s, ones_s, -0.0))
        H.append(([-0.0] * k, [one] * k, ones_s, ones_s, -0.0))
        H.append(([0.0] * k, [0.0] * k, ones_s, ones_s, -0.0))
        H.append((a + a[:-1] + [amin], b + [-x for x in b[:-1]] + [bmin], ones_s, ones_s, 0.0))
        H.append(([amax] + [amin] * (k - 1), [bmax] + [-bmin] * (k - 1), ones_s, ones_s, -(amax * bmax)))
        # window: one large term and many small ones; c large against small products
        H.append(([amax] + [amin] * (k - 1), [bmax] + [bmin] * (k - 1), ones_s, ones_s, 0.0))
        H.append(([amin] * k, [bmin] * k, ones_s, ones_s, 2.0 ** 20))
        H.append(([amin] * k, [-bmin] * k, ones_s, ones_s, 1.0))
        H.append(([amax] * k, [bmax] * k, ones_s, ones_s, fp32(2.0 ** -100)))
        # zero elements with large scales (the exponent of zero takes part in the maximum)
        H.append(([0.0] * k, [bmax] * k, [smax] * ns, [smax] * ns, 1.0))
        H.append(([0.0] * (k - 1) + [amin], [bmax] * k, [smax] * ns, [smax] * ns, 1.0))
        if ins.kind == "mxf8f6f4":
            for sa_ in special(fa):
                H.append(([sa_] + [one] * (k - 1), [one] * k, ones_s, ones_s, 0.0))
                H.append(([sa_] + [one] * (k - 1), [0.0] * k, ones_s, ones_s, 0.0))
            if fa == "e5m2" and fb == "e5m2":
                inf = float("inf")
                H.append(([inf, inf] + [one] * (k - 2), [one, -one] + [one] * (k - 2), ones_s, ones_s, 0.0))
                H.append(([inf] + [one] * (k - 1), [one] * k, ones_s, ones_s, float("-inf")))
                H.append(([inf] + [one] * (k - 1), [one] * k, [smin] * ns, [smin] * ns, 0.0))
        for h in H:
            out.append((fa, fb) + h)
    return out


def instructions():
    from mmasim.simulator import nv_ptx as sim
    fp8 = [("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3"), ("e5m2", "e5m2")]
    fp4 = [("e2m1", "e2m1")]
    tc, ms = sim.tcgen05mma_block_scale, sim.mma_block_scale
    return [
        # file name, class, arch, qualifier, kind, scale, block, element pairs, random count
        ("tcgen05_mxf8f6f4_ue8m0_b32", tc, "Blackwell", "m128n8k32.block32.f32.%s.%s.ue8m0", "mxf8f6f4", "ue8m0", 32, fp8, 320),
        ("tcgen05_mxf4nvf4_ue8m0_b32", tc, "Blackwell", "m128n8k64.block32.f32.%s.%s.ue8m0", "mxf4nvf4", "ue8m0", 32, fp4, 300),
        ("tcgen05_mxf4nvf4_ue8m0_b16", tc, "Blackwell", "m128n8k64.block16.f32.%s.%s.ue8m0", "mxf4nvf4", "ue8m0", 16, fp4, 300),
        ("tcgen05_mxf4nvf4_ue4m3_b16", tc, "Blackwell", "m128n8k64.block16.f32.%s.%s.ue4m3", "mxf4nvf4", "ue4m3", 16, fp4, 300),
        ("mma_sm120_mxf8f6f4_ue8m0_b32", ms, "RTX Blackwell", "m16n8k32.block32.f32.%s.%s.f32.ue8m0", "mxf8f6f4", "ue8m0", 32, fp8, 100),
        ("mma_sm120_mxf4nvf4_ue8m0_b32", ms, "RTX Blackwell", "m16n8k64.block32.f32.%s.%s.f32.ue8m0", "mxf4nvf4", "ue8m0", 32, fp4, 100),
        ("mma_sm120_mxf4nvf4_ue4m3_b16", ms, "RTX Blackwell", "m16n8k64.block16.f32.%s.%s.f32.ue4m3", "mxf4nvf4", "ue4m3", 16, fp4, 100),
    ]


def generate(outdir):
    import os
    os.makedirs(outdir, exist_ok=True)
    for fname, cls, arch, qfmt, kind, sfmt, block, pairs, nrand in instructions():
        rng = random.Random("kvq-mmasim-" + fname)
        by_pair = {}
        for fa, fb in pairs:
            by_pair[(fa, fb)] = Instr(fname, cls, arch, qfmt % (fa, fb), kind, sfmt, block, pairs)
        first = by_pair[pairs[0]]
        lines, skipped = [], 0
        for fa, fb, a, b, sa, sb, c in cases(first, rng, nrand):
            try:
                lines.append(by_pair[(fa, fb)].line(fa, fb, a, b, sa, sb, c))
            except (OverflowError, ValueError) as e:  # cases MMA-Sim does not define
                skipped += 1
        path = os.path.join(outdir, fname + ".txt.gz")
        with gzip.GzipFile(path, "wb", mtime=0) as f:
            f.write(("\n".join(lines) + "\n").encode())
        print("%s: %d cases (%d left out: MMA-Sim raises)" % (fname, len(lines), skipped), flush=True)


# ---------------------------------------------------------------- AMD CDNA3 MFMA vectors
MFMA_DTYPE = {
    "e4m3fnuz": torch.float8_e4m3fnuz,
    "e5m2fnuz": torch.float8_e5m2fnuz,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp32": torch.float32,
}
MFMA_AMD_NAME = {"e4m3fnuz": "fp8", "e5m2fnuz": "bf8"}


def mfma_codes(fmt):
    """Finite values of an operand format: every code of fp8, random bit patterns otherwise."""
    if fmt in ("e4m3fnuz", "e5m2fnuz"):
        vals = torch.arange(256, dtype=torch.uint8).view(MFMA_DTYPE[fmt]).float().tolist()
        return [v for v in vals if math.isfinite(v)]
    return None


def mfma_rand(rng, fmt, e_lo, e_hi):
    """A random finite value of fmt with exponent in [e_lo, e_hi] (clamped to the format)."""
    codes = mfma_codes(fmt)
    if codes is not None:
        return rng.choice(codes)
    mbits = {"bf16": 7, "fp16": 10, "fp32": 23}[fmt]
    emin, emax = {"bf16": (-126, 127), "fp16": (-14, 15), "fp32": (-126, 127)}[fmt]
    if rng.random() < 0.03:
        x = rng.getrandbits(mbits) * 2.0 ** (emin - mbits)  # subnormal or zero
    else:
        lo = min(max(emin, e_lo), emax)
        e = rng.randint(lo, max(lo, min(emax, e_hi)))
        x = (1.0 + rng.getrandbits(mbits) * 2.0 ** -mbits) * 2.0 ** e
    x = -x if rng.random() < 0.5 else x
    return torch.tensor(x, dtype=torch.float32).to(MFMA_DTYPE[fmt]).float().item()


def mfma_max(fmt):
    return {"e4m3fnuz": 240.0, "e5m2fnuz": 57344.0, "bf16": 3.3895313892515355e38, "fp16": 65504.0,
            "fp32": 3.4028234663852886e38}[fmt]


def mfma_min(fmt):
    return {"e4m3fnuz": 2.0 ** -10, "e5m2fnuz": 2.0 ** -17, "bf16": 2.0 ** -133, "fp16": 2.0 ** -24,
            "fp32": 2.0 ** -149}[fmt]


def mfma_emax(fmt):
    return {"e4m3fnuz": 7, "e5m2fnuz": 15, "bf16": 127, "fp16": 15, "fp32": 127}[fmt]


class Mfma:
    def __init__(self, preset, qualifier, fa, fb):
        from mmasim.simulator import amd
        self.preset, self.fa, self.fb = preset, fa, fb
        self.inst = single(amd.mfma("CDNA3", qualifier))
        self.k = self.inst.k
        assert self.inst.a_type == MFMA_DTYPE[fa] and self.inst.b_type == MFMA_DTYPE[fb]

    def line(self, a, b, c):
        inst = self.inst
        A = torch.tensor([a], dtype=torch.float32).to(inst.a_type)
        B = torch.tensor([b], dtype=torch.float32).to(inst.b_type).T.contiguous()
        # the operands must be exactly the values written to the file
        for x, y in zip(A.float().flatten().tolist() + B.float().flatten().tolist(), a + b):
            assert x == y or (x != x and y != y), (x, y)
        C = torch.tensor([[c]], dtype=torch.float32)
        d = inst(A, B, C).float()[0, 0].item()
        dw = "7fffffff" if d != d else w(d)  # MMA-Sim's NaN is its host's fp64 NaN
        return "%s %s %s | %s | %s | %s | %s" % (
            self.preset, self.fa, self.fb, " ".join(map(w, a)), " ".join(map(w, b)), w(c), dw)


def mfma_cases(ins, rng, n_random):
    """(a, b, c) tuples for one instruction: random, then hard cases."""
    k, fa, fb = ins.k, ins.fa, ins.fb
    out = []
    for t in range(n_random):
        r = t % 4
        if r == 0:
            lo, hi = -127, 127          # anything
        elif r == 1:
            lo, hi = -4, 4              # close exponents: long carries, cancellation
        else:
            base = rng.randint(-60, 60)
            lo, hi = base - 12, base + 12
        a = [mfma_rand(rng, fa, lo, hi) for _ in range(k)]
        b = [mfma_rand(rng, fb, lo, hi) for _ in range(k)]
        if rng.random() < 0.1:
            for i in rng.sample(range(k), k // 4):
                (a if rng.random() < 0.5 else b)[i] = 0.0
        if rng.random() < 0.15:
            c = 0.0
        else:
            big = max(abs(x * y) for x, y in zip(a, b)) or 1.0
            e = max(-149, min(127, int(math.floor(math.log2(big))) + rng.randint(-30, 8)))
            c = rand_fp32(rng, e, e) if e >= -126 else fp32(rng.getrandbits(23) * 2.0 ** -149)
        out.append((a, b, c))
    one, z = 1.0, [0.0] * k
    amax, bmax, amin, bmin = mfma_max(fa), mfma_max(fb), mfma_min(fa), mfma_min(fb)
    nan, inf = float("nan"), float("inf")
    H = []
    # cancellation: exact, with a tiny remainder, with a large c
    half = k // 2
    a = [mfma_rand(rng, fa, -3, 3) for _ in range(half)]
    b = [mfma_rand(rng, fb, -3, 3) for _ in range(half)]
    H.append((a + a, b + [-x for x in b], 0.0))
    H.append((a + a, b + [-x for x in b], -0.0))
    H.append((a + a, b + [-x for x in b], 1.5))
    H.append((a + a[:-1] + [amin], b + [-x for x in b[:-1]] + [bmin], 0.0))
    H.append(([amax] + [one] * (k - 1), [bmax] + [one] * (k - 1), -(amax * bmax)))
    # ties at the rounding point: c = 1 and products summing to half an fp32 ulp (and 3/2)
    for cc in (1.0, -1.0, 1.0 + 2.0 ** -23, -(1.0 + 2.0 ** -23), 3.0):
        for p in (2.0 ** -24, 2.0 ** -23 + 2.0 ** -24, 2.0 ** -25):
            e = int(math.floor(math.log2(p)))
            x = 2.0 ** (e // 2)
            y = p / x
            if abs(y) > bmax or abs(y) < bmin or x < amin:
                continue
            yv = torch.tensor(y).to(MFMA_DTYPE[fb]).float().item()
            if yv != y:
                continue
            H.append(([x] + [0.0] * (k - 1), [y] + [0.0] * (k - 1), fp32(cc)))
            H.append(([x, -x] + [0.0] * (k - 2), [y, y / 2 if y / 2 >= bmin else y] + [0.0] * (k - 2), fp32(cc)))
    # products below c's window, negative (round down): floor against truncation
    H.append(([amin] * k, [-bmin] * k, 1.0))
    H.append(([amin] * k, [bmin] * k, -1.0))
    H.append(([one] * k, [-mfma_rand(rng, fb, -30, -20) for _ in range(k)], 2.0 ** 20))
    H.append(([one] * k, [one] * k, 2.0 ** 30))
    H.append(([one] * k, [-one] * k, 2.0 ** 24))
    H.append(([one] * k, [one] * k, -(2.0 ** 26)))
    # c just inside / outside 25 bits below the products (fp8 drops it), negative c
    for de in (-23, -24, -25, -26, -27, -40):
        H.append(([one] * k, [one] * k, fp32(-(2.0 ** de) * 1.5)))
        H.append(([one] * k, [one] * k, fp32(2.0 ** de * 1.25)))
    # one large product and many small ones (the product window)
    H.append(([amax] + [amin] * (k - 1), [bmax] + [bmin] * (k - 1), 0.0))
    H.append(([one] + [one] * (k - 1), [one] + [fp32(2.0 ** -20)] * (k - 1), 0.0) if fb != "e4m3fnuz" else
             ([one] * k, [one] + [2.0 ** -10] * (k - 1), 0.0))
    H.append(([-one] + [one] * (k - 1), [one] + [mfma_min(fb) * 8] * (k - 1), 0.0))
    # subnormals and extremes
    H.append(([amin] * k, [bmin] * k, 0.0))
    H.append(([amin] * k, [-bmin] * k, fp32(2.0 ** -149)))
    H.append(([amax] * k, [bmax] * k, 0.0))
    H.append(([amax] * k, [-bmax] * k, 3.4028234663852886e38))
    H.append(([amax] * k, [bmax] * k, 3.4028234663852886e38))
    H.append(([one] * k, [one] * k, -3.4028234663852886e38))
    H.append(([one] * k, [one] * k, fp32(-(2.0 ** -140))))
    H.append(([amin] * k, [bmin] * k, fp32(2.0 ** -130)))
    # zero operands take part in the alignment maximum (exponent -126 + e(other))
    H.append((z, [bmax] * k, 1.0))
    H.append((z, [bmax] * k, fp32(1.0 + 2.0 ** -23)))
    H.append((z[:-1] + [one], [bmax] * (k - 1) + [one], fp32(1.0 + 2.0 ** -23)))
    H.append((z, [bmax] * k, fp32(0.5 + 2.0 ** -24)))
    H.append((z, [-bmax] * k, fp32(-(0.5 + 2.0 ** -24))))
    H.append((z, [bmax] * k, fp32(3 * 2.0 ** -149)))
    H.append((z, [bmax] * k, fp32(-(2.0 ** -126 + 2.0 ** -149))))
    H.append((z, z, fp32(2.0 ** -149)))
    H.append((z, z, -0.0))
    H.append(([-0.0] * k if fa not in ("e4m3fnuz", "e5m2fnuz") else z, [one] * k, -0.0))
    # special values
    H.append(([one] * k, [one] * k, nan))
    H.append(([one] * k, [one] * k, inf))
    H.append(([one] * k, [one] * k, -inf))
    H.append(([nan] + [one] * (k - 1), [one] * k, 0.0))
    H.append(([one] * k, [one] * (k - 1) + [nan], 2.0))
    if fa not in ("e4m3fnuz", "e5m2fnuz"):
        H.append(([inf] + [one] * (k - 1), [one] * k, 0.0))
        H.append(([inf] + [one] * (k - 1), [0.0] * k, 0.0))
        H.append(([inf, inf] + [one] * (k - 2), [one, -one] + [one] * (k - 2), 0.0))
        H.append(([inf] + [one] * (k - 1), [one] * k, -inf))
        H.append(([-inf] + [one] * (k - 1), [one] * k, -inf))

    def cv(fmt, v):  # the hard cases' operands as values of their format
        return [torch.tensor(v, dtype=torch.float32).to(MFMA_DTYPE[fmt]).float().tolist()][0]
    return out + [(cv(fa, a), cv(fb, b), c) for a, b, c in H]


def mfma_instructions():
    fp8 = [("e4m3fnuz", "e4m3fnuz"), ("e4m3fnuz", "e5m2fnuz"), ("e5m2fnuz", "e4m3fnuz"), ("e5m2fnuz", "e5m2fnuz")]
    return [
        # file name, preset, [(qualifier, fa, fb)], random cases per qualifier
        ("mfma_cdna3_fp8", "cdna3_fp8",
         [("f32_16x16x32_%s_%s" % (MFMA_AMD_NAME[x], MFMA_AMD_NAME[y]), x, y) for x, y in fp8] +
         [("f32_32x32x16_fp8_bf8", "e4m3fnuz", "e5m2fnuz")], 80),
        ("mfma_cdna3_bf16", "cdna3_bf16", [("f32_16x16x16_bf16", "bf16", "bf16"), ("f32_32x32x8_bf16", "bf16", "bf16")], 150),
        ("mfma_cdna3_bf16_k4", "cdna3_bf16_k4", [("f32_4x4x4_16b_bf16", "bf16", "bf16")], 150),
        ("mfma_cdna3_fp16", "cdna3_fp16", [("f32_16x16x16_f16", "fp16", "fp16"), ("f32_32x32x8_f16", "fp16", "fp16")], 150),
        ("mfma_cdna3_fp16_k4", "cdna3_fp16_k4", [("f32_16x16x4_4b_f16", "fp16", "fp16")], 150),
        ("mfma_cdna3_xf32", "cdna3_xf32", [("f32_16x16x8_xf32", "fp32", "fp32"), ("f32_32x32x4_xf32", "fp32", "fp32")], 150),
        ("mfma_cdna3_fp32", "cdna3_fp32", [("f32_16x16x4_f32", "fp32", "fp32"), ("f32_32x32x2_f32", "fp32", "fp32")], 150),
    ]


def generate_mfma(outdir):
    import os
    os.makedirs(outdir, exist_ok=True)
    for fname, preset, quals, nrand in mfma_instructions():
        rng = random.Random("kvq-mmasim-" + fname)
        lines, skipped = [], 0
        for q, fa, fb in quals:
            ins = Mfma(preset, q, fa, fb)
            for a, b, c in mfma_cases(ins, rng, nrand):
                try:
                    lines.append(ins.line(a, b, c))
                except (OverflowError, ValueError):  # cases MMA-Sim does not define
                    skipped += 1
        path = os.path.join(outdir, fname + ".txt.gz")
        with gzip.GzipFile(path, "wb", mtime=0) as f:
            f.write(("\n".join(lines) + "\n").encode())
        print("%s: %d cases (%d left out: MMA-Sim raises)" % (fname, len(lines), skipped), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "hardware":
        hardware(sys.argv[2])
    elif sys.argv[1] == "generate":
        generate(sys.argv[2])
    elif sys.argv[1] == "generate-mfma":
        generate_mfma(sys.argv[2])
