"""What the checks established, per operator, per input or output, and per backward function.

The store is private to the kit: checks append to it through `record`, the verdict reads it through `facts`, and the
public API only offers a read-only copy (`evidence`). A record names the function it checked (`fn`, the chapter's
`vjp`) or None for a fact about the operator itself (a forward check, a witness, a type).

Kinds of record, for an input or output name:

- "forward": the model matched onnx.reference on this output.
- "fd", "torch", "ort": vjp matched finite differences of onnx.reference, PyTorch autograd, ONNX Runtime's gradient.
- "called" (under the empty name, not a formal one): the finite-difference check ran on this vjp for the operator,
  even one without inputs, so that the verdict can tell the checked vjp from another.
- "ort-none": ONNX Runtime cannot differentiate the operator (no gradient builder, or it cannot load the node), or
  its gradient graph has no gradient for this input: nothing to compare, and a fact about ONNX Runtime.
- "ort-refused": ONNX Runtime has a builder but refused this node (the builder failed on its attributes, or the graph
  it built failed to run): nothing was compared, and the verdict does not count it.
- "onnxad": vjp matched onnx-ad's adjoint model (proofkit.onnxad); "onnxad-none": onnx-ad has no reverse rule for the
  operator; "onnxad-zero": its gradient is zero where vjp returns None; "onnxad-differs": it differs where the chapter
  declares it; "onnxad-refused": onnx-ad refused the node
  or its adjoint model did not run. Only "onnxad" and "onnxad-differs" are comparisons.
- "rule": a hand-written rule was proved equal to Jᵀḡ and vjp was tied to it at sampled points of every piece.
- "none": vjp returned None for a float input; its data is {"outputs": "discrete"} where every output of that call
  had an integer, bool or string type (no float format either), so that no cotangent reached any input: such a None
  does not count against a gradient on calls with a float output (proofkit.verdict).
- "discrete-type": the value had an integer, bool or string type in a checked call.
- "outputs-discrete": every output of a checked call was discrete, so no float input has a path to a gradient.
- "float-path": a float value of this input met a float output in a checked call; calling it non-differentiable
  then needs "selects", whatever other calls showed.
- "selects": onnx.reference's outputs were bit-identical for other values of this float input of the same shape and
  type (proofkit.witness.witness_selects): only its shape and type are read.
- "zero": onnx.reference's outputs did not move under perturbations of this input (zero-derivative check).
- "kink", "jump", "unbounded": a witness of a non-differentiable point (fn None).
- "reference-departure" (under the empty name, fn None): onnx.reference departs from the spec at a witness
  (proofkit.findings); a fact about the reference, which the verdict ignores.
- "convention": vjp's value at the chapter's special points was asserted and compared with PyTorch and ONNX Runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

#: The name under which the checks of the values a nested graph reads from the enclosing scope record
#: (proofkit.outer); it is no formal input, and the verdict reads it without importing those checks.
OUTER = "outer values"


@dataclass(frozen=True)
class Record:
    op: str
    name: str
    kind: str
    fn: Callable | None = None
    detail: str = ""
    data: Any = field(default=None, compare=False, repr=False)


_RECORDS: list[Record] = []


def record(op: str, name: str, kind: str, fn: Callable | None = None, detail: str = "", data: Any = None) -> None:
    """Called by the kit's checks only."""
    _RECORDS.append(Record(op, name, kind, fn, detail, data))


def recorded(op: str | None = None) -> tuple[Record, ...]:
    """A read-only copy of what was recorded in this kernel (for one operator, or all)."""
    return tuple(r for r in _RECORDS if op is None or r.op == op)


def facts(op: str, name: str, fn: Callable | None) -> set[str]:
    """The kinds recorded for (op, name) about the function `fn` or about the operator itself."""
    return {r.kind for r in _RECORDS if r.op == op and r.name == name and (r.fn is None or r.fn is fn)}


def functions(op: str) -> list[Callable]:
    """Every distinct backward function that evidence was recorded for, for one operator."""
    out: list[Callable] = []
    for r in _RECORDS:
        if r.op == op and r.fn is not None and not any(r.fn is f for f in out):
            out.append(r.fn)
    return out


def first(op: str, kind: str, fn: Callable | None = None) -> Record | None:
    for r in _RECORDS:
        if r.op == op and r.kind == kind and (fn is None or r.fn is fn):
            return r
    return None


def _reset() -> None:
    """For the kit's own tests: forget everything."""
    _RECORDS.clear()
