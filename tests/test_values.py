"""Sequences and optionals in the kit (proofkit.values): the structure of a value, and every check on a sequence,
a correct rule passing and a wrong one rejected."""

import numpy as np
import onnx
import pytest
import sympy as sp

import proofkit.onnxad as onnxad_mod
import proofkit.ortgrad as ortgrad_mod
from proofkit import (Claim, check_forward, check_vjp_fd, check_vjp_onnxad, check_vjp_ort, check_vjp_symbolic,
                      check_vjp_torch, run_onnx, witness_selects)
from proofkit import values
from proofkit.evidence import _reset, facts

rng = np.random.default_rng(3)
SEQ = [rng.standard_normal((2, 3)), rng.standard_normal(4), rng.standard_normal((1, 2))]


@pytest.fixture(autouse=True)
def clean_evidence():
    _reset()
    yield
    _reset()


def at_vjp(inputs, cotangents, **attrs):
    seq, pos = inputs
    p = int(pos) % len(seq)
    return [[cotangents[0] if j == p else None for j in range(len(seq))], None]


def at_vjp_wrong_element(inputs, cotangents, **attrs):  # right structure and shapes, half the cotangent
    seq, pos = inputs
    p = int(pos) % len(seq)
    return [[0.5 * cotangents[0] if j == p else np.zeros(np.shape(seq[j])) for j in range(len(seq))], None]


def at_twin(seq, pos):
    return seq[int(pos)]


def construct_vjp(inputs, cotangents, **attrs):
    return list(cotangents[0])


def construct_vjp_swapped(inputs, cotangents, **attrs):  # the cotangent list reversed (elements of one shape)
    return list(cotangents[0])[::-1]


# -- the module --------------------------------------------------------------------------------------------------
def test_kinds_flatten_and_unflatten():
    assert values.kind(None) == "none" and values.kind(SEQ) == "sequence" and values.kind(SEQ[0]) == "tensor"
    assert values.kind([[1.0, 2.0], [3.0, 4.0]]) == "tensor"  # nested numbers stay a tensor
    assert values.is_sequence([]) and values.is_sequence([None, SEQ[1]])  # empty, and a cotangent with a None entry
    flat, spec = values.flatten([SEQ, None, SEQ[0]])
    assert len(flat) == 4 and spec == [3, None, "tensor"]
    back = values.unflatten(spec, flat)
    assert len(back[0]) == 3 and back[1] is None and back[2] is SEQ[0]
    with pytest.raises(ValueError):
        values.unflatten(spec, flat[:3])


def test_arithmetic_on_a_tensor_is_the_old_arithmetic():
    x, u = SEQ[0], rng.standard_normal((2, 3))
    assert np.array_equal(values.add_scaled(x, 1e-6, u), x + 1e-6 * u)
    assert np.array_equal(values.add_scaled(x, -1e-6, u), x - 1e-6 * u)
    assert values.dot(u, x) == float(np.sum(u * x))
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    assert np.array_equal(values.draw_like(x, a), b.standard_normal(x.shape))
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    assert np.array_equal(values.draw_like(x, a, np.float32), np.asarray(b.standard_normal(x.shape), np.float32))
    assert values.draw_like(np.arange(3), a) is None


def test_sequence_arithmetic_and_structure():
    u = values.draw_like(SEQ, np.random.default_rng(0))
    assert [np.shape(e) for e in u] == [np.shape(e) for e in SEQ]
    assert values.draw_like([np.arange(2), SEQ[1]], np.random.default_rng(0))[0] is None
    assert values.draw_like([np.arange(2)], np.random.default_rng(0)) is None
    assert values.draw_like([], np.random.default_rng(0)) == []
    g = [None, SEQ[1], None]
    assert values.dot(g, SEQ) == pytest.approx(float(np.sum(SEQ[1] ** 2)))
    assert np.array_equal(values.flat(g, SEQ), np.concatenate([np.zeros(6), SEQ[1], np.zeros(2)]))
    assert values.mismatch(g, SEQ) == "" and values.mismatch(None, SEQ) == ""
    assert "list of 2" in values.mismatch(g[:2], SEQ)
    assert "shape (4,) at element 0" in values.mismatch([SEQ[1], None, None], SEQ)
    assert "not a list" in values.mismatch(SEQ[0], SEQ)
    assert "discrete" in values.mismatch([np.zeros(2)], [np.arange(2)])
    assert values.is_float(SEQ) and not values.is_float([]) and not values.is_float([np.arange(2)])


def test_value_info_declares_sequence_and_optional_types():
    t = values.value_info("s", SEQ).type
    assert t.HasField("sequence_type") and t.sequence_type.elem_type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    o = values.value_info("o", SEQ[0], optional=True).type
    assert o.HasField("optional_type") and list(o.optional_type.elem_type.tensor_type.shape.dim) != []
    assert values.value_info("e", []).type.sequence_type.elem_type.tensor_type.elem_type == 0  # undefined
    with pytest.raises(ValueError):
        values.value_info("n", None)


# -- onnx.reference through the kit -------------------------------------------------------------------------------
def test_run_onnx_takes_and_returns_sequences_and_optionals():
    (y,) = run_onnx("SequenceConstruct", SEQ)
    assert values.is_sequence(y) and all(np.array_equal(a, b) for a, b in zip(y, SEQ))
    assert np.array_equal(run_onnx("SequenceAt", [SEQ, np.array(-1)])[0], SEQ[2])
    assert run_onnx("SequenceEmpty", [])[0] == []
    assert int(run_onnx("SequenceLength", [SEQ])[0]) == 3
    assert bool(run_onnx("OptionalHasElement", [SEQ[0]])[0]) and not bool(run_onnx("OptionalHasElement", [None])[0])


def test_forward_check_compares_sequences_element_by_element():
    r = check_forward("SequenceConstruct", lambda xs: [list(xs)], SEQ)
    assert r.names == ["output_sequence"] and r.inputs == "(2, 3), (4,), (1, 2)"
    with pytest.raises(AssertionError, match="sequence of 2"):
        check_forward("SequenceConstruct", lambda xs: [list(xs)[:2]], SEQ)
    with pytest.raises(AssertionError, match=r"output_sequence\[1\]"):
        check_forward("SequenceConstruct", lambda xs: [[xs[0], 2 * xs[1], xs[2]]], SEQ)
    r = check_forward("SequenceAt", lambda xs: [xs[0][int(xs[1])]], [SEQ, np.array(1)])
    assert r.inputs == "[(2, 3), (4,), (1, 2)], int64 1"


# -- the gradient checks ------------------------------------------------------------------------------------------
def test_finite_differences_perturb_every_element_and_reject_wrong_rules():
    r = check_vjp_fd("SequenceAt", at_vjp, [SEQ, np.array(-2)])
    assert r.names == ["input_sequence"] and r.none == ["position"]
    assert {"fd"} <= facts("SequenceAt", "input_sequence", at_vjp)
    assert "discrete-type" in facts("SequenceAt", "position", at_vjp)
    with pytest.raises(AssertionError, match="finite differences"):
        check_vjp_fd("SequenceAt", at_vjp_wrong_element, [SEQ, np.array(0)])
    r = check_vjp_fd("SequenceConstruct", construct_vjp, SEQ)  # a sequence output: a cotangent per element
    assert r.names == ["inputs[0]", "inputs[1]", "inputs[2]"]
    same = [SEQ[1], -SEQ[1], 2 * SEQ[1]]
    with pytest.raises(AssertionError, match="finite differences"):
        check_vjp_fd("SequenceConstruct", construct_vjp_swapped, same)


def test_a_gradient_of_the_wrong_structure_is_rejected():
    def short(inputs, cotangents, **attrs):
        return [[cotangents[0]], None]

    def discrete(inputs, cotangents, **attrs):
        return [at_vjp(inputs, cotangents)[0], np.zeros(())]

    with pytest.raises(AssertionError, match="list of 1"):
        check_vjp_fd("SequenceAt", short, [SEQ, np.array(0)])
    with pytest.raises(AssertionError, match="discrete"):
        check_vjp_fd("SequenceAt", discrete, [SEQ, np.array(0)])


def test_torch_twins_take_and_return_lists():
    r = check_vjp_torch("SequenceAt", at_vjp, at_twin, [SEQ, np.array(2)])
    assert r.names == ["input_sequence"] and "torch" in facts("SequenceAt", "input_sequence", at_vjp)
    r = check_vjp_torch("SequenceConstruct", construct_vjp, lambda *xs: list(xs), SEQ)  # the leaves themselves
    assert r.names == ["inputs[0]", "inputs[1]", "inputs[2]"]
    with pytest.raises(AssertionError, match="PyTorch autograd"):
        check_vjp_torch("SequenceAt", at_vjp_wrong_element, at_twin, [SEQ, np.array(0)])
    with pytest.raises(AssertionError, match="the torch twin"):
        check_vjp_torch("SequenceConstruct", construct_vjp, lambda *xs: list(xs)[::-1], SEQ)


def test_symbolic_check_on_lists_of_matrices():
    a, b, c, g0, g1 = sp.symbols("a b c g0 g1")
    seq = [sp.Matrix([a, b]), sp.Matrix([c])]

    def rule_for(p):
        return [sp.Matrix([g0, g1]) if p == 0 else sp.zeros(2, 1), sp.Matrix([g0]) if p == 1 else sp.zeros(1, 1)]

    for p, g in ((0, sp.Matrix([g0, g1])), (-1, sp.Matrix([g0]))):
        r = check_vjp_symbolic("SequenceAt", {"input_sequence": seq}, {"tensor": seq[p]}, {"tensor": g},
                               {"input_sequence": rule_for(p % 2)}, vjp=at_vjp, call=[seq, np.array(p)])
        assert r.names == ["input_sequence"]
    with pytest.raises(AssertionError, match="differs from Jᵀḡ"):
        check_vjp_symbolic("SequenceAt", {"input_sequence": seq}, {"tensor": seq[0]}, {"tensor": sp.Matrix([g0, g1])},
                           {"input_sequence": rule_for(1)}, vjp=at_vjp, call=[seq, np.array(0)])

    def wrong(inputs, cotangents, **attrs):
        return [[2 * e if e is not None else None for e in at_vjp(inputs, cotangents)[0]], None]

    with pytest.raises(AssertionError, match="differs from the proved rule"):
        check_vjp_symbolic("SequenceAt", {"input_sequence": seq}, {"tensor": seq[0]}, {"tensor": sp.Matrix([g0, g1])},
                           {"input_sequence": rule_for(0)}, vjp=wrong, call=[seq, np.array(0)])
    # a sequence output: the cotangent is a list of matrices
    x, y = sp.symbols("x y")
    r = check_vjp_symbolic("SequenceConstruct", {"inputs": [sp.Matrix([x]), sp.Matrix([y])]},
                           {"output_sequence": [sp.Matrix([x]), sp.Matrix([y])]},
                           {"output_sequence": [sp.Matrix([g0]), sp.Matrix([g1])]},
                           {"inputs": [sp.Matrix([g0]), sp.Matrix([g1])]}, vjp=construct_vjp,
                           call=[sp.Matrix([x]), sp.Matrix([y])])
    assert r.names == ["inputs"]


def test_engines_refuse_sequence_graphs_and_the_refusal_is_shown_never_evidence():
    r = check_vjp_ort("SequenceAt", at_vjp, [SEQ, np.array(0)])
    assert not r.compared and "no gradient builder for SequenceAt" in repr(r)
    assert "ort" not in facts("SequenceAt", "input_sequence", at_vjp)
    r = check_vjp_ort("SequenceConstruct", construct_vjp, SEQ)  # the loss reads the sequence output by SequenceAt
    assert not r.compared and "unreachable" in repr(r)
    r = check_vjp_onnxad("SequenceAt", at_vjp, [SEQ, np.array(0)])
    # onnx-ad's interface check answers first, but what it lacks is a reverse rule for SequenceAt (no rule, not a
    # refusal of the node; tests/test_onnxad.py shows the rule missing on tensor ends)
    assert not r.compared and "no reverse rule for SequenceAt" in repr(r) and "not of a floating-point type" in repr(r)
    assert "onnxad-none" in facts("SequenceAt", "input_sequence", at_vjp)
    assert "onnxad-refused" not in facts("SequenceAt", "input_sequence", at_vjp)
    assert "onnxad" not in facts("SequenceAt", "input_sequence", at_vjp)


def test_engine_comparisons_read_sequence_gradients(monkeypatch):
    """Where an engine does return a gradient for a sequence (a list), vjp is compared element by element: the
    engines are stood in for here by the exact gradient, since neither differentiates a sequence graph today."""
    def exact(op, inputs, cotangents, attrs=None, **kw):
        grads = at_vjp(inputs, cotangents)
        return (grads, "rule") if kw.get("with_how") else grads

    monkeypatch.setattr(ortgrad_mod, "ort_gradient", exact)
    monkeypatch.setattr(onnxad_mod, "onnxad_gradient", exact)
    case = [[e.astype(np.float32).astype(np.float64) for e in SEQ], np.array(1)]
    assert check_vjp_ort("SequenceAt", at_vjp, case).names == ["input_sequence"]
    assert check_vjp_onnxad("SequenceAt", at_vjp, case).names == ["input_sequence"]
    with pytest.raises(AssertionError, match="differs from ONNX Runtime"):
        check_vjp_ort("SequenceAt", at_vjp_wrong_element, case)
    with pytest.raises(AssertionError, match="differs from onnx-ad"):
        check_vjp_onnxad("SequenceAt", at_vjp_wrong_element, case)


def test_selection_witness_and_verdict_on_a_sequence():
    def length_vjp(inputs, cotangents, **attrs):
        return [None]

    check_vjp_fd("SequenceLength", length_vjp, [SEQ])
    r = witness_selects("SequenceLength", [SEQ])
    assert "a sequence of 3" in repr(r)
    with pytest.raises(AssertionError, match="not only a selection"):
        witness_selects("SequenceAt", [SEQ, np.array(0)])
    claim = Claim("SequenceLength", {"input_sequence": ("non-differentiable", "only its length is read"),
                                     "length": ("non-differentiable", "an integer")})
    claim.verdict(length_vjp)
    # SequenceAt: differentiable in input_sequence, bound to fd, rule, and the engines' recorded refusals
    a, b = sp.symbols("a b")
    g = sp.Symbol("g")
    check_vjp_symbolic("SequenceAt", {"input_sequence": [sp.Matrix([a]), sp.Matrix([b])]}, {"tensor": sp.Matrix([b])},
                       {"tensor": sp.Matrix([g])}, {"input_sequence": [sp.zeros(1, 1), sp.Matrix([g])]}, vjp=at_vjp,
                       call=[[sp.Matrix([a]), sp.Matrix([b])], np.array(1)])
    for check in (check_vjp_fd, check_vjp_ort, check_vjp_onnxad):
        check("SequenceAt", at_vjp, [SEQ, np.array(1)])
    Claim("SequenceAt", {"input_sequence": ("differentiable", "a selection"),
                         "position": ("non-differentiable", "an integer"),
                         "tensor": ("differentiable", "a copy of one element")}).verdict(at_vjp)
