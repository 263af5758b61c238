"""The verdict is bound to what the checks showed, for the function the chapter presents, and to ONNX's tags."""

import json

import numpy as np
import pytest
import sympy as sp
import torch

from proofkit import (Claim, Special, VerdictError, check_conventions, check_vjp_fd, check_vjp_onnxad, check_vjp_ort,
                      check_vjp_symbolic, check_vjp_torch, check_zero_almost_everywhere, recorded, samplers,
                      witness_jump, witness_kink, witness_selects)
from proofkit import evidence
from proofkit.evidence import _reset
from proofkit.evidence import facts as evidence_facts
from proofkit.verdict import VERDICT_MIME

X = samplers.uniform((3, 4), seed=3, avoid=[0.0], margin=1e-3)
AE = "differentiable almost everywhere"
RELU = {"X": (AE, "kink at 0"), "Y": (AE, "of X")}
x, p, g = sp.Symbol("x", real=True), sp.Symbol("p", positive=True), sp.Symbol("g", real=True)


@pytest.fixture(autouse=True)
def clean_evidence():
    _reset()
    yield
    _reset()


def relu_vjp(inputs, cotangents, **attrs):
    (X_,), (g_,) = inputs, cotangents
    if not np.issubdtype(np.asarray(X_).dtype, np.floating):
        return [None]
    return [np.where(X_ > 0, g_, 0.0)]


def relu_evidence(vjp=relu_vjp, *, witness=True, conventions=True):
    check_vjp_fd("Relu", vjp, [X])
    check_vjp_symbolic("Relu", {"X": [x]}, {"Y": [sp.Max(0, x)]}, {"Y": [g]}, {"X": [g * sp.Heaviside(x, 0)]},
                       pieces=[{x: p}, {x: -p}], vjp=vjp)
    check_vjp_ort("Relu", vjp, [X])
    check_vjp_onnxad("Relu", vjp, [X])
    if witness:
        witness_kink("Relu", [np.array([0.0])])
    if conventions:
        check_conventions("Relu", vjp, [Special("X = 0", [np.array(0.0)], {"X": 0.0})], twin=torch.relu)


def test_a_verdict_bound_to_passed_checks_renders_with_the_audit_payload():
    relu_evidence()
    bundle = Claim("Relu", RELU).verdict(relu_vjp)._repr_mimebundle_()
    payload = bundle[VERDICT_MIME]
    assert payload["op"] == "Relu" and [r["agreement"] for r in payload["rows"]] == ["agrees", "agrees"]
    assert 'id="verdict-relu-x"' in bundle["text/html"] and "kink at 0" in bundle["text/plain"]
    json.dumps(payload)


def test_the_verdict_must_name_the_backward_function():
    relu_evidence()
    with pytest.raises(VerdictError, match=r"CLAIM.verdict\(vjp\)"):
        Claim("Relu", RELU).verdict()


def test_evidence_for_another_function_than_the_presented_vjp_is_rejected():
    relu_evidence()

    def presented(inputs, cotangents, **attrs):  # checked nowhere: a swap after the checks
        return relu_vjp(inputs, cotangents, **attrs)

    with pytest.raises(VerdictError, match="recorded for another backward function"):
        Claim("Relu", RELU).verdict(presented)


def test_differentiable_without_the_rule_tie_is_rejected():
    check_vjp_fd("Relu", relu_vjp, [X])
    check_vjp_torch("Relu", relu_vjp, torch.relu, [X])
    with pytest.raises(VerdictError, match="lacks a hand-written rule proved equal to Jᵀḡ and tied to vjp"):
        Claim("Relu", RELU).verdict(relu_vjp)


def test_almost_everywhere_needs_a_witness_and_asserted_conventions():
    relu_evidence(witness=False)
    with pytest.raises(VerdictError, match="no witness of the null set"):
        Claim("Relu", RELU).verdict(relu_vjp)
    _reset()
    relu_evidence(conventions=False)
    with pytest.raises(VerdictError, match="not asserted"):
        Claim("Relu", RELU).verdict(relu_vjp)


def test_a_kinked_function_called_differentiable_is_rejected():
    relu_evidence()
    with pytest.raises(VerdictError, match="X is called differentiable, but a kink witness was recorded"):
        Claim("Relu", {"X": ("differentiable", "r"), "Y": ("differentiable", "r")}).verdict(relu_vjp)


def test_a_smooth_function_called_almost_everywhere_is_rejected():
    def exp_vjp(inputs, cotangents, **attrs):
        return [cotangents[0] * np.exp(inputs[0])]

    xs = samplers.normal((4,), seed=1)
    check_vjp_fd("Exp", exp_vjp, [xs])
    check_vjp_symbolic("Exp", {"input": [x]}, {"output": [sp.exp(x)]}, {"output": [g]}, {"input": [g * sp.exp(x)]},
                       vjp=exp_vjp)
    check_vjp_ort("Exp", exp_vjp, [xs])
    check_vjp_onnxad("Exp", exp_vjp, [xs])
    Claim("Exp", {"input": ("differentiable", "r"), "output": ("differentiable", "r")}).verdict(exp_vjp)
    with pytest.raises(VerdictError, match="no witness of the null set"):
        Claim("Exp", {"input": (AE, "r"), "output": (AE, "r")}).verdict(exp_vjp)


def test_an_output_label_weaker_or_stronger_than_its_inputs_is_rejected():
    relu_evidence()
    with pytest.raises(VerdictError, match="output Y is called differentiable, but as a function of X it is "
                                           "differentiable almost everywhere"):
        Claim("Relu", {"X": RELU["X"], "Y": ("differentiable", "r")}).verdict(relu_vjp)


def test_the_symbolic_tie_catches_a_vjp_that_differs_from_the_proved_rule():
    # an Erf vjp with 2/sqrt(pi) off by 3e-4 passes a loose finite-difference check, not the tie to the rule
    def erf_vjp_off(inputs, cotangents, **attrs):
        return [cotangents[0] * (2 / np.sqrt(np.pi) + 3e-4) * np.exp(-inputs[0] ** 2)]

    rule = g * 2 / sp.sqrt(sp.pi) * sp.exp(-x ** 2)
    with pytest.raises(AssertionError, match="vjp's gradient for input differs from the proved rule"):
        check_vjp_symbolic("Erf", {"input": [x]}, {"output": [sp.erf(x)]}, {"output": [g]}, {"input": [rule]},
                           vjp=erf_vjp_off)


def test_the_symbolic_tie_samples_next_to_the_edge_where_a_clamped_vjp_fails():
    def log_vjp_clamped(inputs, cotangents, **attrs):
        return [cotangents[0] / np.maximum(inputs[0], 1e-2)]

    xp = sp.Symbol("x", positive=True)
    with pytest.raises(AssertionError, match="differs from the proved rule"):
        check_vjp_symbolic("Log", {"input": [xp]}, {"output": [sp.log(xp)]}, {"output": [g]}, {"input": [g / xp]},
                           vjp=log_vjp_clamped)


def test_conventions_are_asserted_and_differences_must_be_declared():
    special = [Special("X = 0", [np.array(0.0)], {"X": 1.0})]
    with pytest.raises(AssertionError, match="at X = 0, vjp gives 0.0 for X; the chapter's convention is 1.0"):
        check_conventions("Relu", relu_vjp, special, twin=torch.relu)

    def relu_vjp_one_at_zero(inputs, cotangents, **attrs):
        return [np.where(inputs[0] >= 0, cotangents[0], 0.0)]

    with pytest.raises(AssertionError, match="PyTorch differs from vjp; declare the difference"):
        check_conventions("Relu", relu_vjp_one_at_zero, special, twin=torch.relu, ort=False)
    declared = [Special("X = 0", [np.array(0.0)], {"X": 1.0}, torch="a reason", ort="a reason", onnxad="a reason")]
    result = check_conventions("Relu", relu_vjp_one_at_zero, declared, twin=torch.relu)
    assert "Declared: PyTorch at X = 0: a reason" in repr(result)
    with pytest.raises(AssertionError, match="a difference from PyTorch is declared, but PyTorch agrees"):
        check_conventions("Relu", relu_vjp, [Special("X = 0", [np.array(0.0)], {"X": 0.0}, torch="stale")],
                          twin=torch.relu)


def test_a_point_where_vjp_breaks_the_convention_fails_before_any_engine_is_asked_there(monkeypatch):
    import proofkit.conventions as conventions
    asked = []
    monkeypatch.setattr(conventions, "ort_gradient", lambda *a, **k: asked.append("ort"))
    monkeypatch.setattr(conventions, "onnxad_gradient", lambda *a, **k: asked.append("onnx-ad"))
    points = [Special("X = 0", [np.array(0.0)], {"X": 1.0})]
    with pytest.raises(AssertionError, match="at X = 0, vjp gives 0.0 for X; the chapter's convention is 1.0"):
        check_conventions("Relu", relu_vjp, points, twin=lambda x: asked.append("torch") or torch.relu(x))
    assert asked == []


def test_onnx_runtime_is_executed_and_a_disagreement_must_be_declared():
    def where_vjp(inputs, cotangents, **attrs):
        c, a, b = inputs
        gy = cotangents[0]
        return [None, np.sum(np.where(c, gy, 0.0), axis=0), np.where(c, 0.0, gy)]

    c = np.array([[True, False, True], [False, True, True]])
    a, b = samplers.normal((3,), seed=1), samplers.normal((2, 3), seed=2)
    with pytest.raises(AssertionError, match="gradient of input X differs from ONNX Runtime's.*shape"):
        check_vjp_ort("Where", where_vjp, [c, a, b])
    result = check_vjp_ort("Where", where_vjp, [c, a, b], disagree={"X": "no broadcast reduction"})
    assert "passed for Y" in repr(result) and "X: ONNX Runtime differs" in repr(result)


def test_no_gradient_builder_is_recorded_from_the_attempt():
    result = check_vjp_ort("Tan", lambda i, c, **a: [c[0] / np.cos(i[0]) ** 2], [samplers.normal((3,), seed=1)])
    assert "has no gradient builder for Tan" in repr(result)
    assert {r.kind for r in recorded("Tan")} == {"ort-none"}


@pytest.mark.parametrize("discontinuity", ["jump", "unbounded"])  # a jump, or a quotient unbounded beside a step
def test_zero_almost_everywhere_needs_the_zero_check_a_jump_and_conventions(discontinuity):
    from proofkit import witness_unbounded
    pts = samplers.uniform((5,), seed=4, avoid=[lambda v: v - np.round(v)], margin=1e-3)
    claim = Claim("Floor", {"X": ("zero almost everywhere", "steps"), "Y": ("zero almost everywhere", "steps")})

    def floor_vjp(i, c, **a):
        return [None]

    check_vjp_fd("Floor", floor_vjp, [pts])
    with pytest.raises(VerdictError, match="no witness of the null set"):
        claim.verdict(floor_vjp)
    if discontinuity == "jump":
        witness_jump("Floor", [np.array([1.0])])
    else:
        witness_unbounded("Floor", [np.array([1.0])], side="left")  # floor(1 - h) = 0, floor(1) = 1
    check_conventions("Floor", floor_vjp, [Special("X = 1", [np.array(1.0)], {"X": None})], twin=torch.floor)
    with pytest.raises(VerdictError, match="zero almost everywhere without the zero-derivative check"):
        claim.verdict(floor_vjp)
    check_zero_almost_everywhere("Floor", [pts])
    claim.verdict(floor_vjp)


def test_a_float_input_called_non_differentiable_needs_a_discrete_witness():
    pts = samplers.uniform((5,), seed=4, avoid=[lambda v: v - np.round(v)], margin=1e-3)

    def floor_vjp(i, c, **a):
        return [None]

    check_vjp_fd("Floor", floor_vjp, [pts])
    check_zero_almost_everywhere("Floor", [pts])
    claim = Claim("Floor", {"X": ("non-differentiable", "r"), "Y": ("zero almost everywhere", "r")})
    with pytest.raises(VerdictError, match="X is called non-differentiable, but no check saw it discrete"):
        claim.verdict(floor_vjp)


def test_a_float_input_whose_values_are_never_read_is_non_differentiable_with_a_selection_witness():
    x = samplers.normal((3, 3), seed=1)

    def eyelike_vjp(inputs, cotangents, **attrs):
        return [None]

    check_vjp_fd("EyeLike", eyelike_vjp, [x])
    claim = Claim("EyeLike", {"input": ("non-differentiable", "its shape only"),
                              "output": ("non-differentiable", "a constant of that shape")})
    with pytest.raises(VerdictError, match=r"input is called non-differentiable, but no check saw it discrete.*witness_selects"):
        claim.verdict(eyelike_vjp)
    # an integer-typed instance, whose output is discrete too, says nothing about the float value
    check_vjp_fd("EyeLike", eyelike_vjp, [np.arange(9).reshape(3, 3)])
    with pytest.raises(VerdictError, match=r"a float value of it met a float output in a checked call"):
        claim.verdict(eyelike_vjp)
    witness_selects("EyeLike", [x])
    claim.verdict(eyelike_vjp)


def test_a_float_output_called_non_differentiable_needs_a_discrete_type():
    relu_evidence()
    claim = Claim("Relu", {"X": RELU["X"], "Y": ("non-differentiable", "r")}, disagreements={"Y": "an argument"})
    with pytest.raises(VerdictError, match="output Y is called non-differentiable, but no check saw it take a discrete"):
        claim.verdict(relu_vjp)


def test_integer_inputs_must_get_none():
    def relu_vjp_float_for_ints(inputs, cotangents, **attrs):
        g_ = cotangents[0] if cotangents[0] is not None else np.ones(np.shape(inputs[0]))
        return [np.where(inputs[0] > 0, g_, 0.0)]

    relu_evidence(relu_vjp_float_for_ints)
    with pytest.raises(VerdictError, match="vjp returns a gradient for input X of integer type int"):
        Claim("Relu", RELU).verdict(relu_vjp_float_for_ints)


def test_calling_an_input_differentiable_whose_vjp_returns_none_is_rejected():
    def reshape_vjp(inputs, cotangents, **attrs):
        return [None, None]

    check_vjp_fd("Reshape", reshape_vjp, [np.ones((2, 3)), np.array([3, 2])])
    claim = Claim("Reshape", {"data": ("differentiable", "copy"), "shape": ("non-differentiable", "int64"),
                              "reshaped": ("differentiable", "copy of data")})
    with pytest.raises(VerdictError, match="data is called differentiable, but vjp returns None for it"):
        claim.verdict(reshape_vjp)


def test_calling_an_input_non_differentiable_while_vjp_gives_it_a_gradient_is_rejected():
    relu_evidence()
    claim = Claim("Relu", {"X": ("non-differentiable", "x"), "Y": ("non-differentiable", "y")},
                  disagreements={"X": "an argument", "Y": "an argument"})
    with pytest.raises(VerdictError, match="X is called non-differentiable, but vjp returned a gradient"):
        claim.verdict(relu_vjp)


def test_an_undeclared_disagreement_with_the_onnx_tag_is_rejected():
    with pytest.raises(VerdictError, match="min is called differentiable almost everywhere but ONNX tags it "
                                           "NonDifferentiable; declare the disagreement"):
        Claim("Clip", {"input": (AE, "r"), "min": (AE, "r"), "max": ("non-differentiable", "r"), "output": (AE, "r")})


def test_a_declared_disagreement_that_agrees_with_onnx_is_rejected():
    with pytest.raises(VerdictError, match="a disagreement is declared for X, but ONNX now tags it Differentiable"):
        Claim("Relu", RELU, disagreements={"X": "stale argument"})


def test_unknown_tags_are_proposed():
    claim = Claim("Range", {"start": ("non-differentiable", "r"), "limit": ("non-differentiable", "r"),
                            "delta": ("non-differentiable", "r"), "output": ("non-differentiable", "r")})
    assert {r["agreement"] for r in claim.rows()} == {"proposed"}


def test_the_verdict_must_cover_every_input_and_output_with_the_vocabulary():
    with pytest.raises(VerdictError, match="must cover exactly X, Y; missing Y"):
        Claim("Relu", {"X": RELU["X"]})
    with pytest.raises(VerdictError, match="unknown Z"):
        Claim("Relu", {**RELU, "Z": RELU["X"]})
    with pytest.raises(VerdictError, match="'smooth' is not a verdict"):
        Claim("Relu", {**RELU, "X": ("smooth", "r")})
    with pytest.raises(VerdictError, match="needs a one-line reason"):
        Claim("Relu", {**RELU, "X": ("differentiable", " ")})


def test_only_the_bound_verdict_carries_row_anchors():
    relu_evidence()
    claim = Claim("Relu", RELU)
    assert "id=" not in claim._repr_mimebundle_()["text/html"]
    assert claim.verdict(relu_vjp)._repr_mimebundle_()["text/html"].count('id="verdict-relu-') == 2


def test_the_evidence_store_is_read_only_from_the_public_api():
    relu_evidence()
    view = recorded("Relu")
    assert isinstance(view, tuple) and view
    with pytest.raises(Exception):
        view[0].kind = "rule"  # frozen records


def test_onnx_runtime_forward_runs_a_node_and_reports_its_own_failure():
    from proofkit import OrtRunError, ort_forward
    y = ort_forward("ReduceL1", [np.array([[1.5, -2.0], [0.5, -0.25]]), np.array([1])], {"keepdims": 0})[0]
    assert y.dtype == np.float32 and np.array_equal(y, np.array([3.5, 0.75], np.float32))
    with pytest.raises(OrtRunError):
        ort_forward("Swish", [np.array([1.0])])  # newer than opset 21


def test_onnx_runtime_forward_asks_for_the_outputs_the_node_has_in_its_mode(monkeypatch):
    import proofkit.ortgrad as ortgrad
    from proofkit import ort_forward
    x, s, b, m, v = np.ones((2, 3, 2)), np.ones(3), np.zeros(3), np.zeros(3), np.ones(3)
    # BatchNormalization outside training has Y only: onnx.reference says how many outputs there are in this mode
    assert len(ort_forward("BatchNormalization", [x, s, b, m, v])) == 1
    assert len(ort_forward("BatchNormalization", [x, s, b, m, v], {"training_mode": 1})) == 3
    # every output required (TopK's two): the schema says it, onnx.reference is not run for the count
    monkeypatch.setattr(ortgrad, "run_onnx", lambda *a, **k: pytest.fail("onnx.reference run for a count"))
    vals, idx = ort_forward("TopK", [np.array([3.0, 1.0, 2.0]), np.array([2])])
    assert vals.tolist() == [3.0, 2.0] and idx.tolist() == [0, 2]


def test_an_output_of_only_non_differentiable_inputs_may_be_called_non_differentiable():
    def vjp(inputs, cotangents, **attrs):
        return [None]

    check_vjp_fd("ConstantOfShape", vjp, [np.array([2, 3])])
    Claim("ConstantOfShape", {"input": ("non-differentiable", "a shape"),
                              "output": ("non-differentiable", "a function of a shape only")}).verdict(vjp)


def test_an_operator_without_inputs_binds_its_output():
    import onnx

    def vjp(inputs, cotangents, **attrs):
        return []

    value = onnx.numpy_helper.from_array(np.array([1.5, 2.0]))
    check_vjp_fd("Constant", vjp, [], {"value": value})
    Claim("Constant", {"output": ("non-differentiable", "no input to differentiate with respect to")}).verdict(vjp)


def _avgpool_vjp(inputs, cotangents, kernel_shape, pads=None, count_include_pad=0, **attrs):
    """AveragePool's rule for one 1-D channel with stride 1 (enough for the test)."""
    (X,), (g,) = inputs, cotangents
    k, (lo, hi) = kernel_shape[0], (pads or [0, 0])
    n, out = X.shape[-1], np.zeros(X.shape)
    for j in range(g.shape[-1]):
        window = [i for i in range(j - lo, j - lo + k) if 0 <= i < n]
        for i in window:
            out[..., i] += g[..., j] / len(window)
    return [out]


def test_a_runtime_refusal_is_recorded_as_such_and_never_meets_the_ort_requirement():
    # ONNX Runtime's AveragePool gradient graph refuses pads >= kernel ("Pad should be smaller than kernel")
    X = samplers.normal((1, 1, 6), seed=3)
    attrs = {"kernel_shape": [2], "pads": [2, 2]}
    result = check_vjp_ort("AveragePool", _avgpool_vjp, [X], attrs)
    assert not result.compared and result.shown_outcome() == "refused by ONNX Runtime"
    assert "could not run it" in repr(result) and "Pad should be smaller than kernel" in repr(result)
    assert {r.kind for r in recorded("AveragePool")} == {"ort-refused"}
    facts = evidence_facts("AveragePool", "X", _avgpool_vjp)
    assert "ort-refused" in facts and not facts & {"ort", "ort-none", "ort-differs"}


def test_a_differentiable_verdict_whose_only_ort_check_was_refused_is_rejected():
    X = samplers.normal((1, 1, 6), seed=3)
    attrs = {"kernel_shape": [2], "pads": [2, 2], "count_include_pad": 1}  # windows wholly in padding average 0
    claim = Claim("AveragePool", {"X": ("differentiable", "linear"), "Y": ("differentiable", "of X")})
    plain = {"kernel_shape": [2], "count_include_pad": 1}
    check_vjp_fd("AveragePool", _avgpool_vjp, [X], plain)
    evidence.record("AveragePool", "X", "rule", _avgpool_vjp)  # stands for check_vjp_symbolic here
    check_vjp_ort("AveragePool", _avgpool_vjp, [X], attrs)
    check_vjp_onnxad("AveragePool", _avgpool_vjp, [X], plain)
    with pytest.raises(VerdictError, match="lacks an ONNX Runtime check .* that compared a gradient"):
        claim.verdict(_avgpool_vjp)
    check_vjp_ort("AveragePool", _avgpool_vjp, [X], plain)  # compares
    claim.verdict(_avgpool_vjp)


def test_a_check_that_compares_nothing_is_shown_as_such_in_the_cell_table():
    from proofkit import report
    none = check_vjp_fd("Floor", lambda i, c, **a: [None], [samplers.normal((3,), seed=1)])
    real = check_vjp_fd("Neg", lambda i, c, **a: [-np.asarray(c[0])], [samplers.normal((3,), seed=1)])
    assert not none.compared and real.compared
    table = report.CheckTable([none, real])
    assert [r[3] for r in table.table.rows] == ["nothing compared", "X"]
    assert table.table.caption.endswith("none failed; 1 of them compared nothing")
    assert report.CheckTable([none]).table.caption.endswith("none failed; every one compared nothing")
    assert report.CheckTable([real]).table.caption.endswith("run in this cell, none failed")


def test_none_against_none_at_a_special_point_is_not_called_agreement():
    from proofkit import Special, check_conventions

    def floor_vjp(i, c, **a):
        return [None]
    result = check_conventions("Floor", floor_vjp, [Special("x = 1", [np.array([1.0])], {"X": None})],
                               twin=lambda X: torch.floor(X.detach()))  # no gradient path: PyTorch gives None
    assert result.table.rows[0][-1] == "None on every side: nothing compared"


def test_a_declared_departure_from_the_policy_is_stored_and_listed_by_the_method_page(tmp_path):
    import nbformat

    from proofkit.audit import policy_departures
    from proofkit.conventions import CONVENTIONS_MIME

    result = check_conventions("Relu", relu_vjp, [
        Special("X = 0", [np.array(0.0)], {"X": 0.0}),
        Special("X = 0 (again)", [np.array(0.0)], {"X": 0.0}, departs="a reason of the chapter's own")], twin=torch.relu)
    payload = result.as_json()
    assert [p.get("departs") for p in payload["points"]] == [None, "a reason of the chapter's own"]
    assert "departure from the book's convention policy at X = 0 (again)" in repr(result)
    (tmp_path / "proofs").mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("")])
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data={CONVENTIONS_MIME: payload})]
    nbformat.write(nb, tmp_path / "proofs" / "Relu.ipynb")
    table = policy_departures(tmp_path)
    assert [r[1:] for r in table.rows] == [["X = 0 (again)", "X", "0.0", "a reason of the chapter's own"]]
    assert 'href="../proofs/Relu.html"' in table._repr_html_()
    (tmp_path / "proofs" / "Relu.ipynb").unlink()
    assert "0 special points" in policy_departures(tmp_path).caption


def test_a_non_differentiable_float_input_needs_a_checked_float_to_float_call():
    # BitCast from float64 checked only with an integer `to`: every output was discrete, which used to be enough
    from onnx import TensorProto

    def bitcast_vjp(inputs, cotangents, **attrs):
        return [None]
    claim = Claim("BitCast", {"input": ("non-differentiable", "bits"), "output": ("non-differentiable", "bits")})
    x = samplers.normal((3,), seed=2)
    check_vjp_fd("BitCast", bitcast_vjp, [x], {"to": TensorProto.INT64})
    with pytest.raises(VerdictError, match="schema admits a float value of it with a float output, but no checked "
                                           "call gave vjp that path"):
        claim.verdict(bitcast_vjp)
    check_vjp_fd("BitCast", bitcast_vjp, [x], {"to": TensorProto.DOUBLE})  # the float path, now checked
    with pytest.raises(VerdictError, match="witness_selects"):  # and its values are read: not non-differentiable
        claim.verdict(bitcast_vjp)


def test_the_forward_check_shows_the_tolerance_it_tests():
    from proofkit import check_forward
    y = np.array([100.0, -3.0])
    result = check_forward("Neg", lambda i, **a: [-np.asarray(i[0])], [y], rtol=1e-6, atol=1e-9)
    assert result.tol == pytest.approx(1e-9 + 1e-6 * 100)  # atol + rtol·max|y|, not max(rtol, atol)
    assert "tolerance 1e-09 + 1e-06·max|y|" in repr(result)


def test_a_declared_difference_is_a_comparison_a_refusal_is_not():
    from proofkit import report
    from proofkit.checks import CheckResult
    differs = CheckResult("ONNX Runtime", "Neg", [], outcome="differs (declared)")
    refused = CheckResult("ONNX Runtime", "Neg", [], outcome="refused by ONNX Runtime")
    assert differs.compared and not refused.compared
    assert report.CheckTable([differs, refused]).table.caption.endswith("none failed; 1 of them compared nothing")
    assert [r[3] for r in report.CheckTable([differs, refused]).table.rows] == ["differs (declared)",
                                                                                "refused by ONNX Runtime"]


def _quantize_vjp(inputs, cotangents, **attrs):
    """QuantizeLinear per tensor, float outputs read as reals: ḡ/s, -Σḡx/s², Σḡ; None for an integer output."""
    x_, s_ = inputs[0], inputs[1]
    z_ = inputs[2] if len(inputs) > 2 else None
    g_ = cotangents[0]
    out = np.asarray(z_).dtype.name if z_ is not None else ("float8" if attrs.get("output_dtype") == 17 else "uint8")
    if g_ is None or not out.startswith(("float8", "float6")):
        return [None] * len(inputs)
    scale = None if np.asarray(s_).dtype.kind == "i" else np.asarray(-np.sum(g_ * x_) / s_**2)  # int32: discrete
    return [g_ / s_, scale] + ([np.asarray(np.sum(g_))] if z_ is not None else [])


def _quantize_evidence(vjp, *, integer_call=True):
    import ml_dtypes
    f6, e4 = ml_dtypes.float6_e2m3fn, {"output_dtype": 17}
    x_ = samplers.uniform((40, 50), -0.25, 0.25, seed=8)
    check_vjp_fd("QuantizeLinear", vjp, [x_, np.array(1.0)], e4, eps={"x": 1.0, "y_scale": 0.15}, rtol=0.4,
                 reals=True, n_dirs=3)
    x6 = [samplers.uniform((40, 50), -4, 4, seed=12), np.int32(1), np.array(0.5, f6)]  # an int32 scale: discrete
    check_vjp_fd("QuantizeLinear", vjp, x6, eps={"x": 1.0, "y_zero_point": 1.0}, rtol=0.4, reals=True, n_dirs=3)
    if integer_call:  # an integer output: vjp's None for every input
        check_vjp_fd("QuantizeLinear", vjp, [x_, np.array(1.0), np.uint8(3)], reals=True)
    xs_, s_, z_ = sp.symbols("x_0:2", real=True), sp.Symbol("s", positive=True), sp.Symbol("z", real=True)
    gs = sp.symbols("g_0:2", real=True)
    check_vjp_symbolic("QuantizeLinear", {"x": list(xs_), "y_scale": [s_], "y_zero_point": [z_]},
                       {"y": [v / s_ + z_ for v in xs_]}, {"y": list(gs)},
                       {"x": [gk / s_ for gk in gs], "y_scale": [-(gs[0] * xs_[0] + gs[1] * xs_[1]) / s_**2],
                        "y_zero_point": [gs[0] + gs[1]]},
                       call=[np.array(list(xs_), dtype=object), np.array(s_, dtype=object), np.array(0.5, f6)],
                       vjp=vjp, reals=True)
    for case, attrs, names in (([x_, np.array(1.0)], e4, ("x", "y_scale")), (x6, {}, ("x", "y_zero_point"))):
        check_vjp_ort("QuantizeLinear", vjp, case, attrs, reals=True)
        check_vjp_onnxad("QuantizeLinear", vjp, case, attrs, reals=True, disagree={n: "zero adjoint" for n in names})
    at_m = [np.array([224.0]), np.array(0.5)]
    witness_kink("QuantizeLinear", at_m, attrs=e4, steps=(64.0, 32.0), reals=True)
    witness_kink("QuantizeLinear", at_m, input=1, attrs=e4, steps=(1 / 16, 1 / 32), reals=True)
    witness_kink("QuantizeLinear", [np.array([6.0]), np.array(1.0), np.array(1.5, f6)], input=2, steps=(1.0, 0.5),
                 reals=True)
    check_conventions("QuantizeLinear", vjp, [Special("inside", [np.array([0.25]), np.array(0.5), np.array(0.5, f6)],
                                                      {"x": 2.0, "y_scale": -1.0, "y_zero_point": 1.0},
                                                      onnxad="zero adjoint")], ort=False, reals=True)


QUANTIZE = {"x": (AE, "float outputs as reals"), "y_scale": (AE, "float outputs as reals"),
            "y_zero_point": (AE, "a float6 zero point"), "y": (AE, "float outputs")}


def test_a_none_where_every_output_is_integer_does_not_count_against_a_gradient():
    _quantize_evidence(_quantize_vjp)
    payload = Claim("QuantizeLinear", QUANTIZE).verdict(_quantize_vjp).as_json()
    x_row = next(r for r in payload["rows"] if r["name"] == "x")
    assert "vjp returns None where every output is discrete" in x_row["evidence"]
    assert "vjp returns None" not in x_row["evidence"]


def test_a_none_on_a_call_with_a_float_output_still_counts():
    def none_on_floats(inputs, cotangents, **attrs):  # no gradient on a float64-typed output: a real claim
        return [None] * len(inputs) if attrs.get("axis") == 0 else _quantize_vjp(inputs, cotangents, **attrs)

    _quantize_evidence(none_on_floats, integer_call=False)
    check_vjp_fd("QuantizeLinear", none_on_floats, [samplers.uniform((3, 4), -0.25, 0.25, seed=1), np.array(1.0)],
                 {"output_dtype": 17, "axis": 0}, reals=True)
    with pytest.raises(VerdictError, match="x is called differentiable almost everywhere, but vjp returns None"):
        Claim("QuantizeLinear", QUANTIZE).verdict(none_on_floats)


def test_conventions_read_float_formats_as_reals_with_reals():
    import ml_dtypes
    f6 = ml_dtypes.float6_e2m3fn
    inside = Special("inside", [np.array([0.25]), np.array(0.5), np.array(0.5, f6)],
                     {"x": 2.0, "y_scale": -1.0, "y_zero_point": 1.0}, onnxad="zero adjoint")
    table = check_conventions("QuantizeLinear", _quantize_vjp, [inside], ort=False, reals=True).table
    assert [r[1] for r in table.rows] == ["x", "y_scale", "y_zero_point"] and table.rows[2][2] == "1.0"
    with pytest.raises(AssertionError, match="vjp gives None for x"):  # without reals: no cotangent on float6 y
        check_conventions("QuantizeLinear", _quantize_vjp, [inside], ort=False)
    wrong = Special("inside", inside.inputs, {**inside.expect, "y_zero_point": 2.0}, onnxad="zero adjoint")
    with pytest.raises(AssertionError, match="the chapter's convention is 2.0"):
        check_conventions("QuantizeLinear", _quantize_vjp, [wrong], ort=False, reals=True)
    # a float8 output beside PyTorch's float8 cast, whose backward takes the cotangent in float8
    twin = lambda x, y_scale, y_zero_point=None, **attrs: (x / y_scale).to(torch.float8_e4m3fn)  # noqa: E731
    at = Special("x/s = 1.0625", [np.array([2.125]), np.array(2.0)], {"x": 0.5, "y_scale": -2.125 / 4},
                 attrs={"output_dtype": 17}, onnxad="zero adjoint")
    rows = check_conventions("QuantizeLinear", _quantize_vjp, [at], twin=twin, ort=False, reals=True).table.rows
    assert [r[3] for r in rows] == ["0.5", "-0.53125"] and all("PyTorch agrees" in r[6] for r in rows)
