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
from .symbolic import check_vjp_symbolic
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

_install_report()  # in a notebook kernel: one table of checks per cell (proofkit.report)
