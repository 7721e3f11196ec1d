"""The extension module this process uses: one of three builds of the same C++ sources.

``_kvq`` runs on any x86-64 (and is the only build elsewhere); ``_kvq_v3`` is compiled for
x86-64-v3 (AVX2, FMA, F16C, BMI2) and ``_kvq_avx512`` for x86-64-v4 with VBMI (AVX-512 F,
BW, CD, DQ, VL, VBMI: the 16-lane block passes, screens and draws), and the fastest one the
CPU runs is chosen. All give the same bits (contraction is off; the instruction set
changes only the speed), which ``tests/test_native_isa.py`` checks by running each on the
same inputs.

``KVQ_ISA=baseline``, ``KVQ_ISA=x86-64-v3`` or ``KVQ_ISA=avx512`` forces one (ValueError
for another value, ImportError when the forced build is missing or the CPU lacks its
instructions).
``kvq.isa`` names the build in use.

The baseline build also carries x86-64-v3 copies of the bulk kernels (encode, block
quantize/dequantize: kvq/core/isa.hpp), which it runs where the CPU has them and the
x86-64-v3 module is missing; ``KVQ_ISA=baseline`` makes it run its portable ones.
"""

import os

from . import _kvq as _baseline


def _load():
    forced = os.environ.get("KVQ_ISA", "")
    if forced not in ("", "baseline", "x86-64-v3", "avx512"):
        raise ValueError(f"KVQ_ISA={forced!r}: expected 'baseline', 'x86-64-v3' or 'avx512'")
    if forced == "baseline":
        _baseline.set_kernel_isa("baseline")
        return _baseline
    if forced in ("", "avx512") and _baseline.cpu_supports_avx512():
        try:
            from . import _kvq_avx512

            return _kvq_avx512
        except ImportError:
            if forced:
                raise  # a build without the AVX-512 module (an old compiler)
    elif forced == "avx512":
        raise ImportError("KVQ_ISA=avx512: this CPU lacks AVX-512 F, BW, CD, DQ, VL or VBMI")
    if not _baseline.cpu_supports_x86_64_v3():
        if forced:
            raise ImportError("KVQ_ISA=x86-64-v3: this CPU lacks x86-64-v3 (AVX2, FMA, F16C, BMI2)")
        return _baseline
    try:
        from . import _kvq_v3
    except ImportError:
        if forced:
            raise
        return _baseline  # a build without the x86-64-v3 module (not x86-64, or an old compiler)
    return _kvq_v3


ext = _load()
