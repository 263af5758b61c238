"""The teeth machinery itself (tests/teeth.py): a chapter that asserts its conventions kills every mutant, and one
that leaves a special point unasserted lets that point's mutant survive, which fails its teeth item."""

import ast

import pytest

from proofkit.evidence import _reset
from teeth import KERNEL_CODE, SWAP

CELLS = [
    """import numpy as np
import sympy as sp
import torch
from proofkit import (Claim, Special, check_conventions, check_vjp_fd, check_vjp_onnxad, check_vjp_ort,
                      check_vjp_symbolic, samplers, witness_kink)
CLAIM = Claim("Relu", {"X": ("differentiable almost everywhere", "kink at 0"),
                       "Y": ("differentiable almost everywhere", "of X")})""",
    """def vjp(inputs, cotangents, **attrs):
    (X,), (g,) = inputs, cotangents
    if not np.issubdtype(np.asarray(X).dtype, np.floating):
        return [None]
    return [np.where(X > 0, g, 0.0)]""",
    """x, p, g = sp.Symbol("x", real=True), sp.Symbol("p", positive=True), sp.Symbol("g", real=True)
check_vjp_symbolic("Relu", {"X": [x]}, {"Y": [sp.Max(0, x)]}, {"Y": [g]}, {"X": [g * sp.Heaviside(x, 0)]},
                   pieces=[{x: p}, {x: -p}], vjp=vjp)
X = samplers.uniform((3, 4), seed=0, avoid=[0.0])
check_vjp_fd("Relu", vjp, [X])
check_vjp_ort("Relu", vjp, [X])
check_vjp_onnxad("Relu", vjp, [X])
witness_kink("Relu", [np.array([0.0])])""",
    """SPECIAL = [Special("X = 0", [np.array(0.0)], {"X": 0.0}), Special("X = 2^-20", [np.array(2.0 ** -20)], {"X": 1.0})]
check_conventions("Relu", vjp, SPECIAL, twin=torch.relu)""",
    "CLAIM.verdict(vjp)",
]


def run_teeth(cells, tmp_path):
    _reset()
    ns = {"ast": ast}
    for src in cells:
        exec(compile(src, "<cell>", "exec"), ns)
    exec(compile(KERNEL_CODE, "<teeth>", "exec"), ns)
    conv = [s for s in cells if "check_conventions(" in s]
    ns["_proofkit_teeth"](cells, 1, conv, str(tmp_path / "Relu.json"), SWAP)
    return (tmp_path / "Relu.json").read_text()


def test_a_chapter_with_asserted_conventions_kills_every_mutant(tmp_path):
    assert '"killed": {"label": 2, "swap": 1, "special": 2, "rule": 1}, "survived": []' in run_teeth(CELLS, tmp_path)


def test_a_special_point_that_nothing_asserts_lets_its_mutant_survive(tmp_path):
    # the table names 2^-20, but the check only runs on the first row: what vjp returns there is not asserted
    unchecked = CELLS[:3] + [CELLS[3].replace("check_conventions(\"Relu\", vjp, SPECIAL,",
                                              "check_conventions(\"Relu\", vjp, SPECIAL[:1],")] + CELLS[4:]
    assert "SPECIAL[:1]" in unchecked[3]
    with pytest.raises(AssertionError, match=r"mutants the chapter did not kill: \['special point 1: X = 2\^-20'\]"):
        run_teeth(unchecked, tmp_path)


def _scaled_one():
    ns = {}
    exec(compile(KERNEL_CODE, "<teeth>", "exec"), ns)
    return ns["_proofkit_scaled_one"]


def test_the_rule_mutant_scales_float_gradients_and_keeps_none_for_inputs_that_are_not_float():
    import numpy as np
    scaled_one, changed = _scaled_one(), []
    assert scaled_one(np.array(True), None, changed) is None  # If's cond: a pure scaling, not a type error
    assert scaled_one(np.array([1, 2], np.int64), None, changed) is None  # indices
    assert scaled_one([np.array([1], np.int64)], None, changed) is None  # a sequence of integers
    assert not changed  # nothing differs from vjp's gradients so far
    assert np.array_equal(scaled_one(np.array([1.0, 2.0]), None, changed), [0.0, 0.0])  # a float input: zeros
    assert np.allclose(scaled_one(np.array([1.0]), np.array([2.0]), changed), [2.002])
    seq = scaled_one([np.array([1.0]), np.array([2.0, 3.0])], [None, np.array([1.0, -1.0])])
    assert np.array_equal(seq[0], [0.0]) and np.allclose(seq[1], [1.001, -1.001])
    assert changed


def test_a_rule_mutant_of_only_zeros_and_nones_changes_nothing():
    import numpy as np
    scaled_one, changed = _scaled_one(), []
    scaled_one(np.array([1.0, 2.0]), np.zeros(2), changed)
    scaled_one(np.array(3, np.int64), None, changed)
    assert not changed  # not counted as a mutant: there is no rule to break
    scaled_one(np.array(3, np.int64), np.array(1), changed)  # a gradient for an integer input is still scaled
    assert changed
