"""The onnx-ad check (Method 3 executed) has teeth: a right rule agrees, a wrong one is rejected, a declared difference
must be real, a refusal is shown as a refusal and never as a pass, and the verdict requires the check."""

import numpy as np
import pytest
import torch

from proofkit import (Claim, Special, VerdictError, check_conventions, check_vjp_fd, check_vjp_onnxad, check_vjp_ort,
                      onnxad_gradient, samplers)
from proofkit import evidence
from proofkit.evidence import _reset, facts, recorded


@pytest.fixture(autouse=True)
def clean_evidence():
    _reset()
    yield
    _reset()


def abs_vjp(inputs, cotangents, **attrs):
    return [cotangents[0] * np.sign(inputs[0])]


def max_vjp(inputs, cotangents, **attrs):
    """Max of two inputs; a tie splits the cotangent evenly (the book's policy, item 3)."""
    a, b = inputs
    share = (a > b) + 0.5 * (a == b)
    return [cotangents[0] * share, cotangents[0] * (1 - share)]


def test_a_right_rule_agrees_in_float64_and_is_recorded():
    x = samplers.uniform((3, 4), seed=1, avoid=[0.0], margin=1e-2)
    result = check_vjp_onnxad("Abs", abs_vjp, [x])
    assert result.compared and result.names == ["X"] and result.error <= result.tol <= 2e-9
    assert "onnxad" in facts("Abs", "X", abs_vjp)


def test_a_rule_wrong_by_a_factor_of_1_000_000_001_is_rejected():
    x = samplers.uniform((3, 4), seed=1, avoid=[0.0], margin=1e-2)
    with pytest.raises(AssertionError, match="gradient of input X differs from onnx-ad's"):
        check_vjp_onnxad("Abs", lambda i, c, **a: [1.00000001 * abs_vjp(i, c)[0]], [x])
    assert not facts("Abs", "X", None) & {"onnxad"}


def test_onnx_ad_gives_a_tie_to_the_first_input_and_a_declared_difference_must_be_real():
    tie = [np.array([1.0, 2.0]), np.array([1.0, 0.0])]
    grads = onnxad_gradient("Max", tie, [np.array([1.0, 1.0])])
    assert grads[0].tolist() == [1.0, 1.0] and grads[1].tolist() == [0.0, 0.0]  # first takes all
    with pytest.raises(AssertionError, match="differs from onnx-ad's"):
        check_vjp_onnxad("Max", max_vjp, tie)
    result = check_vjp_onnxad("Max", max_vjp, tie, disagree={"data_0": "ties go to the first input"})
    assert result.compared and "ties go to the first input" in result.notes
    (rec,) = {r for r in recorded("Max") if r.kind == "onnxad-differs"}
    assert rec.data["what"] == "wrong value" and "inputs (2,), (2,)" in rec.data["case"]
    apart = [np.array([1.0, 2.0]), np.array([0.0, 5.0])]
    with pytest.raises(AssertionError, match="declared .* but its gradient now agrees"):
        check_vjp_onnxad("Max", max_vjp, apart, disagree={"data_0": "stale"})


def test_a_refusal_is_shown_with_onnx_ads_reason_and_compares_nothing():
    x = samplers.normal((1, 1, 7), seed=2)
    result = check_vjp_onnxad("AveragePool", lambda i, c, **a: [np.zeros_like(i[0])], [x],
                              {"kernel_shape": [3], "strides": [2], "ceil_mode": 1})
    assert not result.compared and result.shown_outcome() == "refused by onnx-ad"
    assert "ceil_mode=1 is not differentiated" in result.notes
    assert {r.kind for r in recorded("AveragePool")} == {"onnxad-refused"}


def test_seeding_only_some_outputs_is_the_same_product_with_zero_cotangents():
    def layernorm_y_only(inputs, cotangents, **attrs):
        X, scale, bias = inputs
        gy = cotangents[0]
        mu, var = X.mean(-1, keepdims=True), X.var(-1, keepdims=True)
        r = 1 / np.sqrt(var + attrs["epsilon"])
        xh = (X - mu) * r
        gxh = gy * scale
        gx = r * (gxh - gxh.mean(-1, keepdims=True) - xh * (gxh * xh).mean(-1, keepdims=True))
        for g in cotangents[1:]:
            assert g is None or not np.any(g)  # the check gives Mean and InvStdDev a zero cotangent
        return [gx, (gy * xh).sum(0), gy.sum(0)]

    ins = [samplers.normal((3, 4), seed=3), samplers.normal((4,), seed=4), samplers.normal((4,), seed=5)]
    every = check_vjp_onnxad("LayerNormalization", layernorm_y_only, ins)  # Mean and InvStdDev seeded too
    assert not every.compared and every.shown_outcome() == "refused by onnx-ad" and "seed only" in every.notes
    result = check_vjp_onnxad("LayerNormalization", layernorm_y_only, ins, outputs=["Y"])
    assert result.names == ["X", "Scale", "B"] and "cotangent on Y only" in result.notes


def test_the_notes_say_when_onnx_ad_reached_the_operator_through_a_function_body_or_a_lowering():
    x = samplers.normal((1, 3, 4, 4), seed=6)
    swish = check_vjp_onnxad("Swish", lambda i, c, **a: [c[0] * (1 / (1 + np.exp(-i[0]))) * (1 + i[0] * (
        1 - 1 / (1 + np.exp(-i[0]))))], [x])
    assert swish.compared and "the spec's function body, expanded" in swish.notes
    _, how = onnxad_gradient("LRN", [x], [np.ones(x.shape)], {"size": 3}, with_how=True)
    assert how == "lowered"


def test_the_convention_table_has_an_onnx_ad_column_and_its_differences_must_be_declared():
    tie = [np.array(1.0), np.array(1.0)]
    twin = torch.maximum
    with pytest.raises(AssertionError, match="onnx-ad differs from vjp; declare"):
        check_conventions("Max", max_vjp, [Special("tie", tie, {"data_0[0]": 0.5, "data_0[1]": 0.5},
                                                   ort="not asked")], twin=twin, ort=False)
    result = check_conventions("Max", max_vjp, [Special("tie", tie, {"data_0[0]": 0.5, "data_0[1]": 0.5},
                                                        onnxad="the first input takes a tie")], twin=twin, ort=False)
    assert result.table.head[5] == "onnx-ad" and result.table.rows[0][5] == "1.0"
    assert "onnx-ad differs" in result.table.rows[0][-1]
    recs = [r.data for r in recorded("Max") if r.kind == "onnxad-convention"]  # one per variadic input
    assert recs == [{"case": "tie", "values": {"vjp": "0.5", "engine": "1.0"}},
                    {"case": "tie", "values": {"vjp": "0.5", "engine": "0.0"}}]


def test_a_differentiable_verdict_requires_the_onnx_ad_check():
    x = samplers.normal((4,), seed=1)

    def exp_vjp(inputs, cotangents, **attrs):
        return [cotangents[0] * np.exp(inputs[0])]

    check_vjp_fd("Exp", exp_vjp, [x])
    evidence.record("Exp", "input", "rule", exp_vjp)  # stands for check_vjp_symbolic here
    check_vjp_ort("Exp", exp_vjp, [x])
    claim = Claim("Exp", {"input": ("differentiable", "r"), "output": ("differentiable", "r")})
    with pytest.raises(VerdictError, match=r"lacks an onnx-ad check \(check_vjp_onnxad\)"):
        claim.verdict(exp_vjp)
    check_vjp_onnxad("Exp", exp_vjp, [x])
    payload = claim.verdict(exp_vjp).as_json()
    assert payload["rows"][0]["engines"] == {"ONNX Runtime": ["agrees"], "onnx-ad": ["agrees"]}
    assert payload["engine_findings"] == []


def test_a_defect_declared_at_a_special_point_is_filed_as_a_wrong_value_not_a_convention():
    from proofkit import Defect
    from proofkit.verdict import engine_findings, engine_outcomes
    tie = [np.array(1.0), np.array(1.0)]
    check_conventions("Max", max_vjp, [Special("tie", tie, {"data_0[0]": 0.5, "data_0[1]": 0.5},
                                               onnxad=Defect("stands for a defect"))], twin=torch.maximum, ort=False)
    assert {f["kind"] for f in engine_findings("Max")} == {"wrong value"}
    assert engine_outcomes("Max", "data_0")["onnx-ad"] == ["differs"]
    _reset()
    check_conventions("Max", max_vjp, [Special("tie", tie, {"data_0[0]": 0.5, "data_0[1]": 0.5},
                                               onnxad="a convention")], twin=torch.maximum, ort=False)
    assert {f["kind"] for f in engine_findings("Max")} == {"convention at a special point"}
    assert engine_outcomes("Max", "data_0")["onnx-ad"] == ["differs at a special point"]


def test_a_float8_output_is_passed_to_onnx_ad_which_refuses_it_itself():
    from proofkit.onnxad import NoOnnxAdGradient
    with pytest.raises(NoOnnxAdGradient, match="not of a floating-point type"):
        onnxad_gradient("Cast", [np.array([3.3, 448.0])], [np.ones(2)], {"to": 17})  # FLOAT8E4M3FN


def test_a_gradient_operator_without_a_cpu_kernel_is_no_gradient_not_a_refusal():
    # ONNX Runtime 1.19.2 builds ConvTransposeGrad for ConvTranspose, which has no CPU kernel on any attributes
    from proofkit.ortgrad import NoGradientBuilder, ort_gradient
    x, w = samplers.normal((1, 1, 3), seed=1), samplers.normal((1, 1, 2), seed=2)
    with pytest.raises(NoGradientBuilder, match="no CPU kernel for ConvTransposeGrad") as e:
        ort_gradient("ConvTranspose", [x, w], [np.ones((1, 1, 4))])
    assert not e.value.refused


def test_inputs_onnx_ad_refuses_can_be_left_out_and_the_notes_say_so():
    def conv1d_vjp(inputs, cotangents, **attrs):  # Conv with one channel, kernel 2, no padding
        x, w = inputs[0][0, 0], inputs[1][0, 0]
        g = cotangents[0][0, 0]
        gx = np.zeros_like(x)
        for t in range(g.size):
            gx[t:t + 2] += g[t] * w
        gw = np.array([g @ x[k:k + g.size] for k in range(2)])
        return [gx[None, None], gw[None, None]]

    x, w = samplers.normal((1, 1, 5), seed=1), samplers.normal((1, 1, 2), seed=2)
    both = check_vjp_onnxad("Conv", conv1d_vjp, [x, w])
    assert both.names == ["X", "W"]
    only = check_vjp_onnxad("Conv", conv1d_vjp, [x, w], inputs_wrt=["X"])
    assert only.names == ["X"] and "asked for X only (not W)" in only.notes
    with pytest.raises(AssertionError, match="not float inputs"):
        check_vjp_onnxad("Conv", conv1d_vjp, [x, w], inputs_wrt=["B"])


def test_a_forward_stands_in_for_onnx_reference_for_the_output_shapes_and_is_noted():
    x = samplers.uniform((3, 4), seed=1, avoid=[0.0], margin=1e-2)
    result = check_vjp_onnxad("Abs", abs_vjp, [x], forward=lambda inputs, **a: [np.abs(inputs[0])])
    assert result.compared and "output shapes from the chapter's forward" in result.notes


def test_a_declared_onnx_ad_difference_where_onnx_ad_gives_nothing_fails():
    x = samplers.normal((1, 1, 7), seed=2)  # onnx-ad refuses AveragePool with ceil_mode=1
    point = Special("refused", [x], {"X": None}, attrs={"kernel_shape": [3], "strides": [2], "ceil_mode": 1},
                    onnxad="stale")
    with pytest.raises(AssertionError, match="onnx-ad gave no gradient there"):
        check_conventions("AveragePool", lambda i, c, **a: [None], [point], ort=False)


def test_a_float_input_held_constant_is_an_initializer_and_not_differentiated():
    # Resize with roi fed as a graph input is refused; held as an initializer (as exported), X is differentiated
    x = samplers.normal((1, 1, 4), seed=3)
    roi, sizes = np.array([0.0, 0.0, 0.2, 1.0, 1.0, 0.9]), np.array([1, 1, 3], np.int64)
    attrs = dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize")
    probe = np.eye(4)  # X-bar of a linear map: the transposed matrix times the cotangent, from the map's columns
    cols = [onnxad_gradient("Resize", [x, roi, None, sizes], [np.ones((1, 1, 3))], attrs, constants=[1])]
    assert cols[0][1] is None and cols[0][0].shape == x.shape
    from proofkit import run_onnx
    J = np.stack([run_onnx("Resize", [e.reshape(1, 1, 4), roi, None, sizes], attrs)[0].ravel() for e in probe], 1)

    def resize_vjp(inputs, cotangents, **a):
        return [(J.T @ cotangents[0].ravel()).reshape(1, 1, 4), None, None, None]

    refused = check_vjp_onnxad("Resize", resize_vjp, [x, roi, None, sizes], attrs)
    assert not refused.compared
    held = check_vjp_onnxad("Resize", resize_vjp, [x, roi, None, sizes], attrs, constants=["roi"])
    assert held.names == ["X"] and "roi held constant (an initializer)" in held.notes
    with pytest.raises(AssertionError, match="not float inputs"):
        check_vjp_onnxad("Resize", resize_vjp, [x, roi, None, sizes], attrs, constants=["sizes"])


def test_the_adjoint_can_run_on_onnx_runtime_where_onnx_reference_cannot_and_keeps_its_teeth():
    # RNN: onnx-ad's adjoint is a Scan in reverse direction, which onnx.reference does not run
    rng = np.random.default_rng(0)
    x, w, r = rng.standard_normal((2, 1, 1)), rng.standard_normal((1, 1, 1)), rng.standard_normal((1, 1, 1))
    attrs = {"hidden_size": 1, "activations": ["Affine"], "activation_alpha": [1.0], "activation_beta": [0.0]}

    def rnn_vjp(inputs, cotangents, **a):  # h_t = w x_t + r h_{t-1}, h_0 = 0; outputs Y (T,1,1,1) and Y_h
        x_, w_, r_ = (float(v) for v in (inputs[0].ravel()[0], inputs[1].ravel()[0], inputs[2].ravel()[0]))
        x1 = float(inputs[0].ravel()[1])
        h1 = w_ * x_
        gy = cotangents[0].ravel() if cotangents[0] is not None else np.zeros(2)
        gh = float(cotangents[1].ravel()[0]) if len(cotangents) > 1 and cotangents[1] is not None else 0.0
        a2 = gy[1] + gh  # cotangent of h_2 = w x1 + r h1
        a1 = gy[0] + r_ * a2
        return [np.array([w_ * a1, w_ * a2]).reshape(2, 1, 1), np.array(x_ * a1 + x1 * a2).reshape(1, 1, 1),
                np.array(h1 * a2).reshape(1, 1, 1)]

    under_reference = check_vjp_onnxad("RNN", rnn_vjp, [x, w, r], attrs)
    assert not under_reference.compared and "onnx.reference could not run" in under_reference.notes
    under_ort = check_vjp_onnxad("RNN", rnn_vjp, [x, w, r], attrs, runner="onnxruntime")
    assert under_ort.names == ["X", "W", "R"] and "run by ONNX Runtime" in under_ort.notes

    def wrong(inputs, cotangents, **a):
        g = rnn_vjp(inputs, cotangents, **a)
        return [g[0], 1.001 * g[1], g[2]]

    with pytest.raises(AssertionError, match="onnx-ad"):
        check_vjp_onnxad("RNN", wrong, [x, w, r], attrs, runner="onnxruntime")
    with pytest.raises(ValueError, match="runner"):
        check_vjp_onnxad("RNN", rnn_vjp, [x, w, r], attrs, runner="torch")


def _cast_vjp(inputs, cotangents, **attrs):
    """Cast between float types: the cotangent, as the book reads float types (the Cast chapter)."""
    return [None if cotangents[0] is None else np.asarray(cotangents[0], np.float64)]


def test_float_formats_read_as_reals_reach_both_engines():
    import ml_dtypes
    x = np.array([1.5, -2.25, 3.0, 0.375], ml_dtypes.bfloat16)
    # without reals a bfloat16 input stays discrete, as before: nothing for ONNX Runtime, a refusal here
    assert check_vjp_ort("Cast", _cast_vjp, [x], {"to": 1}).names == []
    with pytest.raises(AssertionError, match="is discrete"):
        check_vjp_onnxad("Cast", _cast_vjp, [x], {"to": 1})
    _reset()
    for check in (check_vjp_ort, check_vjp_onnxad):
        result = check("Cast", _cast_vjp, [x], {"to": 1}, seed=2, reals=True)
        assert result.names == ["input"] and "bfloat16 read as reals" in repr(result)
        with pytest.raises(AssertionError, match="differs from"):
            check("Cast", lambda i, c, **a: [2 * np.asarray(c[0], np.float64)], [x], {"to": 1}, seed=2, reals=True)
    assert {"ort", "onnxad"} <= facts("Cast", "input", _cast_vjp)
    # a float8 output: "no output is float" without reals; with reals a cotangent, and the engines' own answers
    q = [np.array([0.25, -1.5, 3.0]), np.array(1.0)]

    def q_vjp(inputs, cotangents, **attrs):
        g = cotangents[0]
        return [None, None] if g is None else [g / inputs[1], np.asarray(-np.sum(g * inputs[0]) / inputs[1] ** 2)]

    for check in (check_vjp_ort, check_vjp_onnxad):
        with pytest.raises(AssertionError, match="no output is float"):
            check("QuantizeLinear", q_vjp, q, {"output_dtype": 17})
    ort_result = check_vjp_ort("QuantizeLinear", q_vjp, q, {"output_dtype": 17}, reals=True)
    assert ort_result.names == [] and "unreachable" in ort_result.notes  # ONNX Runtime stops at a float8 tensor
    with pytest.raises(AssertionError, match="gradient of input x differs from onnx-ad"):  # its adjoint is 0
        check_vjp_onnxad("QuantizeLinear", q_vjp, q, {"output_dtype": 17}, reals=True)
    declared = check_vjp_onnxad("QuantizeLinear", q_vjp, q, {"output_dtype": 17}, reals=True,
                                disagree={"x": "zero adjoint", "y_scale": "zero adjoint"})
    assert declared.outcome == "differs (declared)"


def test_a_sequence_interface_refusal_is_the_missing_rule_only_where_onnxad_has_none():
    from onnx_ad.rules import REVERSE

    from proofkit.onnxad import NoOnnxAdGradient, onnxad_gradient

    seq = [np.array([1.0, 2.0]), np.array([3.0])]
    assert "SequenceAt" not in REVERSE and "Identity" in REVERSE
    with pytest.raises(NoOnnxAdGradient, match=r"has no reverse rule for SequenceAt \(.*interface check") as no:
        onnxad_gradient("SequenceAt", [seq, np.array(0)], [np.ones(2)])
    assert no.value.refused is False
    # what onnx-ad's reverse pass itself says on tensor ends, the sequence inside
    from onnx import TensorProto as T
    from onnx import helper as h
    import onnx_ad
    g = h.make_graph([h.make_node("SequenceConstruct", ["x"], ["s"]), h.make_node("SequenceAt", ["s", "i"], ["y"])],
                     "g", [h.make_tensor_value_info("x", T.DOUBLE, [2]), h.make_tensor_value_info("i", T.INT64, [])],
                     [h.make_tensor_value_info("y", T.DOUBLE, [2])])
    with pytest.raises(onnx_ad.UnsupportedOperator, match="no reverse rule for SequenceAt"):
        onnx_ad.reverse(h.make_model(g, opset_imports=[h.make_opsetid("", 21)]), inputs=["x"], outputs=["y"],
                        prefix="adj_", layout="onnx")
    # negative: onnx-ad has a rule for Identity, so its interface check on a sequence stays a refusal of the node
    with pytest.raises(NoOnnxAdGradient, match="failed to build the adjoint model") as refused:
        onnxad_gradient("Identity", [seq], [[np.ones(2), np.ones(1)]])
    assert refused.value.refused is True


def test_the_convention_table_can_run_onnx_ad_s_adjoint_on_onnx_runtime_and_keeps_its_teeth():
    # Scan: onnx-ad's adjoint is a Scan in reverse direction, which onnx.reference does not run
    from onnx import TensorProto, helper
    d = TensorProto.DOUBLE
    body = helper.make_graph([helper.make_node("Add", ["h", "x"], ["h_out"])], "cumsum",
                             [helper.make_tensor_value_info("h", d, []), helper.make_tensor_value_info("x", d, [])],
                             [helper.make_tensor_value_info("h_out", d, [])])
    attrs = {"body": body, "num_scan_inputs": 1}
    point = [np.array(0.5), np.array([1.0, -2.0])]

    def scan_vjp(inputs, cotangents, **a):  # h_T = h_0 + sum(x): each gets the cotangent
        return [cotangents[0], np.full(inputs[1].shape, float(cotangents[0]))]

    def doubled(inputs, cotangents, **a):
        return [2 * g for g in scan_vjp(inputs, cotangents)]

    special = [Special("any point", point, {"initial_state_and_scan_inputs[0]": 1.0}, attrs=attrs)]
    under_reference = check_conventions("Scan", scan_vjp, special, ort=False)
    assert under_reference.table.rows[0][5] == "refused"
    under_ort = check_conventions("Scan", scan_vjp, special, ort=False, onnxad_runner="onnxruntime")
    assert under_ort.table.rows[0][5] == "1.0" and under_ort.table.rows[0][-1] == "onnx-ad agrees"
    assert "run by ONNX Runtime" in under_ort.table.caption
    wrong = [Special("any point", point, {"initial_state_and_scan_inputs[0]": 2.0}, attrs=attrs)]
    with pytest.raises(AssertionError, match="onnx-ad differs from vjp; declare"):
        check_conventions("Scan", doubled, wrong, ort=False, onnxad_runner="onnxruntime")
    with pytest.raises(ValueError, match="onnxad_runner"):
        check_conventions("Scan", scan_vjp, special, ort=False, onnxad_runner="torch")


def test_the_adjoint_and_its_evaluator_are_built_once_per_model_and_set_of_stand_ins(monkeypatch):
    from proofkit import onnxad, onnxrun
    x, g = np.array([[-1.5, 2.0, 0.5]]), np.array([[1.0, -2.0, 3.0]])
    onnxad_gradient("Abs", [x], [g])
    built = onnxad._adjoint_evaluator.cache_info().misses
    got = onnxad_gradient("Abs", [2 * x], [g])[0]  # same model (shapes and types): no new build, right values
    assert np.array_equal(got, g * np.sign(2 * x)) and onnxad._adjoint_evaluator.cache_info().misses == built
    # another registered stand-in: an evaluator of its own; the outputs given by the caller are used as given
    monkeypatch.setitem(onnxrun._STAND_INS, "Foo", (lambda inputs, **a: inputs, "a test"))
    got = onnxad_gradient("Abs", [x], [g], outs=[np.abs(x)])[0]
    assert np.array_equal(got, g * np.sign(x)) and onnxad._adjoint_evaluator.cache_info().misses == built + 1
