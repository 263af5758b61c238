"""proofkit: the plumbing of the ONNX differentiability book. The math lives in the chapters."""

from . import samplers
from .broadcast import sum_to_shape
from .checks import (LEDGER, CheckResult, check_forward, check_vjp_fd, check_vjp_symbolic, check_vjp_torch,
                     check_zero_almost_everywhere, reset_ledger)
from .display import Table, attributes, show, signature
from .onnxrun import run_onnx
from .plot import plot_elementwise
from .schema import OpInfo, UnknownOperatorError, list_ops, op_info
from .verdict import VOCABULARY, Claim, Verdict, VerdictError

__all__ = [
    "LEDGER", "CheckResult", "Claim", "OpInfo", "Table", "UnknownOperatorError", "VOCABULARY", "Verdict",
    "VerdictError", "attributes", "check_forward", "check_vjp_fd", "check_vjp_symbolic", "check_vjp_torch",
    "check_zero_almost_everywhere", "list_ops", "op_info", "plot_elementwise", "reset_ledger", "run_onnx",
    "samplers", "show", "signature", "sum_to_shape",
]
