"""Teeth: every chapter must turn red, by its own assertions, when its backward rule, its values at its special
points, its verdict labels or the function its verdict is bound to are wrong.

The mutants run in the chapter's own nbval kernel, right after its last cell (conftest.py appends one item, "teeth",
to each chapter under proofs/), so a chapter is executed once for nbval and its mutants together:

- label mutants: each input and output's verdict swapped for the other label of the same ONNX tag
  (differentiable <-> differentiable almost everywhere, zero almost everywhere <-> non-differentiable), then bound;
- a swap mutant: the verdict bound to a function that behaves like vjp but is not the one the checks ran on;
- special-point mutants: for each row of the chapter's SPECIAL table, vjp changed only at that point (a finite value
  moved by 0.25 plus a millionth of itself, an infinity or NaN replaced by 0.25, None replaced by 0.25), then the chapter's check_conventions
  cells re-run;
- a wrong-rule mutant: every gradient scaled by 1.001 (a zero gradient where the chapter says None for a float input;
  None kept for an input that is not float), the evidence cleared, and every cell from the definition of vjp on
  re-run (not counted when it changes no gradient: a vjp that only gives None to non-float inputs, or zeros).

A mutant is killed when the chapter's code raises AssertionError (VerdictError is one): what `--nbval-lax` reports as
a failure. The counts are written to _build/teeth/<Op>.json; a surviving mutant fails the item.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWAP = {"differentiable": "differentiable almost everywhere", "differentiable almost everywhere": "differentiable",
        "zero almost everywhere": "non-differentiable", "non-differentiable": "zero almost everywhere"}

#: Runs in the chapter's kernel; %r placeholders are filled with the chapter's cell sources and paths.
KERNEL_CODE = r'''
def _proofkit_scaled_one(x, g, changed=None):
    """The wrong-rule mutant's gradient for input x: vjp's gradient g scaled by 1.001, a zero gradient where vjp says
    None for a float input; None stays None for an input that is not float (cond, indices), so the mutant is a pure
    scaling and not killed by the kit's type check. `changed` (a list) gets True when the result differs from g."""
    import numpy as _np
    from proofkit.values import is_float as _is_float, is_sequence as _is_seq
    if x is None or (g is None and not _is_float(x)):
        return None
    if _is_seq(x) and x != []:  # a sequence (a list of arrays, proofkit.values): element by element
        g = [None] * len(x) if g is None else g
        return [_proofkit_scaled_one(xe, e, changed) for xe, e in zip(x, g)]
    if g is None:
        if changed is not None:
            changed.append(True)
        return _np.zeros(_np.shape(x))
    if changed is not None and _np.any(_np.asarray(g) != 0):
        changed.append(True)
    return _np.asarray(g) * 1.001


def _proofkit_teeth(cells, vjp_cell, conv_cells, out_path, swap):
    import json as _json
    import numpy as _np
    from pathlib import Path as _Path
    from proofkit.evidence import _reset
    from proofkit.verdict import Claim as _Claim
    ns = globals()

    def killed_by(fn):
        try:
            fn()
        except AssertionError:
            return True
        except Exception:  # noqa: BLE001 - any other error is not the chapter's own assertion
            return False
        return False

    def run(src):
        exec(compile(src, "<chapter cell>", "exec"), ns)

    correct, claim = ns["vjp"], ns["CLAIM"]
    kills, survived = {"label": 0, "swap": 0, "special": 0, "rule": 0}, []

    for name, (verdict, _) in claim.verdicts.items():
        def bind(name=name, verdict=verdict):
            _Claim(claim.op, {**claim.verdicts, name: (swap[verdict], "mutant")}, claim.disagreements).verdict(correct)
        if killed_by(bind):
            kills["label"] += 1
        else:
            survived.append(f"label {name}: {swap[verdict]}")

    def same(*args, **kwargs):
        return correct(*args, **kwargs)
    if killed_by(lambda: claim.verdict(same)):
        kills["swap"] += 1
    else:
        survived.append("swap")

    def at(point):
        def mutant(inputs, cotangents, **attrs):
            out = list(correct(inputs, cotangents, **attrs))
            hit = len(inputs) == len(point.inputs) and all(
                (a is None and b is None) or (a is not None and b is not None and _np.shape(a) == _np.shape(b)
                                              and _np.array_equal(_np.asarray(a), _np.asarray(b), equal_nan=True))
                for a, b in zip(inputs, point.inputs))
            if hit:
                for i, x in enumerate(inputs):
                    if x is not None and _np.issubdtype(_np.asarray(x).dtype, _np.floating):
                        g = _np.zeros(_np.shape(x)) if out[i] is None else _np.asarray(out[i], float)
                        out[i] = _np.where(_np.isfinite(g), g + 0.25 + 1e-6 * _np.abs(g), 0.25)
                        break
            return out
        return mutant

    for j, point in enumerate(ns.get("SPECIAL", [])):
        ns["vjp"] = at(point)
        hit = any(killed_by(lambda src=src: run(src)) for src in conv_cells)
        ns["vjp"] = correct
        if hit:
            kills["special"] += 1
        else:
            survived.append(f"special point {j}: {point.at}")

    _reset()
    tree = ast.parse(cells[vjp_cell])
    end = next(n.end_lineno for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "vjp")
    lines = cells[vjp_cell].splitlines()
    broken = "\n".join(lines[:end] + ["vjp = _proofkit_scaled(vjp)"] + lines[end:])

    changed = []  # whether the mutant ever gave a gradient other than vjp's

    def scaled_one(x, g):
        return _proofkit_scaled_one(x, g, changed)

    def scaled(fn):
        def mutant(inputs, cotangents, **attrs):
            got = fn(inputs, cotangents, **attrs)
            if attrs.get("outer") is not None:  # a nested graph's rule: (gradients, outer gradients), both scaled
                grads, og = got
                return ([scaled_one(x, g) for x, g in zip(inputs, grads)],
                        {k: scaled_one(attrs["outer"][k], g) for k, g in og.items()})
            return [scaled_one(x, g) for x, g in zip(inputs, got)]
        return mutant
    ns["_proofkit_scaled"] = scaled

    def rerun():
        for src in [broken] + cells[vjp_cell + 1:]:
            run(src)
    if not claim.info.inputs:
        pass  # an operator without inputs (Constant): vjp returns no gradient, so there is no rule to break
    elif killed_by(rerun):
        kills["rule"] += 1
    elif not changed:
        pass  # vjp gave only None for non-float inputs, or zeros: scaling changes nothing, there is no rule to break
    else:
        survived.append("wrong rule")

    _Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    _Path(out_path).write_text(_json.dumps({"killed": kills, "survived": survived}) + "\n")
    assert not survived, f"mutants the chapter did not kill: {survived}"
    print("mutants killed:", kills)
'''


def teeth_code(path: Path) -> str:
    """The code of the teeth item for one chapter: the kernel function and its call on the chapter's cells."""
    nb = json.loads(Path(path).read_text())
    cells = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
             for c in nb["cells"] if c["cell_type"] == "code"]
    vjp_cell = max(k for k, s in enumerate(cells) if re.search(r"^def vjp\(", s, re.M))
    conv = [s for s in cells if "check_conventions(" in s]
    out = ROOT / "_build" / "teeth" / f"{Path(path).stem}.json"
    return ("import ast\n" + KERNEL_CODE +
            f"\n_proofkit_teeth({cells!r}, {vjp_cell!r}, {conv!r}, {str(out)!r}, {SWAP!r})\n")
