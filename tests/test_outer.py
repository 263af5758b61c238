"""Outer values (proofkit.outer): the checks of a rule for the values a graph attribute reads from the enclosing
scope, on a stand-in for If's rule, right and wrong, and the verdict of an output differentiable through them only."""

import numpy as np
import pytest
import sympy as sp
import torch
from onnx import TensorProto as T
from onnx import helper as h

from proofkit import outer as O
from proofkit.evidence import _reset, facts
from proofkit.reverse import captured_by_graph, graph_vjp
from proofkit.verdict import Claim, VerdictError

D = T.DOUBLE
THEN = h.make_graph([h.make_node("Mul", ["a", "b"], ["o"])], "then", [], [h.make_tensor_value_info("o", D, None)])
ELSE = h.make_graph([h.make_node("Neg", ["a"], ["o"])], "else", [], [h.make_tensor_value_info("o", D, None)])
ATTRS = {"then_branch": THEN, "else_branch": ELSE}
ENV = {"a": np.array([0.5, -1.5, 2.0]), "b": np.array([1.25, 0.75, -0.5])}


@pytest.fixture(autouse=True)
def clean():
    _reset()
    yield
    _reset()


def if_rule(inputs, cotangents, outer=None, **attrs):
    if outer is None:
        return [None]
    taken = attrs["then_branch"] if bool(inputs[0]) else attrs["else_branch"]
    reads = captured_by_graph(taken)
    inner = graph_vjp(taken, {n: outer[n] for n in reads}, list(cotangents))
    return [None], {n: inner[n] if n in reads else np.zeros(np.shape(v)) for n, v in outer.items()}


def scaled_rule(inputs, cotangents, outer=None, **attrs):
    got = if_rule(inputs, cotangents, outer=outer, **attrs)
    return got if outer is None else (got[0], {k: 1.001 * v for k, v in got[1].items()})


def twin(c, outer, **attrs):
    return outer["a"] * outer["b"] if bool(c) else -outer["a"]


def test_run_outer_feeds_the_outer_values_and_check_forward_compares():
    assert np.array_equal(O.run_outer("If", [np.array(True)], ATTRS, ENV)[0], ENV["a"] * ENV["b"])
    assert np.array_equal(O.run_outer("If", [np.array(False)], ATTRS, ENV)[0], -ENV["a"])
    model = lambda xs, o, **a: [o["a"] * o["b"] if xs[0] else -o["a"]]  # noqa: E731
    assert O.check_forward_outer("If", model, [np.array(False)], ENV, ATTRS).names == ["outputs"]
    with pytest.raises(AssertionError, match="differs from onnx.reference"):
        O.check_forward_outer("If", lambda xs, o, **a: [o["a"]], [np.array(False)], ENV, ATTRS)


@pytest.mark.parametrize("cond", [True, False])
def test_fd_and_torch_pass_for_the_right_rule_and_record_outer_evidence(cond):
    r = O.check_vjp_fd_outer("If", if_rule, [np.array(cond)], ENV, ATTRS)
    assert r.names == ["outer a", "outer b"] and r.none == ["cond"]
    assert O.check_vjp_torch_outer("If", if_rule, twin, [np.array(cond)], ENV, ATTRS).names == ["outer a", "outer b"]
    assert {"fd", "torch"} <= facts("If", O.OUTER, if_rule)
    assert "fd" in facts("If", "outputs", if_rule) and "discrete-type" in facts("If", "cond", None)


def test_fd_torch_and_symbolic_fail_for_a_wrong_rule():
    with pytest.raises(AssertionError, match="outer value a disagrees with finite differences"):
        O.check_vjp_fd_outer("If", scaled_rule, [np.array(True)], ENV, ATTRS)
    with pytest.raises(AssertionError, match="outer value a differs from PyTorch"):
        O.check_vjp_torch_outer("If", scaled_rule, twin, [np.array(True)], ENV, ATTRS)
    a, b, g = (sp.Matrix(sp.symbols(f"{n}0:2")) for n in "abg")
    args = ({"a": a, "b": b}, {"outputs": a.multiply_elementwise(b)}, {"outputs": g})
    right = {"a": g.multiply_elementwise(b), "b": g.multiply_elementwise(a)}
    O.check_vjp_symbolic_outer("If", *args, right, vjp=if_rule, call=[np.array(True)], attrs=ATTRS)
    assert "rule" in facts("If", O.OUTER, if_rule)
    with pytest.raises(AssertionError, match="differs from Jᵀḡ"):
        O.check_vjp_symbolic_outer("If", *args, {"a": g, "b": right["b"]}, vjp=if_rule, call=[np.array(True)],
                                   attrs=ATTRS)
    with pytest.raises(AssertionError, match="differs from the proved rule"):
        O.check_vjp_symbolic_outer("If", *args, right, vjp=scaled_rule, call=[np.array(True)], attrs=ATTRS)


def test_a_rule_that_breaks_the_protocol_is_an_assertion():
    with pytest.raises(AssertionError, match="must return"):
        O.check_vjp_fd_outer("If", lambda i, c, outer=None, **a: [None], [np.array(True)], ENV, ATTRS)
    with pytest.raises(AssertionError, match="graph reads"):
        O.check_vjp_fd_outer("If", lambda i, c, outer=None, **a: ([None], {"a": np.zeros(3)}), [np.array(True)],
                             ENV, ATTRS)
    with pytest.raises(AssertionError, match="outer value a has shape"):
        O.check_vjp_fd_outer("If", lambda i, c, outer=None, **a: ([None], {"a": np.zeros(2), "b": np.zeros(3)}),
                             [np.array(True)], ENV, ATTRS)


def test_engines_onnxad_compares_ort_has_no_gradient_and_a_wrong_rule_fails():
    r = O.check_vjp_engine_outer("If", if_rule, "onnxad", [np.array(True)], ENV, ATTRS)
    assert r.names == ["outer a", "outer b"] and "onnxad" in facts("If", O.OUTER, if_rule)
    r = O.check_vjp_engine_outer("If", if_rule, "ort", [np.array(True)], ENV, ATTRS)
    assert not r.compared and "ort-none" in facts("If", O.OUTER, if_rule)
    with pytest.raises(AssertionError, match="differs from onnx-ad"):
        O.check_vjp_engine_outer("If", scaled_rule, "onnxad", [np.array(False)], ENV, ATTRS)


def test_verdict_of_an_output_differentiable_through_outer_values_only():
    claim = Claim("If", {"cond": ("non-differentiable", "bool"), "outputs": ("differentiable", "through the branch")})
    O.check_vjp_fd_outer("If", if_rule, [np.array(True)], ENV, ATTRS)
    with pytest.raises(VerdictError, match="through the outer values .* lack"):
        claim.verdict(if_rule)  # finite differences alone are not enough
    a, b, g = (sp.Matrix(sp.symbols(f"{n}0:2")) for n in "abg")
    O.check_vjp_symbolic_outer("If", {"a": a, "b": b}, {"outputs": a.multiply_elementwise(b)}, {"outputs": g},
                               {"a": g.multiply_elementwise(b), "b": g.multiply_elementwise(a)}, vjp=if_rule,
                               call=[np.array(True)], attrs=ATTRS)
    O.check_vjp_engine_outer("If", if_rule, "ort", [np.array(True)], ENV, ATTRS)
    O.check_vjp_engine_outer("If", if_rule, "onnxad", [np.array(True)], ENV, ATTRS)
    bound = claim.verdict(if_rule)
    stored = bound.as_json()  # what each engine did on the outer values, and the anchor the engines page links to
    assert stored["outer_engines"] == {"ONNX Runtime": ["no gradient"], "onnx-ad": ["agrees"]}
    assert '<p id="verdict-if-outer-values">' in bound._repr_mimebundle_()["text/html"]
    with pytest.raises(VerdictError, match="as a function of"):
        Claim("If", {"cond": ("non-differentiable", "bool"),
                     "outputs": ("differentiable almost everywhere", "wrong label")}).verdict(if_rule)


def test_without_outer_evidence_an_output_needs_a_differentiable_input():
    from proofkit import check_vjp_fd
    check_vjp_fd("If", if_rule, [np.array(True)], {  # the node alone: branches that read no outer value
        "then_branch": h.make_graph([h.make_node("Constant", [], ["o"], value=h.make_tensor("v", D, [1], [1.0]))],
                                    "c", [], [h.make_tensor_value_info("o", D, None)]),
        "else_branch": h.make_graph([h.make_node("Constant", [], ["o"], value=h.make_tensor("v", D, [1], [2.0]))],
                                    "c", [], [h.make_tensor_value_info("o", D, None)])})
    with pytest.raises(VerdictError, match="no input is differentiable"):
        Claim("If", {"cond": ("non-differentiable", "bool"), "outputs": ("differentiable", "x")}).verdict(if_rule)
    bound = Claim("If", {"cond": ("non-differentiable", "bool"), "outputs": ("non-differentiable", "x")})
    assert "outer_engines" not in bound.verdict(if_rule).as_json()  # no outer values checked: no entry, no anchor


SEQ_BODY = h.make_graph([h.make_node("Mul", ["x", "u"], ["o"])], "body", [h.make_tensor_value_info("x", D, None)],
                        [h.make_tensor_value_info("o", D, None)])
SEQ = [np.array([1.0, 2.0]), np.array([3.0])]


def map_rule(inputs, cotangents, outer=None, **attrs):
    """A stand-in for SequenceMap's rule on the body x * u: x̄_i = ḡ_i u, ū = Σ_i ḡ_i x_i."""
    (g,) = cotangents
    grads = [[gi * outer["u"] for gi in g]]
    return grads, {"u": np.sum([np.sum(gi * xi) for gi, xi in zip(g, inputs[0])]) * np.ones_like(outer["u"])}


def test_runner_onnxruntime_runs_a_body_that_reads_an_outer_value():
    env = {"u": np.array(2.0)}
    with pytest.raises(RuntimeError, match="Unable to find input 'u'"):  # onnx.reference: no enclosing scope
        O.run_outer("SequenceMap", [SEQ], {"body": SEQ_BODY}, env)
    got = O.run_outer("SequenceMap", [SEQ], {"body": SEQ_BODY}, env, runner="onnxruntime")[0]
    assert [y.tolist() for y in got] == [[2.0, 4.0], [6.0]]
    with pytest.raises(ValueError, match="runner is one of"):
        O.run_outer("SequenceMap", [SEQ], {"body": SEQ_BODY}, env, runner="torch")
    r = O.check_vjp_fd_outer("SequenceMap", map_rule, [SEQ], env, {"body": SEQ_BODY}, runner="onnxruntime")
    assert r.names == ["input_sequence", "outer u"] and "onnxruntime" in r.notes
    wrong = lambda i, c, outer=None, **a: (map_rule(i, c, outer)[0], {"u": np.array(0.0)})  # noqa: E731
    with pytest.raises(AssertionError, match="outer value u disagrees with finite differences of onnxruntime"):
        O.check_vjp_fd_outer("SequenceMap", wrong, [SEQ], env, {"body": SEQ_BODY}, runner="onnxruntime")


def test_the_rule_of_an_outer_value_is_proved_through_a_sequence_output():
    u, gs = sp.Matrix([sp.Symbol("u")]), [sp.Matrix(sp.symbols("g0_0:2")), sp.Matrix([sp.Symbol("g1_0")])]
    xs = [sp.Matrix([1, 2]), sp.Matrix([3])]  # SEQ, exact: the body x * u on each element
    outs = {"out_sequence": [x * u[0] for x in xs]}
    right = {"u": sp.Matrix([sum((g.dot(x) for g, x in zip(gs, xs)), sp.Integer(0))])}  # summed over iterations
    call = [[np.array([[1.0], [2.0]]), np.array([[3.0]])]]
    r = O.check_vjp_symbolic_outer("SequenceMap", {"u": u}, outs, {"out_sequence": gs}, right, vjp=map_rule,
                                   call=call, attrs={"body": SEQ_BODY}, runner="onnxruntime")
    assert r.names == ["outer u"]
    with pytest.raises(AssertionError, match="differs from Jᵀḡ"):  # one iteration's term left out
        O.check_vjp_symbolic_outer("SequenceMap", {"u": u}, outs, {"out_sequence": gs},
                                   {"u": sp.Matrix([gs[0].dot(xs[0])])}, vjp=map_rule, call=call,
                                   attrs={"body": SEQ_BODY}, runner="onnxruntime")


def test_engines_read_a_sequence_output_element_by_element_and_show_their_refusals():
    env = {"u": np.array(2.0)}
    r = O.check_vjp_engine_outer("SequenceMap", map_rule, "onnxad", [SEQ], env, {"body": SEQ_BODY},
                                 forward="onnxruntime")
    assert not r.compared and "SequenceAt" in r.notes  # onnx-ad's own words: no rule for SequenceAt
    assert "onnxad-refused" in facts("SequenceMap", O.OUTER, map_rule)
    r = O.check_vjp_engine_outer("SequenceMap", map_rule, "ort", [SEQ], env, {"body": SEQ_BODY},
                                 forward="onnxruntime")
    assert not r.compared and "ort-none" in facts("SequenceMap", O.OUTER, map_rule)


def test_ort_builders_lists_the_compiled_gradient_builders():
    found = O.ort_builders()
    assert {"Tanh", "Mul", "MatMul"} <= set(found) and not {"If", "Loop", "Scan"} & set(found)
