"""The chapter's values at its special points (kinks, ties, poles, domain edges, zero cotangents), asserted.

`check_conventions` takes the chapter's table of special points with the value `vjp` must return at each, asserts
`vjp` against it, runs PyTorch autograd of the chapter's twin, ONNX Runtime's gradient and onnx-ad's adjoint model at
the same points, and prints one compact table. A difference from PyTorch, ONNX Runtime or onnx-ad is allowed only where
it is declared with its reason, and a declared difference that has gone away fails too. The book's convention policy is in book/method.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .checks import (CheckResult, _as_list, _call_vjp, _is_float, _is_float_format, _max_err, _shown_name,
                     autograd_vjp, torch_gradients, torch_leaves)
from .display import Measured, Table
from .evidence import record
from .onnxad import NoOnnxAdGradient, onnxad_gradient
from .onnxrun import run_onnx
from .ortgrad import NoGradientBuilder, ort_gradient
from .schema import op_info


class Defect(str):
    """A declared difference at a special point that is not a convention: the engine is wrong there (the derivative
    exists and the engine's value is not it, or the engine is wrong everywhere and the point only shows it again).
    `Special(..., onnxad=Defect("reason"))`; the engines page files it as a wrong value, not as a convention."""


@dataclass
class Special:
    """One special point: a label, the op's inputs there (schema order), and what vjp must return for each named
    input (a number or array; None for no gradient). `cotangents` defaults to ones on every float output. `torch`,
    `ort` and `onnxad` hold the reason for a declared difference from PyTorch, ONNX Runtime or onnx-ad at this point
    (a refusal is shown as such, "refused" or "no rule", and needs no declaration); a reason wrapped in `Defect`
    says the engine is wrong at this point rather than following another convention; `departs` the reason
    the chapter's value here departs from the book's convention policy (book/method), which lists every departure."""

    at: str
    inputs: list
    expect: dict
    cotangents: list | None = None
    torch: str | None = None
    ort: str | None = None
    onnxad: str | None = None
    attrs: dict = field(default_factory=dict)
    departs: str | None = None


def _same(a, b, rtol) -> bool:
    if a is None or b is None:
        a = np.zeros(np.shape(b)) if a is None and b is not None else a
        b = np.zeros(np.shape(a)) if b is None and a is not None else b
        if a is None and b is None:
            return True
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape and a.size != b.size:
        return False
    a, b = a.ravel(), b.ravel()
    finite = np.abs(b[np.isfinite(b)])
    return _max_err(a, b) <= 1e-12 + rtol * (float(np.max(finite)) if finite.size else 0.0)


def _fmt(v) -> str:
    if v is None:
        return "None"
    a = np.asarray(v, np.float64)
    with np.errstate(all="ignore"):
        r = np.where(np.isfinite(a), np.round(a, 6), a) + 0.0
    if r.size == 1:
        return str(r.item())
    if r.ndim > 1:  # one line per table row: nested lists, not numpy's multi-line layout
        return str(r.tolist()).replace(" ", "")
    return np.array2string(r, separator=", ")


def check_conventions(op, vjp, points: list[Special], *, twin=None, attrs=None, ort: bool = True,
                      onnxad: bool = True, rtol_ort: float = 1e-5, reals: bool = False,
                      onnxad_runner: str = "onnx.reference") -> CheckResult:
    """Assert `vjp` at each special point, and compare it with PyTorch (`twin`), ONNX Runtime and onnx-ad there.

    vjp must equal the expected value (NaN matches NaN, infinities must match, None matches a zero gradient);
    PyTorch and onnx-ad (float64) must equal vjp within 1e-9 relative, ONNX Runtime (float32) within `rtol_ort`,
    unless the point declares a difference with its reason. Prints the table: point, input, vjp, PyTorch,
    ONNX Runtime, onnx-ad, agreement.

    With `reals`, the float formats NumPy does not call floating (float8, float6, float4, bfloat16) are read as real
    numbers, as check_vjp_fd(reals=True) reads them: an output of such a type gets the default cotangent of ones, vjp
    may return a gradient for an input of such a type, and ONNX Runtime and onnx-ad are asked in that reading
    (ort_gradient and onnxad_gradient with reals=True). A PyTorch twin's output of a float8 type is differentiated as
    PyTorch does, with the cotangent in the output's dtype.

    `onnxad_runner="onnxruntime"` runs onnx-ad's adjoint model with ONNX Runtime (opset relabelled 21) instead of
    onnx.reference, as check_vjp_onnxad(runner=) does, where onnx.reference cannot run it (a Scan in reverse
    direction); the table's caption says so, and the chapter says why the relabelling keeps the meaning.
    """
    if onnxad_runner not in ("onnx.reference", "onnxruntime"):
        raise ValueError(f"onnxad_runner is onnx.reference or onnxruntime, not {onnxad_runner!r}")

    def real(v):
        return _is_float(v) or (reals and _is_float_format(v))

    info = op_info(op)
    rows, notes, named, departs = [], [], [], []
    for p in points:
        attrs_p = {**(attrs or {}), **p.attrs}
        full = info.with_defaults(attrs_p)
        xs = list(p.inputs)
        outs = run_onnx(op, xs, attrs_p)
        cot = p.cotangents if p.cotangents is not None else [np.ones(y.shape) if real(y) else None
                                                              for y in outs]
        grads = _call_vjp(op, vjp, xs, cot, full, reals=reals)
        # the inputs the chapter states a convention for: (position, name, name as shown)
        stated = [(i, info.input_name(i), _shown_name(info, i)) for i, x in enumerate(xs) if x is not None]
        stated = [(i, name, shown) for i, name, shown in stated if shown in p.expect or name in p.expect]
        # vjp's value at the point against the chapter's convention, before any engine is asked there
        for i, name, shown in stated:
            x, want, got = xs[i], p.expect.get(shown, p.expect.get(name)), grads[i]
            if want is None:
                if got is not None and np.any(np.asarray(got) != 0):
                    raise AssertionError(f"{op}: at {p.at}, vjp gives {_fmt(got)} for {shown}; the chapter says None")
            elif got is None or not _same(got, np.broadcast_to(np.asarray(want, np.float64), np.shape(x)), 1e-12):
                raise AssertionError(f"{op}: at {p.at}, vjp gives {_fmt(got)} for {shown}; the chapter's convention "
                                     f"is {_fmt(want)}")
        tg = None
        if twin is not None:
            tens = torch_leaves(xs)
            t_outs = _as_list(twin(*tens, **full))
            if reals:  # PyTorch takes a cotangent in the output's dtype (a float8 one too)
                import torch
                t_cot = [None if g is None or not torch.is_floating_point(o) else
                         torch.tensor(np.asarray(g, np.float64)).to(o.dtype) for o, g in zip(t_outs, cot)]
                leaves = [t for t in tens if t is not None and t.requires_grad]
                pairs = [(o, g) for o, g in zip(t_outs, t_cot) if g is not None and o.requires_grad]
                got = autograd_vjp(pairs, leaves) if leaves and pairs else [None] * len(leaves)
                res = {id(t): (None if not pairs else np.zeros(tuple(t.shape)) if r is None else
                               r.detach().double().numpy()) for t, r in zip(leaves, got)}
                tg = [None if t is None else res.get(id(t)) for t in tens]
            else:
                tg = torch_gradients(tens, t_outs, cot)
        ort_note = ""
        og = None
        if ort and all(g is None for g in cot):
            ort_note = "no cotangent"  # nothing to differentiate: ONNX Runtime is not asked
        elif ort:
            x32 = [None if x is None else (np.asarray(x, np.float32) if _is_float(x) else x) for x in xs]
            if any(_is_float(x) and not np.array_equal(np.asarray(x, np.float32), x, equal_nan=True) for x in xs):
                raise AssertionError(f"{op}: the special point {p.at} is not exactly representable in float32, "
                                     "so ONNX Runtime would see another point")
            try:
                og = ort_gradient(op, x32, cot, attrs_p, reals=reals)
            except NoGradientBuilder as e:
                ort_note = "refused" if e.refused else "no builder"
        ad_note, ag = "", None
        if onnxad and all(g is None for g in cot):
            ad_note = "no cotangent"
        elif onnxad:
            try:
                ag = onnxad_gradient(op, xs, cot, attrs_p, reals=reals, runner=onnxad_runner, outs=outs)
            except NoOnnxAdGradient as e:
                ad_note = "refused" if e.refused else "no rule"  # shown as such: nothing compared
        torch_ok = ort_ok = ad_ok = True
        differing = []  # (engine, input name, vjp's value, the engine's value as shown) where an engine differs
        for i, name, shown in stated:
            x, got = xs[i], grads[i]  # got equals the chapter's convention (asserted above)
            t_val = tg[i] if tg is not None else None
            o_val = og[i] if og is not None else None
            t_same = tg is None or _same(got, t_val, 1e-9)
            # the engines' gradient of a float-format input is in its format: vjp's, rounded so, is compared
            got_e = got if got is None or not (reals and _is_float_format(x)) else \
                np.asarray(got, np.float64).astype(np.asarray(x).dtype).astype(np.float64)
            o_same = og is None or (o_val is None and (got is None or not np.any(np.asarray(got)))) or \
                (o_val is not None and _same(got_e, o_val, rtol_ort))
            a_val = ag[i] if ag is not None else None
            a_same = ag is None or _same(got_e, a_val, 1e-9)
            torch_ok &= t_same
            ort_ok &= o_same
            ad_ok &= a_same
            if not o_same:
                differing.append(("ONNX Runtime", name, _fmt(got), None))  # float32, by processor: not stored
            if not a_same:
                differing.append(("onnx-ad", name, _fmt(got), _fmt(a_val)))
            agree = []
            if tg is not None:
                agree.append("PyTorch agrees" if t_same else "PyTorch differs")
            if og is not None:
                agree.append("ONNX Runtime agrees" if o_same else "ONNX Runtime differs")
            if ag is not None:
                agree.append("onnx-ad agrees" if a_same else "onnx-ad differs")
            # onnx-ad fills the adjoint of an input no gradient reaches with zeros: that is its None
            a_none = None if a_val is None or not np.any(np.asarray(a_val)) else a_val
            ran = [v for v, side in ((t_val, tg), (o_val, og), (a_none, ag)) if side is not None]
            if got is None and ran and all(v is None for v in ran):
                agree = ["None on every side: nothing compared"]  # vjp's None is asserted; no value was compared
            # ONNX Runtime's value is a float32 result of its own kernels, which differ by processor: shown as
            # measured; what is compared is the agreement column, which the check asserts within rtol_ort
            o_text = ort_note or ("not run" if not ort else ("None" if o_val is None else Measured(_fmt(o_val))))
            a_text = ad_note or ("not run" if not onnxad else _fmt(a_val))
            rows.append([p.at, shown, _fmt(got), "not run" if tg is None else _fmt(t_val), o_text, a_text,
                         ", ".join(agree) or "vjp asserted"])
            departs.append(p.departs or "")
            if name not in named:
                named.append(name)
        for who, ok, reason in (("PyTorch", torch_ok, p.torch), ("ONNX Runtime", ort_ok, p.ort),
                                ("onnx-ad", ad_ok, p.onnxad)):
            if not ok and not reason:
                raise AssertionError(f"{op}: at {p.at}, {who} differs from vjp; declare the difference with its "
                                     "reason, or follow the book's convention")
            if reason and who == "onnx-ad" and ag is None:
                raise AssertionError(f"{op}: at {p.at}, a difference from onnx-ad is declared, but onnx-ad gave no "
                                     f"gradient there ({ad_note}): a declared difference needs its witness")
            if ok and reason and not (who == "ONNX Runtime" and og is None) and not (who == "onnx-ad" and ag is None):
                raise AssertionError(f"{op}: at {p.at}, a difference from {who} is declared, but {who} agrees with "
                                     "vjp; update the chapter")
            if reason and not ok:
                notes.append(f"{who} at {p.at}: {reason}")
                for engine, name, mine, theirs in differing:
                    if engine == who:
                        values = {"vjp": mine, **({"engine": theirs} if theirs is not None else {})}
                        what = {"what": "wrong value"} if isinstance(reason, Defect) else {}
                        record(op, name, "ort-convention" if who == "ONNX Runtime" else "onnxad-convention", vjp,
                               detail=str(reason), data={"case": p.at, "values": values, **what})
        if p.departs:
            notes.append(f"departure from the book's convention policy at {p.at}: {p.departs}")
    for name in named:
        record(op, name, "convention", vjp)
    caption = f"{op}: vjp at the special points (asserted)" + (
        "; onnx-ad's adjoint run by ONNX Runtime (opset relabelled 21)" if onnxad and onnxad_runner == "onnxruntime"
        else "")
    table = Table(["point", "input", "vjp", "PyTorch", "ONNX Runtime", "onnx-ad", "agreement"], rows,
                  caption=caption, css_class="proofkit-table proofkit-conventions")
    return ConventionResult(op, table, notes, departs)


CONVENTIONS_MIME = "application/vnd.proofkit.conventions+json"


class ConventionResult(CheckResult):
    """The asserted table; its points are also stored as data (CONVENTIONS_MIME) for the published verdicts."""

    def __init__(self, op, table, notes, departs=None):
        super().__init__("conventions", op, [], summary="")
        self.table, self.notes = table, notes
        self.departs = list(departs or [""] * len(table.rows))  # per row: why it departs from the policy, or ""

    def as_json(self) -> dict:
        return {"op": self.op, "points": [{"at": r[0], "input": r[1], "vjp": r[2], **({"departs": d} if d else {})}
                                          for r, d in zip(self.table.rows, self.departs)]}

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": repr(self), "text/html": self._repr_html_(), CONVENTIONS_MIME: self.as_json()}

    def __repr__(self):
        text = repr(self.table)
        return text + ("\n" + "\n".join("Declared: " + n for n in self.notes) if self.notes else "")

    def _repr_html_(self):
        import html
        notes = "".join(f"<p>Declared: {html.escape(n)}</p>" for n in self.notes)
        return self.table._repr_html_() + notes
