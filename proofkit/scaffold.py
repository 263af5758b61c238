"""`python -m proofkit new <Op>`: a chapter skeleton from the schema, registered in _toc.yml."""

from __future__ import annotations

from pathlib import Path

import nbformat

from .audit import ROOT, write_all
from .contract import HEADINGS, OPTIONAL_HEADINGS
from .families import family_of
from .rules import RULE_TAG
from .schema import op_info

TODO = 'raise NotImplementedError("{}")'


def _claim_source(op) -> str:
    info = op_info(op)
    lines = [f"CLAIM = Claim({op!r}, {{"]
    for f in info.formals:
        guess = {"Differentiable": "differentiable", "NonDifferentiable": "non-differentiable"}.get(f.tag, "???")
        lines.append(f"    {f.name!r}: ({guess!r}, 'one-line reason'),  # ONNX tag: {f.tag}")
    lines.append("})\nCLAIM")
    return "\n".join(lines)


def notebook(op: str) -> nbformat.NotebookNode:
    info = op_info(op)
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell

    def boilerplate(source):  # collapsed on the page (the output stays), so the verdict is on the first screen
        return code(source, metadata={"tags": ["hide-input"]})

    names = ", ".join(f.name for f in info.inputs)
    cells = [
        md(f"# {op}\n\nOne paragraph: what {op} computes, and the question this chapter settles."),
        boilerplate("import numpy as np\nimport sympy as sp\nimport torch\n\n"
                    "from proofkit import (Claim, Special, attributes, check_conventions, check_forward, check_vjp_fd,\n"
                    "                      check_vjp_ort, check_vjp_symbolic, check_vjp_torch, run_onnx, samplers, show,\n"
                    "                      signature, witness_jump, witness_kink, witness_unbounded)"),
        md("The verdict at a glance (bound to the checks in the last section):"),
        boilerplate(_claim_source(op)),
        boilerplate(f"signature({op!r})"),
        boilerplate(f"attributes({op!r})"),
        md(f"## {HEADINGS[0]}\n\nThe forward math from the ONNX spec, then a SymPy model on a small symbolic instance."),
        code(TODO.format("a SymPy model, and check_forward against onnx.reference on each attribute variant")),
        md(f"## {HEADINGS[1]}\n\nThe Jacobian of the instance; name the set where it does not exist and witness a "
           "point of it from onnx.reference."),
        code(TODO.format("sp.Matrix(outputs).jacobian(inputs); witness_kink / witness_jump / witness_unbounded")),
        md(f"## {HEADINGS[2]}\n\nThe rule as a reader writes it on paper, typed in SymPy (never a derivative of the "
           "model), for general shapes and attributes; then vjp, and the proof that ties them."),
        code(TODO.format("rule_general = ... (typed by hand)")),
        code(f"def vjp(inputs, cotangents, **attrs):\n    {names} = inputs\n"
             f"    {TODO.format('one entry per input: a gradient of its shape, or None (always None for integers)')}",
             metadata={"tags": [RULE_TAG]}),  # proofkit.rules.load_vjp runs it (tag the helpers it uses too)
        code(TODO.format("check_vjp_symbolic(..., pieces=[...], vjp=vjp)")),
        md(f"## {HEADINGS[3]}\n\nSmall numbers a reader can check by hand."),
        code(TODO.format("numeric example 1")),
        md(f"## {HEADINGS[4]}\n\nA second case: broadcasting, another attribute, or a point near a kink."),
        code(TODO.format("numeric example 2")),
        md(f"## {HEADINGS[5]}\n\nvjp against PyTorch autograd, finite differences of onnx.reference and ONNX "
           "Runtime's executed gradient, far from and next to every kink, pole and edge (samplers.near)."),
        code(TODO.format("check_vjp_torch, check_vjp_fd and check_vjp_ort on realistic shapes, every attribute variant")),
        md(f"## {OPTIONAL_HEADINGS[0]}\n\nThe special points, with the value vjp must return at each (delete this "
           "section if the operator has none)."),
        code(TODO.format(f"SPECIAL = [Special(label, inputs, expect=...), ...]; "
                         f"check_conventions({op!r}, vjp, SPECIAL, twin=twin)")),
        md(f"## {HEADINGS[6]}"),
        code("CLAIM.verdict(vjp)"),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def new_chapter(op: str, root: Path = ROOT, force: bool = False) -> Path:
    op_info(op)  # clear error for an unknown name
    family_of(op)
    path = root / "proofs" / f"{op}.ipynb"
    if path.exists() and not force:
        raise FileExistsError(f"{path} exists; pass --force to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook(op), path)
    write_all(root)
    return path
