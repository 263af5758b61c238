"""The checks have teeth: correct rules pass, and each kind of wrong rule is rejected with a clear message."""

import numpy as np
import pytest
import sympy as sp
import torch

from proofkit import (check_forward, check_vjp_fd, check_vjp_symbolic, check_vjp_torch,
                      check_zero_almost_everywhere, samplers, sum_to_shape)
from proofkit.evidence import _reset, facts

A = samplers.normal((2, 1, 3), seed=1)
B = samplers.normal((4, 1), seed=2)


@pytest.fixture(autouse=True)
def clean_evidence():
    _reset()
    yield
    _reset()


def add_vjp(inputs, cotangents, **attrs):
    return [sum_to_shape(cotangents[0], inputs[0].shape), sum_to_shape(cotangents[0], inputs[1].shape)]


def add_vjp_without_reduction(inputs, cotangents, **attrs):
    return [cotangents[0], cotangents[0]]


def add_vjp_reduced_by_mean(inputs, cotangents, **attrs):  # right shapes, wrong values: mean, not sum
    g = cotangents[0]  # shape (2, 4, 3); A (2, 1, 3) was repeated along axis 1, B (4, 1) along axes 0 and 2
    return [g.mean(axis=1, keepdims=True), g.mean(axis=(0, 2))[:, None]]


def relu_vjp(inputs, cotangents, **attrs):
    return [cotangents[0] * (inputs[0] > 0)]


def relu_vjp_scaled(inputs, cotangents, **attrs):
    return [1.001 * cotangents[0] * (inputs[0] > 0)]


X = samplers.uniform((3, 4), seed=3, avoid=[0.0], margin=1e-3)


def test_correct_rules_pass_and_are_recorded():
    check_vjp_fd("Add", add_vjp, [A, B])
    check_vjp_torch("Add", add_vjp, torch.add, [A, B])
    check_vjp_fd("Relu", relu_vjp, [X])
    assert facts("Add", "A", add_vjp) >= {"fd", "torch"} and "fd" in facts("Add", "C", add_vjp)
    assert facts("Relu", "X", relu_vjp) == {"fd"}
    assert facts("Relu", "X", relu_vjp_scaled) == set()  # evidence belongs to the function that was checked


def test_add_without_the_broadcast_reduction_is_rejected():
    with pytest.raises(AssertionError, match=r"Add: vjp's gradient for A has shape \(2, 4, 3\), the input has shape \(2, 1, 3\)"):
        check_vjp_fd("Add", add_vjp_without_reduction, [A, B])
    with pytest.raises(AssertionError, match="gradient for A has shape"):
        check_vjp_torch("Add", add_vjp_without_reduction, torch.add, [A, B])
    assert "fd" not in facts("Add", "A", add_vjp_without_reduction)


def test_add_with_a_wrong_reduction_of_the_right_shape_is_rejected():
    with pytest.raises(AssertionError, match=r"gradient of input A disagrees with finite differences.*tolerance"):
        check_vjp_fd("Add", add_vjp_reduced_by_mean, [A, B])
    with pytest.raises(AssertionError, match=r"gradient of input A differs from PyTorch autograd by .*tolerance"):
        check_vjp_torch("Add", add_vjp_reduced_by_mean, torch.add, [A, B])


def test_relu_scaled_by_1_001_is_rejected_by_both_numeric_checks():
    with pytest.raises(AssertionError, match=r"Relu: gradient of input X disagrees with finite differences of "
                                             r"onnx.reference: .* error .* > tolerance"):
        check_vjp_fd("Relu", relu_vjp_scaled, [X])
    with pytest.raises(AssertionError, match=r"Relu: gradient of input X differs from PyTorch autograd"):
        check_vjp_torch("Relu", relu_vjp_scaled, torch.relu, [X])
    assert not facts("Relu", "X", relu_vjp_scaled)


def test_relu_scaled_rule_is_rejected_symbolically_and_piecewise_rule_accepted():
    x, p = sp.Symbol("x", real=True), sp.Symbol("p", positive=True)
    g = sp.Symbol("g")
    y = sp.Max(0, x)
    good = sp.Piecewise((g, x > 0), (0, True))
    check_vjp_symbolic("Relu", {"X": [x]}, {"Y": [y]}, {"Y": [g]}, {"X": [good]}, pieces=[{x: p}, {x: -p}],
                       vjp=relu_vjp)
    with pytest.raises(AssertionError, match=r"Relu: the rule for X\[0\] differs from Jᵀḡ on the piece"):
        check_vjp_symbolic("Relu", {"X": [x]}, {"Y": [y]}, {"Y": [g]}, {"X": [good * sp.Rational(1001, 1000)]},
                           pieces=[{x: p}, {x: -p}], vjp=relu_vjp)


def test_a_gradient_for_a_discrete_input_is_rejected():
    def reshape_vjp(inputs, cotangents, **attrs):
        return [cotangents[0].reshape(inputs[0].shape), np.zeros(2)]

    with pytest.raises(AssertionError, match="gradient for shape, whose type int64 is discrete"):
        check_vjp_fd("Reshape", reshape_vjp, [np.ones((2, 3)), np.array([3, 2])])


def test_checks_run_in_float64():
    with pytest.raises(AssertionError, match="input X is float32; the backward checks run in float64"):
        check_vjp_fd("Relu", relu_vjp, [X.astype(np.float32)])


def test_vjp_must_return_one_entry_per_input():
    with pytest.raises(AssertionError, match="vjp returned 1 entries for 2 inputs"):
        check_vjp_fd("Add", lambda i, c: [c[0]], [A, B])


def test_forward_check_catches_a_wrong_model_and_a_wrong_torch_twin():
    check_forward("Add", lambda inputs: [inputs[0] + inputs[1]], [A, B])
    with pytest.raises(AssertionError, match=r"Add: output C: the model differs from onnx.reference by"):
        check_forward("Add", lambda inputs: [inputs[0] - inputs[1]], [A, B])
    with pytest.raises(AssertionError, match="output C: the model has shape"):
        check_forward("Add", lambda inputs: [inputs[0]], [A, B])
    with pytest.raises(AssertionError, match="the torch twin differs from onnx.reference"):
        check_vjp_torch("Add", add_vjp, torch.sub, [A, B])


def test_zero_almost_everywhere_check():
    pts = samplers.uniform((5,), seed=4, avoid=[lambda x: x - np.round(x)], margin=1e-3)
    check_zero_almost_everywhere("Floor", [pts])
    assert "zero" in facts("Floor", "X", None) and "zero" in facts("Floor", "Y", None)
    with pytest.raises(AssertionError, match="output Y moves when X is perturbed"):
        check_zero_almost_everywhere("Relu", [X])
    with pytest.raises(AssertionError, match="moves when X is perturbed"):
        check_zero_almost_everywhere("Floor", [np.array([2.0, 0.5])])  # 2.0 sits on a jump


def test_sum_to_shape():
    g = np.arange(24.0).reshape(2, 3, 4)
    assert sum_to_shape(g, (2, 3, 4)) is not None and np.array_equal(sum_to_shape(g, (2, 3, 4)), g)
    assert np.array_equal(sum_to_shape(g, (4,)), g.sum(axis=(0, 1)))
    assert np.array_equal(sum_to_shape(g, (3, 1)), g.sum(axis=(0, 2))[:, None])
    assert sum_to_shape(g, ()).item() == g.sum()
    with pytest.raises(ValueError, match="does not broadcast"):
        sum_to_shape(g, (5,))


def test_samplers_are_seeded_and_keep_their_margins():
    a = samplers.uniform((1000,), -1, 1, seed=7, avoid=[0.0, lambda x: x - 0.5], margin=0.05)
    assert np.array_equal(a, samplers.uniform((1000,), -1, 1, seed=7, avoid=[0.0, lambda x: x - 0.5], margin=0.05))
    assert np.min(np.abs(a)) >= 0.05 and np.min(np.abs(a - 0.5)) >= 0.05
    d = samplers.distinct((50,), seed=1, gap=0.01)
    assert np.min(np.diff(np.sort(d))) >= 0.01
    x = samplers.apart_from(np.zeros(100), [np.array(0.0)], margin=0.1, seed=2)
    assert np.min(np.abs(x)) >= 0.1


def test_an_omitted_optional_input_is_not_recorded_as_non_differentiable():
    def clip_vjp(inputs, cotangents, **attrs):
        x, lo, hi = inputs
        g = cotangents[0]
        return [g * (x > lo), None if lo is None else np.sum(g * (x < lo)), None]

    x = samplers.apart_from(samplers.normal((5,), seed=1), [np.array(0.0)], seed=2)
    result = check_vjp_fd("Clip", clip_vjp, [x, np.array(0.0), None])
    assert facts("Clip", "min", clip_vjp) == {"fd"} and facts("Clip", "max", clip_vjp) == set()
    assert "inputs (5,), (), omitted" in repr(result)


def test_forward_check_compares_nan_and_infinities_exactly():
    x = np.array([np.nan, np.inf, -np.inf, -0.5, 2.5])
    check_forward("Floor", lambda inputs: [np.floor(inputs[0])], [x])
    with pytest.raises(AssertionError, match="differs from onnx.reference by inf"):
        check_forward("Floor", lambda inputs: [np.where(np.isinf(inputs[0]), 0.0, np.floor(inputs[0]))], [x])
    with pytest.raises(AssertionError, match="differs from onnx.reference"):
        check_forward("Floor", lambda inputs: [np.nan_to_num(np.floor(inputs[0]))], [x])


def test_distinct_inputs_have_no_ties_across_inputs_and_are_built_not_rejected():
    xs = samplers.distinct_inputs([(2, 3, 4, 5), (3, 1, 1), (5,)], seed=3)
    assert [x.shape for x in xs] == [(2, 3, 4, 5), (3, 1, 1), (5,)]
    flat = np.sort(np.concatenate([x.ravel() for x in xs]))
    assert np.min(np.diff(flat)) >= 1e-2 - 1e-12 and flat[0] >= -2 and flat[-1] < 2
    with pytest.raises(ValueError, match="do not fit"):
        samplers.distinct((500,), seed=0)


def test_variadic_inputs_are_named_by_position_in_printouts():
    xs = samplers.distinct_inputs([(2, 3), (3,), (1,)], seed=1)
    def sum_vjp(i, c, **a):
        return [sum_to_shape(c[0], np.shape(x)) for x in i]

    result = check_vjp_fd("Sum", sum_vjp, xs)
    assert "passed for data_0[0], data_0[1], data_0[2]" in repr(result)
    assert facts("Sum", "data_0", sum_vjp) == {"fd"}
    with pytest.raises(AssertionError, match=r"gradient of input data_0\[2\] disagrees"):
        check_vjp_fd("Sum", lambda i, c, **a: [sum_to_shape(c[0], np.shape(x)) for x in i[:2]] + [np.zeros(1)], xs)


def test_samplers_for_discrete_ops():
    assert samplers.booleans((3, 4), seed=1).dtype == bool
    assert np.array_equal(samplers.booleans((3, 4), seed=1), samplers.normal((3, 4), seed=1) > 0)
    ints = samplers.integers((1000,), np.int8, seed=2)
    assert ints.dtype == np.int8 and ints.min() == -128 and ints.max() == 127
    assert samplers.integer_edges(np.int16).tolist() == [-32768, -1, 0, 1, 32767]
    assert samplers.integer_edges(np.uint8).tolist() == [0, 1, 128, 255]
    t = samplers.ties((50,), seed=3)
    assert set(t.tolist()) <= {0.0, 0.5, 1.0, 1.5, 2.0, 2.5} and len(set(t.tolist())) < 50
    assert samplers.ties((5,), np.uint8, seed=3).dtype == np.uint8
    b = samplers.uniform((4, 1), -1, 1, seed=5)
    a = samplers.uniform((2, 1, 3), -1, 1, seed=6, avoid=[samplers.distance_to(b)], margin=1e-2)
    assert np.min(np.abs(a - b)) >= 1e-2


def test_integer_outputs_are_compared_exactly():
    a = np.array([2**62 + 1, 5], dtype=np.int64)
    check_forward("BitwiseAnd", lambda inputs: [inputs[0] & inputs[1]], [a, a])
    with pytest.raises(AssertionError, match="differs from onnx.reference in 1 of 2 entries"):
        check_forward("BitwiseAnd", lambda inputs: [(inputs[0] & inputs[1]) + np.array([1, 0])], [a, a])
    with pytest.raises(AssertionError, match="in 1 of 3 entries"):
        check_forward("Not", lambda inputs: [np.array([True, False, False])], [np.array([False, True, False])])


def test_string_outputs_checked_with_zero_tolerance_show_as_exact():
    x, y = np.array(["a", "b"], dtype=object), np.array(["x"], dtype=object)
    r = check_forward("StringConcat", lambda inputs: [inputs[0] + inputs[1]], [x, y], rtol=0, atol=0)
    assert r.exact and r.tol is None and r.error == 0.0 and "equal exactly" in r.notes
    assert check_forward("Not", lambda inputs: [~inputs[0]], [np.array([True])]).exact  # as bools always were
    # NumPy's str type (Identity, StringNormalizer's reference) too; a check left at a tolerance shows it, as before
    u = np.array(["a", "bc"])
    assert check_forward("Identity", lambda inputs: [inputs[0].copy()], [u], rtol=0, atol=0).exact
    assert not check_forward("Identity", lambda inputs: [inputs[0].copy()], [u]).exact
    assert not check_forward("Identity", lambda inputs: [inputs[0] + 0.0], [np.array([1.5])], rtol=0, atol=0).exact
    with pytest.raises(AssertionError, match="differs from onnx.reference"):
        check_forward("StringConcat", lambda inputs: [inputs[1] + inputs[0]], [x, y], rtol=0, atol=0)


def test_float_formats_read_as_reals_are_checked_by_a_secant_with_the_step_taken():
    import ml_dtypes
    e4m3 = ml_dtypes.float8_e4m3fn
    codes = np.array([1.0, -2.5, 3.25, 8.0], dtype=e4m3)
    scale = np.array(0.5)

    def dq_vjp(inputs, cotangents, **attrs):  # y = x·s, linear in the float8 codes
        x, s = inputs
        g = cotangents[0]
        return [g * s, np.asarray(np.sum(g * np.asarray(x).astype(np.float64)))]

    result = check_vjp_fd("DequantizeLinear", dq_vjp, [codes, scale], eps=0.5, reals=True, rtol=1e-9)
    assert set(result.names) == {"x", "x_scale"}
    assert "float8_e4m3fn read as reals" in result.notes

    def doubled(inputs, cotangents, **attrs):
        g = dq_vjp(inputs, cotangents)
        return [2 * g[0], g[1]]

    with pytest.raises(AssertionError, match="disagrees with finite differences"):
        check_vjp_fd("DequantizeLinear", doubled, [codes, scale], eps=0.5, reals=True, rtol=1e-9)
    with pytest.raises(AssertionError, match="is discrete"):  # without reals a float8 input stays discrete
        check_vjp_fd("DequantizeLinear", dq_vjp, [codes, scale], eps=0.5)


def test_a_float8_output_read_as_reals_gets_a_cotangent():
    import ml_dtypes
    x = np.random.default_rng(0).uniform(-6, 6, 64)
    scale = np.array(1.0)
    zero = np.array(0.0, dtype=ml_dtypes.float8_e4m3fn)

    def q_vjp(inputs, cotangents, **attrs):  # y = x / s inside the format's range, read as reals; x only
        g = cotangents[0]
        return [None if g is None else g / inputs[1], None, None]

    discrete = check_vjp_fd("QuantizeLinear", q_vjp, [x, scale, zero], eps=1e-6)
    assert discrete.names == [] and "discrete output y (float8_e4m3fn)" in discrete.notes
    # a secant over the e4m3 grid (steps up to 0.5 here): a step of 2 spans several, the rounding averages out
    read = check_vjp_fd("QuantizeLinear", q_vjp, [x, scale, zero], eps=2.0, rtol=0.1, reals=True)
    assert read.names == ["x"] and "float8_e4m3fn read as reals" in read.notes

    def halved(inputs, cotangents, **attrs):
        g = cotangents[0]
        return [g / (2 * inputs[1]), None, None]

    with pytest.raises(AssertionError, match="disagrees with finite differences"):
        check_vjp_fd("QuantizeLinear", halved, [x, scale, zero], eps=2.0, rtol=0.1, reals=True)


def test_the_float_formats_are_ml_dtypes_formats_and_not_float64():
    import ml_dtypes
    from proofkit.checks import _is_float_format
    from proofkit.onnxad import _is_floatlike
    formats = (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2fnuz, ml_dtypes.float8_e8m0fnu, ml_dtypes.float6_e2m3fn,
               ml_dtypes.float6_e3m2fn, ml_dtypes.float4_e2m1fn, ml_dtypes.bfloat16)
    assert all(_is_float_format(np.zeros(2, t)) for t in formats)
    # "float64".startswith("float6"): NumPy's float64 is a plain float, not a format read as reals
    assert not any(_is_float_format(np.zeros(2, t)) for t in (np.float64, np.float32, np.float16, np.int8, bool))
    # onnx-ad's check seeds the same float types as the other checks, float6 included
    assert all(_is_floatlike(np.zeros(2, t)) for t in formats + (np.float64, np.float32))
    assert not _is_floatlike(np.zeros(2, np.int32))


def test_finite_differences_take_one_step_per_input_where_asked():
    import ml_dtypes
    x = samplers.uniform((40, 50), -0.25, 0.25, seed=8)
    scale = np.array(1.0)

    def q_vjp(inputs, cotangents, **attrs):  # y = x / s inside the range, read as reals
        x_, s = inputs
        g = cotangents[0]
        return [g / s, np.asarray(-np.sum(g * x_) / s**2)]

    attrs = {"output_dtype": 17}  # float8 e4m3fn
    steps = {"x": 1.0, "y_scale": 0.15}
    result = check_vjp_fd("QuantizeLinear", q_vjp, [x, scale], attrs, eps=steps, rtol=0.4, reals=True, n_dirs=3)
    assert result.names == ["x", "y_scale"] and "ε x=1, y_scale=0.15" in result.notes
    assert ml_dtypes.float8_e4m3fn.__name__ in result.notes and "float64" not in result.notes

    def halved_scale(inputs, cotangents, **attrs):
        g = q_vjp(inputs, cotangents)
        return [g[0], g[1] / 2]

    with pytest.raises(AssertionError, match="gradient of input y_scale disagrees"):
        check_vjp_fd("QuantizeLinear", halved_scale, [x, scale], attrs, eps=steps, rtol=0.4, reals=True, n_dirs=3)
    with pytest.raises(AssertionError, match="eps is given per input, but not for y_scale"):
        check_vjp_fd("QuantizeLinear", q_vjp, [x, scale], attrs, eps={"x": 1.0}, rtol=0.4, reals=True)


def test_the_symbolic_tie_reads_a_float_format_zero_point_as_a_real_with_reals():
    import ml_dtypes
    xs, s, z, g_ = sp.symbols("x_0:2", real=True), sp.Symbol("s", positive=True), sp.Symbol("z"), sp.symbols("g_0:2")
    y = [v / s + z for v in xs]
    call = [np.array(list(xs), dtype=object), np.array(s, dtype=object), np.array(0.5, ml_dtypes.float6_e2m3fn)]

    def zp_vjp(inputs, cotangents, **attrs):
        return [None, None, np.asarray(np.sum(cotangents[0]))]

    kwargs = dict(inputs={"y_zero_point": [z]}, outputs={"y": y}, cotangents={"y": list(g_)},
                  rule={"y_zero_point": [g_[0] + g_[1]]}, call=call)
    assert check_vjp_symbolic("QuantizeLinear", **kwargs, vjp=zp_vjp, reals=True).names == ["y_zero_point"]
    with pytest.raises(AssertionError, match="is discrete"):  # without reals a float6 zero point stays discrete
        check_vjp_symbolic("QuantizeLinear", **kwargs, vjp=zp_vjp)
    with pytest.raises(AssertionError, match="differs from the proved rule"):
        check_vjp_symbolic("QuantizeLinear", **kwargs, vjp=lambda i, c, **a: [None, None, np.asarray(0.0)],
                           reals=True)


def test_symbolic_check_splits_a_variadic_outputs_cotangent_over_the_outputs():
    """Several outputs of one variadic formal (Loop's, Scan's) are one entry of outputs and cotangents: their entries
    in output order. A vjp that drops the second output's cotangent fails."""
    from onnx import TensorProto as T, helper as h
    body = h.make_graph([h.make_node("Identity", ["c"], ["c_out"]), h.make_node("Identity", ["v"], ["v_out"]),
                         h.make_node("Identity", ["v"], ["s"])], "copy",
                        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
                         h.make_tensor_value_info("v", T.DOUBLE, [2])],
                        [h.make_tensor_value_info("c_out", T.BOOL, []),
                         h.make_tensor_value_info("v_out", T.DOUBLE, [2]), h.make_tensor_value_info("s", T.DOUBLE, [2])])
    x = sp.Matrix(sp.symbols("x0:2"))
    g = sp.Matrix(sp.symbols("g0:6"))  # v_final (2 entries), then the scan output (2 iterations of 2)
    kwargs = dict(inputs={"v_initial": x}, outputs={"v_final_and_scan_outputs": sp.Matrix([x, x, x])},
                  cotangents={"v_final_and_scan_outputs": g}, rule={"v_initial": sp.Matrix([g[0] + g[2] + g[4],
                                                                                          g[1] + g[3] + g[5]])},
                  call=[np.array(2, np.int64), np.array(True), np.array(list(x), dtype=object)],
                  attrs={"body": body})

    def good(inputs, cotangents, **attrs):
        return [None, None, cotangents[0] + cotangents[1].sum(axis=0)]

    def first_only(inputs, cotangents, **attrs):
        return [None, None, cotangents[0]]

    assert check_vjp_symbolic("Loop", **kwargs, vjp=good).names == ["v_initial"]
    with pytest.raises(AssertionError, match="differs from the proved rule"):
        check_vjp_symbolic("Loop", **kwargs, vjp=first_only)


def test_vanishes_proves_zero_by_the_cheapest_exact_form_and_keeps_a_residue_otherwise():
    from proofkit.symbolic import vanishes
    x, y, g = sp.symbols("x y g", real=True)
    s = 1 / (1 + sp.exp(-x))
    # zero as written, after expansion, as one fraction, and only after simplify (a trigonometric identity)
    assert vanishes(sp.Integer(0)) == 0
    assert vanishes((x + y) ** 2 - x ** 2 - 2 * x * y - y ** 2) == 0
    assert vanishes(g * s * (1 - s) - g * sp.diff(s, x)) == 0
    assert vanishes(g * (sp.sin(x) ** 2 + sp.cos(x) ** 2) - g) == 0
    assert vanishes(g * (1 - sp.tanh(x) ** 2) - g * sp.diff(sp.tanh(x), x)) == 0
    # a wrong rule is not proved: what is left is returned, not 0
    assert vanishes(g * s * (1 - s) * 1.001 - g * sp.diff(s, x)) != 0
    assert vanishes(g * s - g * sp.diff(s, x)) != 0
    assert sp.simplify(vanishes(g * sp.cos(x) ** 2 - g) + g * sp.sin(x) ** 2) == 0


def test_a_proved_identity_is_not_proved_again_but_the_tie_always_runs(monkeypatch):
    import proofkit.symbolic as symbolic
    x, p = sp.Symbol("x", real=True), sp.Symbol("p", positive=True)
    g = sp.Symbol("g")
    y = sp.Max(0, x)
    good = sp.Piecewise((g, x > 0), (0, True))
    args = ("Relu", {"X": [x]}, {"Y": [y]}, {"Y": [g]}, {"X": [good]})
    check_vjp_symbolic(*args, pieces=[{x: p}, {x: -p}], vjp=relu_vjp)
    calls = []
    monkeypatch.setattr(symbolic, "vanishes", lambda d: calls.append(d) or sp.simplify(d))
    check_vjp_symbolic(*args, pieces=[{x: p}, {x: -p}], vjp=relu_vjp)
    assert calls == []  # the same identity: not proved again
    with pytest.raises(AssertionError, match="vjp's gradient for X differs from the proved rule"):
        check_vjp_symbolic(*args, pieces=[{x: p}, {x: -p}],
                           vjp=lambda inputs, cotangents, **a: [1.001 * relu_vjp(inputs, cotangents)[0]])
    assert calls == []  # a wrong vjp is caught by the tie, which always runs
    with pytest.raises(AssertionError, match=r"the rule for X\[0\] differs from Jᵀḡ"):  # another rule: proved anew
        check_vjp_symbolic("Relu", {"X": [x]}, {"Y": [y]}, {"Y": [g]}, {"X": [good * 2]}, pieces=[{x: p}, {x: -p}],
                           vjp=relu_vjp)
    assert calls


def test_the_tie_evaluates_a_rule_by_its_compiled_mpmath_function_as_sympy_would():
    from proofkit.symbolic import _compiled_numeric, _numeric
    x, y = sp.symbols("x y", real=True)
    exprs = [sp.Max(x, y, 0), sp.Abs(x) * sp.erf(y), sp.Piecewise((x, (x > 0) & (y < 1)), (y ** 2, True)),
             1 / (1 + sp.exp(-x)), sp.atan2(y, x), sp.floor(3 * x), sp.Integer(2)]
    point = {x: sp.Float(-0.7), y: sp.Float(1.3)}
    fast = _compiled_numeric(tuple(exprs), point)
    slow = [complex(sp.N(e.xreplace(point), 30)) for e in exprs]
    assert fast is not None and np.allclose(fast, slow, rtol=1e-14, atol=0)
    # what the compiled path does not take goes the general way, with the same result
    assert _compiled_numeric((x > 0, x), point) is None  # a condition
    assert _compiled_numeric((x + y,), {x: sp.Float(1.0)}) is None  # y has no value
    assert _compiled_numeric((1 / x,), {x: sp.Integer(0)}) is None  # a pole: SymPy says what the value is
    assert _numeric(np.array([x > 0, y < 0], dtype=object), point).tolist() == [False, False]
    # symbols and plain numbers (an instance's inputs, its cotangents) are read off the point directly, with the value
    # the other paths give them; an exact fraction, a condition or an expression is not
    from proofkit.symbolic import _direct_numeric
    plain = np.array([x, y, 2.5, 3, sp.Integer(4), sp.Float("0.1")], dtype=object)
    assert _direct_numeric(plain, point).tolist() == [-0.7, 1.3, 2.5, 3.0, 4.0, 0.1]
    assert [v.real for v in _compiled_numeric((x, y, sp.Integer(4), sp.Float("0.1")), point)] == [-0.7, 1.3, 4.0, 0.1]
    for other in (sp.Rational(1, 3), x > 0, x + y, True, sp.Symbol("z")):
        assert _direct_numeric(np.array([x, other], dtype=object), point) is None
    assert _direct_numeric(np.array([x], dtype=object), {x: sp.oo}) is None
    with pytest.raises(AssertionError, match="leaves the real domain"):
        _numeric(np.array([sp.sqrt(x)], dtype=object), point)


def test_a_piece_is_applied_as_subs_would_apply_it():
    from proofkit.symbolic import on_piece
    x, y, g = sp.symbols("x y g", real=True)
    p, q = sp.symbols("p q", positive=True)
    e = g * sp.Piecewise((1, x > 0), (0, True)) + sp.Max(0, 1 - sp.Abs(y)) * g + sp.Heaviside(x - y)
    for piece in ({x: p, y: -q}, {x: -p, y: 1 + q}, {x: p / (1 + p), y: 2}, {}):
        assert on_piece(e, piece) == e.subs(piece)
        assert sp.simplify(on_piece(e, piece) - e.subs(piece)) == 0
    # where xreplace would differ from subs, subs is used: a value holding a key (subs applies keys in its order),
    # a key that is not a symbol, an expression that binds a key
    assert on_piece(x + y, {x: y, y: p}) == (x + y).subs({x: y, y: p})
    assert on_piece(sp.sin(x) + x ** 2, {x ** 2: p}) == sp.sin(x) + p
    bound = sp.Integral(x * y, (x, 0, 1)) + x
    assert on_piece(bound, {x: p}) == bound.subs({x: p}) == sp.Integral(x * y, (x, 0, 1)) + p


def test_an_output_entry_free_of_an_input_adds_nothing_to_its_jacobian_term():
    # Jᵀḡ is summed over the output entries that hold the input: C = A·B elementwise, C[1] is free of A[0]. The right
    # rule is proved; a rule with a term from the entry that does not hold the input, or missing the one that does,
    # is caught
    a0, a1, b0, b1, g0, g1 = sp.symbols("a0 a1 b0 b1 g0 g1", real=True)
    A, B, G = sp.Matrix([a0, a1]), sp.Matrix([b0, b1]), sp.Matrix([g0, g1])

    def vjp(inputs, cotangents, **attrs):
        return [cotangents[0] * inputs[1], cotangents[0] * inputs[0]]

    def check(rule_a):
        check_vjp_symbolic("Mul", {"A": A, "B": B}, {"C": A.multiply_elementwise(B)}, {"C": G},
                           {"A": rule_a, "B": G.multiply_elementwise(A)}, vjp=vjp)
    check(G.multiply_elementwise(B))
    with pytest.raises(AssertionError, match=r"the rule for A\[0\] differs from Jᵀḡ by b1\*g1"):
        check(sp.Matrix([g0 * b0 + g1 * b1, g1 * b1]))
    with pytest.raises(AssertionError, match=r"the rule for A\[1\] differs"):
        check(sp.Matrix([g0 * b0, 0]))


def test_autograd_of_the_inner_product_is_autograd_with_grad_outputs_bit_for_bit():
    from proofkit.checks import autograd_vjp
    gen = torch.Generator().manual_seed(0)
    for dtype in (torch.float64, torch.float32):
        x = torch.randn(3, 4, generator=gen, dtype=dtype, requires_grad=True)
        w = torch.randn(4, 2, generator=gen, dtype=dtype, requires_grad=True)
        unused = torch.randn(2, generator=gen, dtype=dtype, requires_grad=True)
        outs = [torch.tanh(x @ w), (x ** 3).sum(dim=1)]
        cots = [torch.randn(3, 2, generator=gen, dtype=torch.float64), torch.randn(3, generator=gen, dtype=dtype)]
        want = torch.autograd.grad(outs, [x, w, unused], cots, allow_unused=True, retain_graph=True)
        got = autograd_vjp(list(zip(outs, cots)), [x, w, unused])
        assert got[2] is None and want[2] is None
        assert all(torch.equal(a, b) and a.dtype == dtype for a, b in zip(got[:2], want[:2]))
    # a cotangent of another shape is refused as autograd refuses it, not broadcast
    x = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        autograd_vjp([(2 * x, torch.ones(3, dtype=torch.float64))], [x])


def test_lambdify_numpy_namespace_has_star_imports_names_without_importing_numpys_lazy_submodules():
    """proofkit.symbolic.seed_lambdify_numpy, run by `import proofkit`: in a fresh process, sp.lambdify's NumPy
    namespace binds every name `from numpy import *; from numpy.linalg import *` binds, to the same object, except
    NumPy's submodules not loaded yet; lambdify then imports none of them; it is built once and not rebuilt."""
    import subprocess
    import sys

    code = r"""
import sys, importlib
import numpy as np, sympy as sp, proofkit
from proofkit.symbolic import seed_lambdify_numpy
L = importlib.import_module("sympy.utilities.lambdify")
x = sp.Symbol("x")
f = sp.lambdify([x], sp.Heaviside(x) + sp.Max(x, 0) * sp.sin(x) + sp.Matrix([[x, 1], [2, x]]).det())
assert f(np.array([0.5])).tolist() == [1.0 + 0.5 * np.sin(0.5) + 0.25 - 2.0], f(np.array([0.5]))
lazy = [m for m in ("numpy.f2py", "numpy.testing", "numpy.polynomial", "numpy.ctypeslib") if m in sys.modules]
assert not lazy, lazy
ref = {}
exec("import numpy; from numpy import *; from numpy.linalg import *", {}, ref)
ns = L.MODULES["numpy"][0]
missing = sorted(set(ref) - set(ns))
assert missing and all(getattr(ref[n], "__name__", "").startswith("numpy.") for n in missing), missing
assert not set(ns) - set(ref) - {"I", "Heaviside"}, set(ns) - set(ref)
assert all(ns[n] is ref[n] for n in set(ns) & set(ref)), [n for n in set(ns) & set(ref) if ns[n] is not ref[n]]
assert ns["Heaviside"] is np.heaviside and ns["I"] == 1j
assert seed_lambdify_numpy() is False  # built: left alone
print("ok")
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


def test_lambdify_numpy_namespace_is_left_to_sympy_when_built_another_way(monkeypatch):
    import importlib

    from proofkit.symbolic import seed_lambdify_numpy

    L = importlib.import_module("sympy.utilities.lambdify")
    namespace, default, translations, commands = L.MODULES["numpy"]
    fresh = dict(default)
    monkeypatch.setitem(L.MODULES, "numpy", (fresh, default, translations, ("import numpy",)))
    assert seed_lambdify_numpy() is False and fresh == default  # another SymPy's import commands: not built here
    monkeypatch.setitem(L.MODULES, "numpy", (fresh, default, translations, commands))
    assert seed_lambdify_numpy() is True and fresh["sin"] is np.sin and fresh["Heaviside"] is np.heaviside


def test_every_onnx_runtime_session_of_the_kit_runs_on_one_thread(monkeypatch):
    """proofkit.ortgrad.session_options: one intra-op and one inter-op thread, at the severity asked; and the kit's
    sessions (a forward run, a gradient graph) are built with it."""
    import onnxruntime as ort

    from proofkit import ort_forward, ort_gradient
    from proofkit.ortgrad import session_options

    o = session_options(4)
    assert (o.intra_op_num_threads, o.inter_op_num_threads, o.log_severity_level) == (1, 1, 4)
    assert session_options().log_severity_level == 3
    seen = []
    real = ort.InferenceSession

    def spy(model, options=None, **kw):
        seen.append(options.intra_op_num_threads)
        return real(model, options, **kw)

    monkeypatch.setattr(ort, "InferenceSession", spy)
    x = np.array([[-1.0, 2.0]], dtype=np.float32)
    assert np.array_equal(ort_forward("Relu", [x])[0], np.maximum(x, 0))
    grads = ort_gradient("Relu", [x], [np.ones_like(x)])
    assert np.array_equal(np.asarray(grads[0]), np.array([[0.0, 1.0]], dtype=np.float32))
    assert len(seen) >= 2 and set(seen) == {1}
