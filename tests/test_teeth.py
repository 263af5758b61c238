"""Teeth: every chapter turns red, by its own assertions, when its backward rule, its conventions, its verdict labels
or the function its verdict is bound to are wrong.

Each chapter runs once, correct, in one kernel; then, in the same kernel, each mutant is applied and the chapter's
own code must raise (AssertionError or VerdictError), which is what `--nbval-lax` would report as a failure:

- label mutants: each input and output's verdict swapped for the other label of the same ONNX tag
  (differentiable <-> differentiable almost everywhere, zero almost everywhere <-> non-differentiable), then the
  chapter's verdict cell run on the swapped claim;
- a swap mutant: the verdict bound to a function equal in behaviour to vjp, but not the one the checks ran on;
- special-point mutants: for each row of the chapter's SPECIAL table, vjp changed only at that point (every other
  call unchanged), then the chapter's check_conventions cells re-run;
- a wrong-rule mutant: every gradient scaled by 1.001 (a zero gradient where the chapter says None), the evidence
  cleared, and every cell from the definition of vjp to the verdict re-run.

The kill counts are written to _build/teeth/<Op>.json.
"""

import ast
import json
import re

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager

from chapters import NOTEBOOKS, ROOT, source

SWAP = {"differentiable": "differentiable almost everywhere", "differentiable almost everywhere": "differentiable",
        "zero almost everywhere": "non-differentiable", "non-differentiable": "zero almost everywhere"}

SETUP = """
import numpy as _np
from proofkit.evidence import _reset as _teeth_reset
_teeth_vjp = vjp

def _teeth_scaled(inputs, cotangents, **attrs):
    out = []
    for x, g in zip(inputs, _teeth_vjp(inputs, cotangents, **attrs)):
        out.append(_np.asarray(g) * 1.001 if g is not None else (None if x is None else _np.zeros(_np.shape(x))))
    return out

def _teeth_at(point):
    def mutant(inputs, cotangents, **attrs):
        out = list(_teeth_vjp(inputs, cotangents, **attrs))
        same = len(inputs) == len(point.inputs) and all(
            (a is None and b is None) or (a is not None and b is not None and _np.shape(a) == _np.shape(b)
                                          and _np.array_equal(_np.asarray(a), _np.asarray(b), equal_nan=True))
            for a, b in zip(inputs, point.inputs))
        if same:
            for i, x in enumerate(inputs):
                if x is not None and _np.issubdtype(_np.asarray(x).dtype, _np.floating):
                    g = out[i]
                    g = _np.zeros(_np.shape(x)) if g is None else _np.asarray(g, float)
                    out[i] = _np.where(_np.isfinite(g), g + 0.25, 0.25)  # an infinity or NaN becomes 0.25
                    break
        return out
    return mutant
"""


def _code_cells(nb):
    return [(k, c) for k, c in enumerate(nb.cells) if c.cell_type == "code"]


def _run(client, cell, index) -> str | None:
    """Execute a cell; the name of the error it raised, or None."""
    try:
        client.execute_cell(cell, index)
    except CellExecutionError as e:
        return e.ename
    return None


def _code(text):
    return nbformat.v4.new_code_cell(text)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_mutants_are_killed_by_the_chapter(path):
    nb = nbformat.read(path, as_version=4)
    km = KernelManager(kernel_name=CURRENT_ENV_KERNEL_NAME, kernel_spec_manager=NbvalKernelspecManager())
    client = NotebookClient(nb, km=km, timeout=300, allow_errors=False,
                            resources={"metadata": {"path": str(ROOT / "proofs")}})
    killed, survived = {"label": 0, "swap": 0, "special": 0, "rule": 0}, []
    with client.setup_kernel():
        cells = _code_cells(nb)
        for k, c in cells:  # the chapter, correct
            client.execute_cell(c, k)
        client.execute_cell(_code(SETUP), 0)
        probe = _code("print(json.dumps({'verdicts': {n: v for n, (v, r) in CLAIM.verdicts.items()}, "
                      "'special': len(globals().get('SPECIAL', []))}))")
        client.execute_cell(_code("import json"), 0)
        client.execute_cell(probe, 0)
        info = json.loads("".join(o.get("text", "") for o in probe.outputs))

        for name, verdict in info["verdicts"].items():
            swapped = SWAP[verdict]
            mutant = _code(f"Claim(CLAIM.op, {{**CLAIM.verdicts, {name!r}: ({swapped!r}, 'mutant')}}, "
                           "CLAIM.disagreements).verdict(vjp)")
            err = _run(client, mutant, 0)
            (survived.append(f"label {name}: {swapped}") if err not in {"VerdictError", "AssertionError"}
             else killed.__setitem__("label", killed["label"] + 1))

        err = _run(client, _code("def _teeth_same(*a, **k):\n    return _teeth_vjp(*a, **k)\n\n"
                                 "CLAIM.verdict(_teeth_same)"), 0)
        (survived.append("swap") if err != "VerdictError" else killed.__setitem__("swap", killed["swap"] + 1))

        conv = [(k, c) for k, c in cells if "check_conventions(" in source(c)]
        for j in range(info["special"]):
            client.execute_cell(_code(f"vjp = _teeth_at(SPECIAL[{j}])"), 0)
            errs = [_run(client, c, k) for k, c in conv]
            client.execute_cell(_code("vjp = _teeth_vjp"), 0)
            (survived.append(f"special point {j}") if not any(e == "AssertionError" for e in errs)
             else killed.__setitem__("special", killed["special"] + 1))

        start = max(k for k, c in cells if re.search(r"^def vjp\(", source(c), re.M))
        client.execute_cell(_code("_teeth_reset()"), 0)
        err = None
        for k, c in cells:
            if k < start:
                continue
            if k == start:  # redefine vjp as the chapter does, then break it before anything in the cell uses it
                lines = source(c).splitlines()
                end = next(node.end_lineno for node in ast.parse(source(c)).body
                           if isinstance(node, ast.FunctionDef) and node.name == "vjp")
                c = _code("\n".join(lines[:end] + ["_teeth_vjp = vjp", "vjp = _teeth_scaled"] + lines[end:]))
            err = _run(client, c, k)
            if err:
                break
        (survived.append("wrong rule") if err not in {"VerdictError", "AssertionError"}
         else killed.__setitem__("rule", killed["rule"] + 1))

    out = ROOT / "_build" / "teeth"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{path.stem}.json").write_text(json.dumps({"killed": killed, "survived": survived}) + "\n")
    assert not survived, f"mutants the chapter did not kill: {survived}"
