"""Breaking any chapter's backward rule turns the chapter red.

Each chapter is executed with its `vjp` replaced, right after its definition, by a wrong one: every gradient scaled by
1.001, and a zero gradient for every present input where the chapter says None. The chapter's own checks or its
verdict must then fail.
"""

import ast

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

from proofkit.runner import execute
from chapters import NOTEBOOKS, ROOT, source

BREAK = """
import numpy as _np
_correct_vjp = vjp

def vjp(inputs, cotangents, **attrs):
    broken = []
    for x, g in zip(inputs, _correct_vjp(inputs, cotangents, **attrs)):
        if g is not None:
            broken.append(_np.asarray(g) * 1.001)
        elif x is not None:  # a gradient where the chapter says there is none (float or discrete input)
            broken.append(_np.zeros(_np.shape(x)))
        else:
            broken.append(None)
    return broken
"""


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_wrong_backward_rule_fails_the_chapter(path):
    nb = nbformat.read(path, as_version=4)
    where = max(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "def vjp(" in source(c))
    # splice the wrong rule in right after the definition, before anything in the same cell can use the right one
    lines = source(nb.cells[where]).splitlines()
    end = next(node.end_lineno for node in ast.parse("\n".join(lines)).body
               if isinstance(node, ast.FunctionDef) and node.name == "vjp")
    nb.cells[where].source = "\n".join(lines[:end] + BREAK.splitlines() + lines[end:])
    with pytest.raises(CellExecutionError) as err:
        execute(nb, ROOT / "proofs", timeout=300)
    assert err.value.ename in {"AssertionError", "VerdictError"}, err.value.ename
