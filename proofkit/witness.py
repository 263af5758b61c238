"""Witnesses of the null set: at a named point, onnx.reference shows a kink, a jump or an unbounded derivative.

"differentiable almost everywhere" and "zero almost everywhere" need one (book/method, the verdicts); "differentiable"
needs none. Each witness differentiates Σ cotangent·output (cotangent 1 by default) along one coordinate of one input
with one-sided difference quotients of onnx.reference, at several steps, and asserts what it claims. Where
onnx.reference departs from the spec on the case (a recorded departure of the chapter: RNN's clip), `forward=` gives
the chapter's own forward instead, and the witness says so.
"""

from __future__ import annotations

import numpy as np

from .checks import CheckResult, _as_list, _is_float, _is_float_format, _require_float64, _shown_name
from .evidence import record, recorded
from .onnxrun import run_onnx
from .schema import op_info
from . import values


def _float_input(op, inputs, input, what):
    """The op's schema and a copy of the inputs, once input `input` is seen to be a float one."""
    info = op_info(op)
    inputs = [None if x is None else [np.array(e, copy=True) for e in x] if values.is_sequence(x)
              else np.array(x, dtype=np.asarray(x).dtype, copy=True) for x in inputs]
    if not _is_float(inputs[input]):
        raise AssertionError(f"{op}: {what} a float input; {_shown_name(info, input)} is not one")
    return info, inputs


def _runner(op, forward):
    """onnx.reference, or the chapter's `forward(inputs, **attrs)` where a recorded departure shows onnx.reference
    computes something else than the spec on the chapter's cases."""
    if forward is None:
        return run_onnx
    if not any(r.kind == "reference-departure" for r in recorded(op)):
        raise AssertionError(f"{op}: a witness through the chapter's forward stands in for onnx.reference only where "
                             "the chapter has recorded a departure of onnx.reference (check_reference_departure) "
                             "first")

    def run(op_, inputs, attrs=None, n_outputs=None):
        return [np.asarray(y) for y in _as_list(forward(list(inputs), **(attrs or {})))]

    return run


def _probe(op, inputs, attrs, input, index, cotangents, forward=None, reals: bool = False):
    if reals and _is_float_format(inputs[input]):  # a float format read as reals: moved along its own grid
        info = op_info(op)
        inputs = [None if x is None else np.array(x, dtype=np.asarray(x).dtype, copy=True) for x in inputs]
    else:
        info, inputs = _float_input(op, inputs, input, "a witness perturbs")
    _require_float64(op, inputs)
    run = _runner(op, forward)
    base = run(op, inputs, attrs)
    if reals:  # outputs of a float format are numbers: their values, in float64
        base = [np.asarray(y).astype(np.float64) if _is_float_format(y) else y for y in base]
    cot = [np.ones(y.shape) if _is_float(y) else None for y in base] if cotangents is None else list(cotangents)
    fmt = np.asarray(inputs[input]).dtype if reals and _is_float_format(inputs[input]) else None
    idx = np.unravel_index(index, np.shape(inputs[input])) if isinstance(index, (int, np.integer)) else tuple(index)
    idx = tuple(int(i) for i in idx)

    def s(h: float) -> float:
        moved = list(inputs)
        moved[input] = inputs[input].copy()
        if fmt is not None:  # the step must land on the format's grid, or the quotient divides by a step not taken
            value = float(np.asarray(inputs[input][idx]).astype(np.float64)) + h
            if float(np.asarray(value).astype(fmt).astype(np.float64)) != value:
                raise AssertionError(f"{op}: the step {h:g} from {value - h:g} leaves the grid of {fmt}")
            moved[input][idx] = np.asarray(value).astype(fmt)
        else:
            moved[input][idx] += h
        ys = run(op, moved, attrs, len(base))
        if reals:
            ys = [np.asarray(y).astype(np.float64) if _is_float_format(y) else y for y in ys]
        with np.errstate(all="ignore"):
            return float(sum(np.sum(g * y) for g, y in zip(cot, ys) if g is not None))

    x0 = float(inputs[input][idx]) if fmt is None else float(np.asarray(inputs[input][idx]).astype(np.float64))
    where = f"{_shown_name(info, input)}{list(idx) if idx else ''} = {x0:g}" + (f" ({fmt})" if fmt is not None else "")
    if forward is not None:
        where += " (through the chapter's forward, where onnx.reference departs from the spec)"
    return info, s, where


def _witnessed(op, info, input, kind, where, summary) -> CheckResult:
    name = info.input_name(input)
    record(op, name, kind, detail=where)
    return CheckResult(kind, op, [name], summary=summary)


def witness_kink(op, inputs, *, input=0, index=0, attrs=None, cotangents=None, steps=(1e-4, 1e-6),
                 forward=None, reals: bool = False) -> CheckResult:
    """The one-sided derivatives at the point exist (the quotients settle as the step shrinks) and differ.

    With `reals`, the float formats NumPy does not call floating (float8, float6, float4, bfloat16) are read as real
    numbers (proofkit.checks.check_vjp_fd): their outputs are summed as float64 values, and an input of such a type
    may be the one moved, by steps that land on its grid (a step that does not is refused)."""
    info, s, where = _probe(op, inputs, attrs, input, index, cotangents, forward, reals)
    f0 = s(0.0)
    right = [(s(h) - f0) / h for h in steps]
    left = [(f0 - s(-h)) / h for h in steps]
    for side, q in (("right", right), ("left", left)):
        if not (np.all(np.isfinite(q)) and abs(q[-1] - q[0]) <= 1e-3 * max(1.0, abs(q[-1]))):
            raise AssertionError(f"{op}: no kink witness at {where}: the {side} difference quotients do not settle "
                                 f"({', '.join(f'{v:.6g}' for v in q)})")
    if not abs(right[-1] - left[-1]) > 1e-2 * max(1.0, abs(right[-1]), abs(left[-1])):
        raise AssertionError(f"{op}: no kink at {where}: the one-sided derivatives agree "
                             f"(left {left[-1]:.6g}, right {right[-1]:.6g})")
    return _witnessed(op, info, input, "kink", where, (
        f"kink witness for {op}: at {where} the one-sided derivatives differ: left {left[-1]:.4g}, right "
        f"{right[-1]:.4g} (difference quotients at steps {', '.join(f'{h:g}' for h in steps)})"))


def witness_jump(op, inputs, *, input=0, index=0, attrs=None, cotangents=None,
                 steps=(1e-3, 1e-6, 1e-9), forward=None) -> CheckResult:
    """The output jumps at the point: f(x+h) − f(x−h) does not shrink as h does."""
    info, s, where = _probe(op, inputs, attrs, input, index, cotangents, forward)
    d = [s(h) - s(-h) for h in steps]
    if not (all(abs(v) >= 1e-3 for v in d) and abs(d[-1]) >= 0.5 * abs(d[0])):
        raise AssertionError(f"{op}: no jump at {where}: f(x+h) − f(x−h) = "
                             f"{', '.join(f'{v:.6g}' for v in d)} for h = {', '.join(f'{h:g}' for h in steps)}")
    return _witnessed(op, info, input, "jump", where, (
        f"jump witness for {op}: at {where}, f(x+h) − f(x−h) = {d[-1]:.4g} for h = {steps[-1]:g} "
        f"(and {d[0]:.4g} for h = {steps[0]:g}): the output jumps, so no derivative exists there"))


def witness_unbounded(op, inputs, *, input=0, index=0, attrs=None, cotangents=None, side="right",
                      steps=(1e-2, 1e-4, 1e-6, 1e-8), forward=None) -> CheckResult:
    """The difference quotient on one side (or both) grows without bound as the step shrinks."""
    info, s, where = _probe(op, inputs, attrs, input, index, cotangents, forward)
    f0 = s(0.0)
    sides = ("right", "left") if side == "both" else (side,)
    shown = []
    for sd in sides:
        sign = 1.0 if sd == "right" else -1.0
        q = [abs((s(sign * h) - f0) / h) for h in steps]
        if not all(np.isfinite(q[:-1])) or not all(b > 3 * a for a, b in zip(q, q[1:]) if np.isfinite(b)):
            raise AssertionError(f"{op}: no unbounded derivative at {where} from the {sd}: |quotients| = "
                                 f"{', '.join(f'{v:.6g}' for v in q)}")
        shown.append(f"{sd}: {', '.join(f'{v:.3g}' for v in q)}")
    return _witnessed(op, info, input, "unbounded", where, (
        f"unbounded-derivative witness for {op}: at {where}, |difference quotients| at steps "
        f"{', '.join(f'{h:g}' for h in steps)} grow without bound ({'; '.join(shown)})"))


def witness_selects(op, inputs, *, input=0, attrs=None, seed=0) -> CheckResult:
    """Only the input's shape and type are read: onnx.reference's outputs stay bit-identical when the input's entries
    are replaced by other values of the same shape and type (zeros, a seeded normal draw, the draw times 10^6, and
    their negatives). The derivative is then zero everywhere and no value of the input can carry information to the
    outputs, which the book calls non-differentiable (book/method, the verdicts)."""
    info, inputs = _float_input(op, inputs, input, "a selection witness replaces the values of")
    x = inputs[input]
    base = run_onnx(op, inputs, attrs)
    rng = np.random.default_rng(seed)
    if values.is_sequence(x):  # a sequence: the entries of every element replaced (proofkit.values)
        draw = [rng.standard_normal(np.shape(e)) for e in x]
        others = {"zeros": [np.zeros(np.shape(e)) for e in x], "a normal draw z": draw,
                  "10^6 z": [1e6 * d for d in draw], "−z": [-d for d in draw], "−10^6 z": [-1e6 * d for d in draw]}
    else:
        draw = rng.standard_normal(x.shape)
        others = {"zeros": np.zeros(x.shape), "a normal draw z": draw, "10^6 z": 1e6 * draw, "−z": -draw,
                  "−10^6 z": -1e6 * draw}
    for what, replaced in others.items():
        moved = list(inputs)
        moved[input] = ([np.asarray(r, dtype=e.dtype) for r, e in zip(replaced, x)] if values.is_sequence(x)
                        else replaced.astype(x.dtype))
        ys = run_onnx(op, moved, attrs, len(base))
        for k, (y, y0) in enumerate(zip(ys, base)):
            (ly, sy), (ly0, sy0) = values.flatten([y]), values.flatten([y0])  # a sequence output: element by element
            same = sy == sy0 and all(a.shape == b.shape and a.dtype == b.dtype and np.array_equal(
                a, b, equal_nan=bool(np.issubdtype(a.dtype, np.inexact))) for a, b in zip(ly, ly0))
            if not same:
                raise AssertionError(f"{op}: {_shown_name(info, input)} is not only a selection: with its entries "
                                     f"replaced by {what}, output {info.output_name(k)} changes")
    name = info.input_name(input)
    where = (f"{_shown_name(info, input)}, a sequence of {len(x)} of shapes {', '.join(str(e.shape) for e in x)} "
             f"and type {values.element_dtype(x)}" if values.is_sequence(x)
             else f"{_shown_name(info, input)} of shape {x.shape} and type {x.dtype}")
    record(op, name, "selects", detail=where)
    return CheckResult("selects", op, [name], summary=(
        f"selection witness for {op}: with the entries of {where} replaced by {', '.join(others)}, every output of "
        "onnx.reference is bit-identical: only the input's shape and type are read"))
