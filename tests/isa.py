"""Which instruction sets the numerical stack uses in this process, and a check that an emulated one took effect.

`make test-portable` runs the notebook suite as if on other processors, by environment variables the libraries read
at start-up (numpy's NPY_DISABLE_CPU_FEATURES, PyTorch's ATEN_CPU_CAPABILITY, MKL's MKL_ENABLE_INSTRUCTIONS,
oneDNN's ONEDNN_MAX_CPU_ISA, OpenBLAS's OPENBLAS_CORETYPE). Before each run it calls this script with the profile's
name, so a profile that silently did nothing (a misspelt variable, a library that ignores it) fails the target instead
of passing as a run on the machine's own instruction set. ONNX Runtime's kernels (MLAS) cannot be steered this way:
the book shows its floating-point figures as measured and states its processor-dependent integer results as findings.

    python tests/isa.py             # print what this process uses
    python tests/isa.py x86-64-v3   # the same, and fail unless the x86-64-v3 profile (AVX2, no AVX-512) is in effect
"""

import sys

import numpy as np
import torch
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

#: profile -> (numpy dispatch targets that must be off, PyTorch's ATen capability)
PROFILES = {
    "x86-64-v3": ({"X86_V4", "AVX512_ICL", "AVX512_SPR"}, "AVX2"),
    "x86-64-v2": ({"X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR"}, "DEFAULT"),
}


def used() -> tuple[list[str], str]:
    """numpy's dispatch targets enabled in this process, and PyTorch's ATen CPU capability."""
    return [t for t in __cpu_dispatch__ if __cpu_features__.get(t)], torch.backends.cpu.get_cpu_capability()


def main(argv: list[str]) -> int:
    targets, aten = used()
    print(f"numpy {np.__version__} dispatch targets in use: {', '.join(targets) or 'baseline only'}; "
          f"PyTorch {torch.__version__} ATen capability: {aten}")
    if not argv:
        return 0
    off, want = PROFILES[argv[0]]
    wrong = [f"numpy still dispatches to {t}" for t in targets if t in off]
    if aten != want:
        wrong.append(f"PyTorch's ATen capability is {aten}, the profile asks for {want}")
    for problem in wrong:
        print(f"profile {argv[0]} not in effect: {problem}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
