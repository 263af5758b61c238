"""The numeric checks a chapter runs: forward, finite differences, PyTorch autograd, zero derivative.

Each raises AssertionError naming the input, the largest error and the tolerance. Every passed check is recorded in
the kit's evidence store (proofkit.evidence) under the operator, the input or output name, and the `vjp` it checked;
the verdict binds to that record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .display import Measured
from .evidence import record
from .report import TABLED, collect
from .onnxrun import run_onnx
from .schema import op_info
from . import values


#: What a check's "passed for" column says when it passed for no input (CheckResult.outcome).
NOTHING_COMPARED, REFUSED, DIFFERS_DECLARED = "nothing compared", "refused by ONNX Runtime", "differs (declared)"
REFUSED_ONNXAD = "refused by onnx-ad"


@dataclass
class CheckResult:
    """What a check established; prints deterministically (the tolerance, never the machine-dependent error).

    In a notebook, results a cell does not print are shown together in one table at the end of the cell
    (proofkit.report); `labelled(...)` names the variant a result belongs to in that table."""

    kind: str
    op: str
    names: list[str] = field(default_factory=list)
    detail: str = ""
    none: list[str] = field(default_factory=list)  # inputs for which vjp returned None
    summary: str = ""  # a whole sentence, where the standard one does not fit
    inputs: str = ""  # the inputs' shapes (and small integer values) as the table shows them
    attrs: str = ""
    error: float | None = None  # the largest error seen, against
    tol: float | None = None  # the tolerance at that error
    exact: bool = False  # the comparison was equality (integers, unchanged outputs): its 0 is not a measured figure
    outcome: str = ""  # for a check that passed for no input: what happened instead (see `compared`)
    notes: str = ""  # what the table's notes column adds (directions, what ONNX Runtime lacks, ...)
    label: str = ""
    shown: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self):
        collect(self)

    def labelled(self, *parts) -> "CheckResult":
        """Name the variant this result belongs to (words and values, joined by spaces) in the cell's table."""
        text = " ".join(str(p) for p in parts)
        self.label = " ".join(text.split()).rstrip(":->= ").strip()
        return self

    @property
    def compared(self) -> bool:
        """Whether the check compared anything: it passed for at least one input or output. A check whose `vjp`
        returned None for every input, or that ONNX Runtime gave no gradient for, compared nothing: it is shown as
        such, never as a pass, and records nothing that a verdict counts as a comparison."""
        return bool(self.names) or self.outcome == DIFFERS_DECLARED  # a declared difference is a comparison

    def shown_outcome(self) -> str:
        """What the table's "passed for" column says: the names, or what happened instead of a comparison."""
        return ", ".join(self.names) if self.names else (self.outcome or NOTHING_COMPARED)

    def table_notes(self) -> str:
        notes = [self.notes] if self.notes else []
        if self.none:
            notes.append(f"vjp returns None for {', '.join(dict.fromkeys(self.none))}")
        return "; ".join(notes)

    def _ipython_display_(self):
        # a bare result at the end of a cell joins the cell's table instead of printing its sentence
        if self.kind in TABLED:
            return
        from IPython.display import display
        if hasattr(self, "_repr_mimebundle_"):
            bundle = self._repr_mimebundle_()
        else:
            bundle = {"text/plain": repr(self)}
            if hasattr(self, "_repr_html_"):
                bundle["text/html"] = self._repr_html_()
        display(bundle, raw=True)

    def __repr__(self) -> str:
        self.shown = True
        if self.summary:
            return self.summary
        detail = f": {self.detail}" if self.detail else ""
        none = ", ".join(dict.fromkeys(self.none))
        if not self.names:
            return f"{self.kind} check of {self.op}: vjp returns None for {none or 'every input'}{detail}"
        also = f"; vjp returns None for {none}" if none else ""
        return f"{self.kind} check of {self.op} passed for {', '.join(self.names)}{also}{detail}"


class _Worst:
    """The largest error relative to its tolerance over a check's comparisons."""

    def __init__(self):
        self.err, self.tol, self.ratio = None, None, -1.0

    def add(self, err: float, tol: float) -> None:
        ratio = err / tol if tol > 0 else (0.0 if err == 0 else math.inf)
        if ratio > self.ratio:
            self.err, self.tol, self.ratio = float(err), float(tol), ratio


def _is_float(x) -> bool:
    """A float tensor, or a sequence with a float element (proofkit.values)."""
    return values.is_float(x)


def _is_float_format(x) -> bool:
    """A float type NumPy does not call floating (ml_dtypes' float8, float6, float4 and bfloat16 types): a real number
    in the book's reading of float types (the Cast chapter), stored on a coarse grid."""
    if values.is_sequence(x):
        return any(_is_float_format(e) for e in x)
    # "float64" starts with "float6": the formats are named with their underscore (float6_e2m3fn), bfloat16 in full
    return x is not None and np.asarray(x).dtype.name.startswith(("float8_", "float6_", "float4_", "bfloat16"))


def _as_list(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]


def _require_float64(op, inputs):
    info = op_info(op)
    for i, x in enumerate(inputs):
        for e in values.leaves(x):  # a tensor, or each element of a sequence
            if _is_float(e) and np.asarray(e).dtype != np.float64:
                raise AssertionError(f"{op}: input {info.input_name(i)} is {np.asarray(e).dtype}; "
                                     "the backward checks run in float64")


def _gap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| entrywise for float arrays; NaN against NaN and equal infinities count as 0, NaN against a number and
    unequal infinities as infinite."""
    with np.errstate(all="ignore"):
        d = np.abs(a - b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return np.where(same, 0.0, np.where(np.isnan(d), np.inf, d))


def _max_err(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    if a.size == 0:
        return 0.0
    if not np.issubdtype(a.dtype, np.number) or not np.issubdtype(b.dtype, np.number):
        return 0.0 if np.array_equal(a, b) else np.inf
    return float(np.max(_gap(a.astype(np.float64), b.astype(np.float64))))


@dataclass
class EngineComparison:
    """vjp's gradient for one input against an engine's (proofkit.ortgrad, proofkit.onnxad)."""

    agree: bool
    why: str  # what differs, in words, where it does
    what: str  # "wrong value" or "wrong shape"
    err: float | None = None
    tol: float | None = None


def compare_with_engine(op, engine, shown, mine, theirs, *, rtol, atol, declared: str | None) -> EngineComparison:
    """Compare vjp's gradient `mine` with an engine's `theirs` within atol + rtol·max(max|finite mine|, 1). A
    difference is allowed only where the chapter declared it (`declared`, its reason); a declared difference that
    agrees fails, so that the chapter is updated when the engine is fixed."""
    if np.shape(theirs) != np.shape(mine):
        result = EngineComparison(False, f"{engine}'s gradient has shape {np.shape(theirs)}, the input "
                                         f"{np.shape(mine)}", "wrong shape")
    else:
        finite = np.abs(mine[np.isfinite(mine)])
        err, tol = _max_err(mine, theirs), atol + rtol * max(float(np.max(finite)) if finite.size else 0.0, 1.0)
        result = EngineComparison(err <= tol, f"max difference {Measured(err)} > tolerance {Measured(tol)}",
                                  "wrong value", err, tol)
    if declared and result.agree:
        raise AssertionError(f"{op}: a disagreement with {engine} is declared for {shown}, but its gradient now "
                             "agrees with vjp; update the chapter")
    if not declared and not result.agree:
        raise AssertionError(f"{op}: gradient of input {shown} differs from {engine}'s: {result.why}")
    return result


def _output_pairs(op, info, got, want, what):
    """(name, got, want) per tensor: an output's name, or name[j] for element j of a sequence output, whose lengths
    must agree (a sequence is a list of arrays: proofkit.values)."""
    for k, (g, w) in enumerate(zip(got, want)):
        name = info.output_name(k)
        if not (values.is_sequence(g) or values.is_sequence(w)):
            yield name, g, w
            continue
        if not (values.is_sequence(g) and values.is_sequence(w)) or len(g) != len(w):
            raise AssertionError(f"{op}: output {name}: {what} gives a {values.describe(g)}, onnx.reference a "
                                 f"{values.describe(w)}")
        for j, (ge, we) in enumerate(zip(g, w)):
            yield f"{name}[{j}]", ge, we


def compare_outputs(op, got, want, *, rtol, atol, what, check_dtype=True) -> "_Worst":
    """Outputs equal in shape, dtype and value (integers exactly); returns the largest error against its tolerance."""
    info = op_info(op)
    worst = _Worst()
    got, want = _as_list(got), _as_list(want)
    if len(got) != len(want):
        raise AssertionError(f"{op}: {what} gives {len(got)} outputs, onnx.reference gives {len(want)}")
    for name, g, w in _output_pairs(op, info, got, want, what):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            raise AssertionError(f"{op}: output {name}: {what} has shape {g.shape}, onnx.reference {w.shape}")
        if check_dtype and g.dtype != w.dtype:
            raise AssertionError(f"{op}: output {name}: {what} has dtype {g.dtype}, onnx.reference {w.dtype}")
        if w.dtype.kind in "iub" or g.dtype.kind in "iub":  # integers and bools: exactly, not through float64
            if not np.array_equal(g, w):
                bad = int(np.sum(np.asarray(g) != np.asarray(w)))
                raise AssertionError(f"{op}: output {name}: {what} differs from onnx.reference in {bad} of "
                                     f"{w.size} entries (integer and bool outputs must be equal exactly)")
            worst.add(0.0, 0.0)
            continue
        err = _max_err(g, w)  # NaN against NaN and equal infinities count as equal
        finite = np.abs(w[np.isfinite(w)]) if np.issubdtype(w.dtype, np.number) else np.zeros(0)
        tol = atol + rtol * (float(np.max(finite)) if finite.size else 0.0)
        if not err <= tol:
            raise AssertionError(f"{op}: output {name}: {what} differs from onnx.reference by {err:.3e} "
                                 f"(tolerance {tol:.1e})")
        worst.add(err, tol)
    return worst


def _is_strings(y: np.ndarray) -> bool:
    """A NumPy form of an ONNX string tensor: str or bytes arrays, or an object array of str."""
    return y.dtype.kind in "US" or (y.dtype.kind == "O" and all(isinstance(v, str) for v in y.flat))


def check_forward(op, model, inputs, attrs=None, *, rtol=1e-12, atol=1e-12, check_dtype=True) -> CheckResult:
    """`model(inputs, **attrs)` (a NumPy function or a lambdified SymPy model) against onnx.reference.

    `attrs` are passed to the model with ONNX's defaults filled in; outputs must agree in shape, dtype and value. A
    sequence output is a list of arrays inside the model's list of outputs (`[[y0, y1]]`): its length must agree, then
    each element (proofkit.values).
    """
    info = op_info(op)
    full = info.with_defaults(attrs)
    want = run_onnx(op, inputs, attrs)
    got = model(list(inputs), **full)
    worst = compare_outputs(op, got, want, rtol=rtol, atol=atol, what="the model", check_dtype=check_dtype)
    for k in range(len(want)):
        record(op, info.output_name(k), "forward")
    # strings are compared by equality in compare_outputs; a check asked for with zero tolerance says so (the string
    # chapters); one left at a tolerance shows it, as it always did (Identity's and Constant's string rows)
    exact = all(w.dtype.kind in "iub" or (_is_strings(w) and rtol == 0 and atol == 0)
                for w in values.flatten(want)[0])  # every tensor, and every element of a sequence
    # the tolerance tested is atol + rtol·max|y| (compare_outputs), so the table shows that one, at the worst output
    return CheckResult("forward", op, [info.output_name(k) for k in range(len(want))],
                       f"inputs {_shapes_text(inputs)}, attributes {_attr_text(attrs)}, "
                       + ("equal exactly" if exact else f"tolerance {atol:.0e} + {rtol:.0e}·max|y|"),
                       inputs=_shapes_text(inputs), attrs=_attr_text(attrs), error=0.0 if exact else worst.err,
                       tol=None if exact else worst.tol, exact=exact,
                       notes=f"model = {getattr(want, 'source', 'onnx.reference')}"
                       + (", equal exactly" if exact else f", tolerance {atol:.0e} + {rtol:.0e}·max|y|"))


def _shown_name(info, i: int) -> str:
    """An input's name in a printout: the formal name, with its position for a variadic input (data_0[2])."""
    last = info.inputs[-1] if info.inputs else None
    if last is not None and last.variadic and i >= last.position:
        return f"{last.name}[{i - last.position}]"
    return info.input_name(i)


def _input_text(x) -> str:
    if x is None:
        return "omitted"
    if values.is_sequence(x):  # a sequence: its elements, in brackets
        return "[" + ", ".join(_input_text(e) for e in x) + "]"
    x = np.asarray(x)
    if _is_float(x):
        return str(x.shape)
    if x.dtype.kind in "iu" and x.ndim <= 1 and 0 < x.size <= 8:  # a shape, axes, an exponent: its value matters
        return f"{x.dtype} {x.tolist()}"
    return f"{x.shape} {x.dtype}"


def _shapes_text(inputs):
    return ", ".join(_input_text(x) for x in inputs)


def _attr_text(attrs):
    if not attrs:
        return "default"
    return "{" + ", ".join(f"{k}={_attr_value(v)}" for k, v in sorted(attrs.items())) + "}"


def _attr_value(v) -> str:
    """An attribute's value as the tables show it: its repr; an ONNX type (Optional's `type`) in the schema's words."""
    import onnx

    return values.type_text(v) if isinstance(v, onnx.TypeProto) else repr(v)


def _cotangents(outputs, rng):
    # a draw per float tensor, and per float element of a sequence (a list; proofkit.values)
    return [values.draw_like(y, rng) for y in outputs]


def as_engine_sees(g, theirs, x, reals: bool = False):
    """vjp's gradient `g` of the input `x` and an engine's gradient `theirs`, ready to compare: a sequence as one vector
    over its elements (None as zeros); a tensor as float64 (None as zeros), rounded to the input's format first when
    `reals` reads a float8/float6/float4/bfloat16 input as reals (an engine returns that input's gradient in its
    format)."""
    if values.is_sequence(x):
        return values.flat(g, x), values.flat(theirs, x)
    mine = np.zeros(np.shape(x)) if g is None else np.asarray(g, np.float64)
    if reals and _is_float_format(x):
        mine = mine.astype(np.asarray(x).dtype).astype(np.float64)
    return mine, theirs


def _call_vjp(op, vjp, inputs, cotangents, full_attrs, reals: bool = False):
    info = op_info(op)
    grads = vjp(list(inputs), list(cotangents), **full_attrs)
    grads = list(grads)
    if len(grads) != len(inputs):
        raise AssertionError(f"{op}: vjp returned {len(grads)} entries for {len(inputs)} inputs")
    for i, (g, x) in enumerate(zip(grads, inputs)):
        name = _shown_name(info, i)
        if g is None:
            continue
        if x is None:
            raise AssertionError(f"{op}: vjp returned a gradient for the omitted input {name}")
        if not (_is_float(x) or (reals and _is_float_format(x))):
            raise AssertionError(f"{op}: vjp returned a gradient for {name}, whose type "
                                 f"{values.element_dtype(x)} is discrete")
        if values.is_sequence(x) or values.is_sequence(g):  # a list, None entries allowed (proofkit.values)
            why = values.mismatch(g, x)
            if why:
                raise AssertionError(f"{op}: vjp's gradient for {name} {why}")
            continue
        if np.shape(g) != np.shape(x):
            raise AssertionError(f"{op}: vjp's gradient for {name} has shape {np.shape(g)}, "
                                 f"the input has shape {np.shape(x)}")
    return grads


def _record_none(op, i, x, none: list, fn, outs) -> None:
    """vjp gave no gradient for input `i`: for a float input that is the claim "non-differentiable" (and if a float
    output of the call could carry a gradient back to it, a fact of its own: "float-path"); for an input of a
    discrete type in this call (an int exponent of Pow) it says nothing about the float case; for an omitted optional
    input, nothing at all."""
    if x is None:
        return
    info = op_info(op)
    # a None on a call whose every output has an integer, bool or string type (no float format either) is marked: no
    # cotangent can reach any input there, so it says nothing against a gradient on calls with a float output
    discrete = bool(outs) and not any(_is_float(y) or _is_float_format(y) for y in outs)
    record(op, info.input_name(i), "none" if _is_float(x) else "discrete-type", fn,
           data={"outputs": "discrete"} if discrete else None)
    if _is_float(x) and any(_is_float(y) for y in outs):
        record(op, info.input_name(i), "float-path")
    none.append(_shown_name(info, i))


def record_types(op, inputs, outs, reals: bool = False) -> None:
    """Type facts of one call: discrete inputs and outputs, and whether every output was discrete. With `reals`, the
    float formats NumPy does not call floating (float8, bfloat16...) count as float, as check_vjp_fd(reals=True) reads
    them."""
    info = op_info(op)

    def real(v):
        return _is_float(v) or (reals and _is_float_format(v))

    for i, x in enumerate(inputs):
        if x is not None and not real(x):
            record(op, info.input_name(i), "discrete-type")
    for k, y in enumerate(outs):
        if not real(y):
            record(op, info.output_name(k), "discrete-type")
    if outs and not any(real(y) for y in outs):
        for i, x in enumerate(inputs):
            if x is not None:
                record(op, info.input_name(i), "outputs-discrete")


def check_vjp_fd(op, vjp, inputs, attrs=None, *, seed=0, n_dirs=2, eps=1e-6, rtol=1e-6, atol=1e-7,
                 reals: bool = False) -> CheckResult:
    """Check 1: vᵀJu by central differences of the onnx.reference forward against vᵀ·(vjp) ·u.

    For each input that `vjp` gives a gradient, and `n_dirs` random directions u (random cotangent v on every float
    output), (vᵀf(x+εu) − vᵀf(x−εu))/2ε must match ⟨vjp(x, v), u⟩ within atol + rtol·scale. A sequence (a list of
    arrays, proofkit.values) is read element by element: every float element of a sequence input is perturbed, every
    float element of a sequence output gets a cotangent, and vjp's gradient of a sequence is a list (None entries read
    as zeros).

    With `reals`, the float formats NumPy does not call floating (float8, float6, float4, bfloat16) are read as real
    numbers, as the book reads every float type (the Cast chapter): their outputs get a cotangent and are differenced
    in float64, and an input of such a type is moved to x ± εu rounded to its format, the check comparing
    vᵀ(f(x₊) − f(x₋)) with ⟨vjp(x, v), x₊ − x₋⟩ for the step that was actually taken. On a coarse grid this is a
    secant: ε must span several grid steps and the tolerance allow for the curvature between them.

    `eps` may be a dict, input name -> ε, where one step cannot serve every input (a float8 output read as reals:
    the step that spans the grid in one input curves the secant in another); every input vjp gives a gradient for
    must be named in it, and the notes show each input's ε.
    """
    info = op_info(op)
    inputs = list(inputs)
    _require_float64(op, inputs)
    full = info.with_defaults(attrs)
    rng = np.random.default_rng(seed)
    outs = run_onnx(op, inputs, attrs)
    cot = _cotangents(outs, rng)
    if reals:  # the float formats draw after the others, so that a check without reals draws as it always did
        cot = [rng.standard_normal(y.shape) if _is_float_format(y) else c for y, c in zip(outs, cot)]
    grads = _call_vjp(op, vjp, inputs, cot, full, reals=reals)
    checked, none, worst = [], [], _Worst()
    steps = dict(eps) if isinstance(eps, dict) else None  # one ε per input, by formal name
    for i, g in enumerate(grads):
        name, shown = info.input_name(i), _shown_name(info, i)
        if g is None:
            _record_none(op, i, inputs[i], none, vjp, outs)
            continue
        if steps is not None and name not in steps:
            raise AssertionError(f"{op}: eps is given per input, but not for {shown}, which vjp gives a gradient")
        eps_i = steps[name] if steps is not None else eps
        for _ in range(n_dirs):
            # a direction: a draw per float element of a sequence (proofkit.values), as before for a tensor
            u = (values.draw_like(inputs[i], rng) if values.is_sequence(inputs[i])
                 else rng.standard_normal(np.shape(inputs[i])))
            plus, minus = list(inputs), list(inputs)
            if reals and _is_float_format(inputs[i]):  # the step rounded to the input's format, and the step taken
                x64 = np.asarray(inputs[i]).astype(np.float64)
                plus[i] = (x64 + eps_i * u).astype(np.asarray(inputs[i]).dtype)
                minus[i] = (x64 - eps_i * u).astype(np.asarray(inputs[i]).dtype)
                step = (plus[i].astype(np.float64) - minus[i].astype(np.float64)) / (2 * eps_i)
            else:
                plus[i] = values.add_scaled(inputs[i], eps_i, u)
                minus[i] = values.add_scaled(inputs[i], -eps_i, u)
                step = u
            yp, ym = run_onnx(op, plus, attrs, len(outs)), run_onnx(op, minus, attrs, len(outs))
            if reals:
                yp, ym = ([np.asarray(y).astype(np.float64) if _is_float_format(y) else y for y in ys]
                          for ys in (yp, ym))
            fd = sum(values.dot(v, values.sub(a, b)) for v, a, b in zip(cot, yp, ym) if v is not None) / (2 * eps_i)
            an = values.dot(g, step)
            err, tol = abs(fd - an), atol + rtol * max(abs(fd), abs(an), 1.0)
            if not err <= tol:
                raise AssertionError(f"{op}: gradient of input {shown} disagrees with finite differences of "
                                     f"onnx.reference: vᵀJu = {fd:.10g}, vjp gives {an:.10g}, "
                                     f"error {err:.3e} > tolerance {tol:.1e}")
            worst.add(err, tol)
        record(op, name, "fd", vjp, data=(inputs, attrs))
        checked.append(shown)
    record_types(op, inputs, outs, reals=reals)
    record(op, "", "called", vjp)  # this vjp was checked for this op, even one without inputs (Constant)
    for k, y in enumerate(outs):
        if cot[k] is not None and checked:
            record(op, info.output_name(k), "fd", vjp)
    discrete = ", ".join(f"{info.output_name(k)} ({values.element_dtype(y)})" for k, y in enumerate(outs)
                         if cot[k] is None)
    formats = sorted({str(np.asarray(v).dtype) for v in [*inputs, *outs] if reals and _is_float_format(v)})
    secant = f"; {', '.join(formats)} read as reals (a secant over the format's grid)" if formats else ""
    eps_text = (f"ε={eps:g}" if steps is None else
                "ε " + ", ".join(f"{n}={e:g}" for n, e in steps.items()))  # per input
    return CheckResult("finite-difference", op, checked,
                       f"inputs {_shapes_text(inputs)}, attributes {_attr_text(attrs)}, {n_dirs} random directions "
                       f"each, {eps_text}" + (f"; no cotangent for the discrete output {discrete}" if discrete else "")
                       + secant, none, inputs=_shapes_text(inputs), attrs=_attr_text(attrs), error=worst.err,
                       tol=worst.tol, notes=f"{n_dirs} directions, {eps_text}"
                       + (f"; discrete output {discrete}" if discrete else "") + secant)


def compare_with_torch(op, what, mine, theirs, x, rtol, atol, worst) -> None:
    """vjp's gradient `mine` of the value `x` against PyTorch's `theirs` (a sequence as one vector over its elements;
    None, whole or an element, as zeros): AssertionError naming `what` beyond atol + rtol·max(|theirs|, 1), else the
    error is added to `worst`."""
    if values.is_sequence(x):
        mine, theirs = values.flat(mine, x), values.flat(theirs, x)
    else:
        mine = np.zeros(np.shape(x)) if mine is None else np.asarray(mine, np.float64)
        theirs = np.zeros(np.shape(x)) if theirs is None else theirs
    err = _max_err(mine, theirs)
    tol = atol + rtol * max(float(np.max(np.abs(theirs))) if theirs.size else 0.0, 1.0)
    if not err <= tol:
        raise AssertionError(f"{op}: gradient of {what} differs from PyTorch autograd by {err:.3e} "
                             f"(tolerance {tol:.1e})")
    worst.add(err, tol)


def torch_leaves(inputs) -> list:
    """Torch tensors for the op's inputs (None stays None, a sequence becomes a list of tensors), the float ones
    requiring a gradient."""
    import torch
    tens = [None if x is None else [torch.tensor(np.asarray(e)) for e in x] if values.is_sequence(x)
            else torch.tensor(np.asarray(x)) for x in inputs]
    for t in values.flatten(tens)[0]:
        if t is not None and t.is_floating_point():
            t.requires_grad_(True)
    return tens


def autograd_vjp(pairs, leaves):
    """PyTorch autograd of Σ ⟨output, cotangent⟩ over `pairs` (an output tensor and its cotangent, a tensor of its
    shape) with respect to `leaves` (None for a leaf the outputs do not use): what torch.autograd.grad(outputs,
    leaves, grad_outputs=cotangents) gives. It is taken as the gradient of the scalar Σ sum(output·cotangent), the
    cotangent cast to the output's dtype as autograd casts grad_outputs: that scalar's gradient with respect to each
    output is its cotangent exactly (1·ḡ), so everything after it is the same product. This form spares each kernel
    the import of torch.fx's symbolic shapes that PyTorch makes on its first call with grad_outputs (about 50 ms). A
    complex or float8 output (PyTorch does not multiply float8 tensors), and a cotangent whose shape is not its
    output's (which autograd refuses, and a product would broadcast), are passed as grad_outputs."""
    import torch

    plain = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
    outputs, cots = [o for o, _ in pairs], [g for _, g in pairs]
    if any(o.dtype not in plain or g.is_complex() or tuple(o.shape) != tuple(g.shape) for o, g in pairs):
        return torch.autograd.grad(outputs, leaves, cots, allow_unused=True)
    total = sum((o * g.to(o.dtype)).sum() for o, g in pairs)
    return torch.autograd.grad(total, leaves, allow_unused=True)


def torch_gradients(tens, outputs, cotangents) -> list:
    """PyTorch autograd of Σ output·cotangent for each tensor of `torch_leaves`: an array (zeros for a float input the
    outputs do not use), or None for a non-float or omitted input, and for every input when no float output carries
    a cotangent. A sequence (a list of tensors, in or out) is taken element by element: its gradient is a list, None
    for an element that is not float."""
    import torch
    leaves = [t for t in values.flatten(tens)[0] if t is not None and t.requires_grad]
    paired = []
    for o, g in zip(outputs, cotangents):
        if g is not None:
            paired += list(zip(o, g)) if values.is_sequence(o) else [(o, g)]
    pairs = [(o, torch.tensor(np.asarray(g))) for o, g in paired if g is not None and o.requires_grad]
    if not (leaves and pairs):
        return [None] * len(tens)
    got = autograd_vjp(pairs, leaves)
    res = {id(t): (np.zeros(tuple(t.shape)) if r is None else r.detach().numpy()) for t, r in zip(leaves, got)}
    return [None if t is None else [res.get(id(e)) for e in t] if values.is_sequence(t) else res.get(id(t))
            for t in tens]


def check_vjp_torch(op, vjp, twin, inputs, attrs=None, *, seed=0, rtol=1e-10, atol=1e-12,
                    forward_rtol=None) -> CheckResult:
    """Check 2 (Method 1 of the ONNX guide): `vjp` against PyTorch autograd of `twin`.

    `twin(*tensors, **attrs)` is the op written with torch functions (omitted inputs arrive as None, a sequence input
    as a Python list of tensors, attributes with ONNX defaults; a sequence output is returned as a list of tensors,
    inside the list of outputs where the op has several). Its forward is first checked against onnx.reference, which
    shows the mapping between the two (within `forward_rtol`, by default `rtol`: looser where onnx.reference computes
    in lower precision); then torch.autograd.grad with random cotangents is compared with `vjp`, input by input,
    within `rtol`.
    """
    import torch

    info = op_info(op)
    inputs = list(inputs)
    _require_float64(op, inputs)
    full = info.with_defaults(attrs)
    want = run_onnx(op, inputs, attrs)
    tens = torch_leaves(inputs)
    got = _as_list(twin(*tens, **full))
    if len(want) == 1 and values.is_sequence(want[0]) and (not got or not values.is_sequence(got[0])):
        got = [got]  # the one output is a sequence: the twin returned its list of tensors
    compare_outputs(op, [[e.detach().numpy() for e in g] if values.is_sequence(g) else g.detach().numpy()
                         for g in got], want, rtol=rtol if forward_rtol is None else forward_rtol,
                    atol=atol, what="the torch twin")
    rng = np.random.default_rng(seed)
    cot = _cotangents(want, rng)
    grads = _call_vjp(op, vjp, inputs, cot, full)
    tgrads = torch_gradients(tens, got, cot)
    checked, none, worst = [], [], _Worst()
    for i, g in enumerate(grads):
        name, shown = info.input_name(i), _shown_name(info, i)
        if g is None:
            _record_none(op, i, inputs[i], none, vjp, want)
            continue
        compare_with_torch(op, f"input {shown}", g, tgrads[i], inputs[i], rtol, atol, worst)
        record(op, name, "torch", vjp)
        checked.append(shown)
    record_types(op, inputs, want)
    return CheckResult("PyTorch autograd", op, checked,
                       f"inputs {_shapes_text(inputs)}, attributes {_attr_text(attrs)}, tolerance {rtol:.0e}", none,
                       inputs=_shapes_text(inputs), attrs=_attr_text(attrs), error=worst.err, tol=worst.tol)


def check_zero_almost_everywhere(op, inputs, attrs=None, *, names=None, seed=0, n_dirs=3, eps=1e-6) -> CheckResult:
    """Evidence for 'zero almost everywhere': onnx.reference's outputs do not move under ±ε perturbations of the
    named inputs along random directions at the given (jump-free) points, so every directional derivative is 0."""
    info = op_info(op)
    inputs = list(inputs)
    _require_float64(op, inputs)
    base = run_onnx(op, inputs, attrs)
    rng = np.random.default_rng(seed)
    names = names or [info.input_name(i) for i, x in enumerate(inputs) if _is_float(x)]
    for i, x in enumerate(inputs):
        name = info.input_name(i)
        if name not in names:
            continue
        for _ in range(n_dirs):
            u = rng.standard_normal(np.shape(x))
            for s in (eps, -eps):
                moved = list(inputs)
                moved[i] = x + s * u
                for k, (a, b) in enumerate(zip(run_onnx(op, moved, attrs, len(base)), base)):
                    if not np.array_equal(a, b):
                        raise AssertionError(f"{op}: output {info.output_name(k)} moves when {name} is perturbed "
                                             f"by {s:g}·u: the point is not in a flat piece")
        record(op, name, "zero")
    for k in range(len(base)):
        record(op, info.output_name(k), "zero")
    return CheckResult("zero-derivative", op, list(names),
                       f"inputs {_shapes_text(inputs)}, attributes {_attr_text(attrs)}, {n_dirs} random directions, "
                       f"ε=±{eps:g}", inputs=_shapes_text(inputs), attrs=_attr_text(attrs), error=0.0, exact=True,
                       notes=f"outputs unchanged exactly, {n_dirs} directions, ε=±{eps:g}")
