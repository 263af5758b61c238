"""proofkit: the plumbing of the ONNX differentiability book. The math lives in the chapters."""

from . import samplers
from .broadcast import sum_to_shape
from .checks import CheckResult, check_forward, check_vjp_fd, check_vjp_torch, check_zero_almost_everywhere
from .conventions import Defect, Special, check_conventions
from .display import Measured, Table, attributes, measured, show, signature
from .evidence import recorded
from .findings import (Finding, check_function_body_departure, check_reference_departure,
                       check_reference_departure_exact, check_runtime_departure)
from .onnxad import check_vjp_onnxad, onnxad_gradient
from .onnxrun import run_onnx, stand_in
from .ortgrad import OrtRunError, check_vjp_ort, ort_forward, ort_gradient
from .plot import plot_elementwise
from .report import install as _install_report
from .schema import OpInfo, UnknownOperatorError, list_ops, op_info
from .symbolic import check_vjp_symbolic, seed_lambdify_numpy as _seed_lambdify_numpy
from .verdict import VOCABULARY, Claim, Verdict, VerdictError
from .witness import witness_jump, witness_kink, witness_selects, witness_unbounded

__all__ = [
    "CheckResult", "Claim", "Defect", "Finding", "Measured", "OpInfo", "Special", "Table", "UnknownOperatorError", "VOCABULARY", "Verdict",
    "VerdictError", "attributes", "check_conventions", "check_forward", "check_function_body_departure", "check_reference_departure",
    "check_reference_departure_exact", "check_runtime_departure", "check_vjp_fd", "check_vjp_onnxad", "check_vjp_ort",
    "check_vjp_symbolic", "check_vjp_torch", "check_zero_almost_everywhere", "list_ops", "measured", "recorded", "onnxad_gradient", "op_info",
    "OrtRunError", "ort_forward", "ort_gradient", "plot_elementwise", "run_onnx", "samplers", "show", "signature", "stand_in", "sum_to_shape",
    "witness_jump", "witness_kink", "witness_selects", "witness_unbounded",
]



def _settle_collector() -> None:
    """In a notebook kernel, keep Python's cyclic garbage collector off the objects that live as long as the kernel.

    Every object that exists once the kit is imported (the modules of NumPy, SymPy, PyTorch, ONNX and the kit: a few
    hundred thousand objects) is moved out of the collector's reach (gc.freeze), and full collections are made ten
    times rarer (the oldest generation's threshold 10 -> 100). A chapter's SymPy proofs and check loops allocate
    enough to start a full collection every second or so, and each walked every object the kernel had made so far:
    0.1 s to 0.2 s each, 0.3 s to 0.5 s per chapter. The young generations are collected as before, so the cyclic
    garbage of a cell is still freed; a kernel runs one chapter, whose peak memory this leaves unchanged (measured
    on the heaviest chapters). Nothing a chapter computes or prints depends on when the collector runs."""
    import gc

    from .report import in_kernel

    if in_kernel():
        gc.freeze()
        young, middle, oldest = gc.get_threshold()
        gc.set_threshold(young, middle, max(oldest, 100))


_install_report()  # in a notebook kernel: one table of checks per cell (proofkit.report)
_settle_collector()
_seed_lambdify_numpy()  # sp.lambdify's NumPy namespace, without importing numpy.f2py and the like (proofkit.symbolic)
