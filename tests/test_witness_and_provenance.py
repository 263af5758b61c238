"""Witnesses assert what they claim, and a rule derived from the model is caught in a chapter's source."""

import numpy as np
import pytest

from proofkit import samplers, witness_jump, witness_kink, witness_selects, witness_unbounded
from proofkit.evidence import facts
from proofkit.evidence import _reset
from proofkit.provenance import rule_dependencies


@pytest.fixture(autouse=True)
def clean_evidence():
    _reset()
    yield
    _reset()


def test_witnesses_hold_where_the_math_says_and_fail_elsewhere():
    assert "left 0, right 1" in repr(witness_kink("Relu", [np.array([0.0])]))
    with pytest.raises(AssertionError, match="the one-sided derivatives agree"):
        witness_kink("Relu", [np.array([0.5])])
    with pytest.raises(AssertionError, match="no jump"):
        witness_jump("Relu", [np.array([0.0])])
    witness_jump("Floor", [np.array([2.0])])
    witness_unbounded("Sqrt", [np.array([0.0])])
    with pytest.raises(AssertionError, match="no unbounded derivative"):
        witness_unbounded("Sqrt", [np.array([1.0])])


def test_a_selection_witness_holds_only_where_values_are_never_read():
    x = samplers.normal((3, 4), seed=0)
    text = repr(witness_selects("EyeLike", [x], attrs={"k": 1}))
    assert "only the input's shape and type are read" in text and "selects" in facts("EyeLike", "input", None)
    witness_selects("Shape", [x])
    with pytest.raises(AssertionError, match="is not only a selection: with its entries replaced by zeros, output Y"):
        witness_selects("Relu", [np.abs(x) + 1.0])
    with pytest.raises(AssertionError, match="replaced by a normal draw z"):
        witness_selects("Floor", [np.zeros(4)])  # zeros leave Floor unchanged; the draw does not
    with pytest.raises(AssertionError, match="not one"):
        witness_selects("EyeLike", [np.ones((2, 2), dtype=np.int64)])


def test_a_tie_of_max_is_a_kink_in_either_argument():
    assert "left 0, right 1" in repr(witness_kink("Max", [np.array([1.0]), np.array([1.0])], input=0))


def test_near_samples_both_sides_within_the_band():
    v = samplers.near([0.0, 1.0], (8,), seed=0)
    d = np.abs(v - np.array([0.0, 1.0] * 4))
    assert np.all((d >= 1e-3) & (d < 1e-2))
    assert (v[[0, 4]] > 0).all() and (v[[2, 6]] < 0).all()


DERIVED = ['f = sp.erf(x)', 'df = sp.diff(f, x)', 'rule = g * df',
           'check_vjp_symbolic("Erf", {"input": [x]}, {"output": [f]}, {"output": [g]}, rule={"input": [rule]})']
BY_HAND = ['f = sp.erf(x)', 'df = sp.diff(f, x)  # shown, not used by the rule',
           'rule = g * 2 / sp.sqrt(sp.pi) * sp.exp(-x**2)',
           'check_vjp_symbolic("Erf", {"input": [x]}, {"output": [f]}, {"output": [g]}, rule={"input": [rule]})']


def test_a_rule_derived_by_differentiating_is_detected_through_assignments():
    assert rule_dependencies(DERIVED)[1] == {"df"}
    assert rule_dependencies(BY_HAND)[1] == set()
    via_function = ["def entry(v):\n    return g * v.diff(x)", "rule = [entry(f)]",
                    'check_vjp_symbolic("Erf", {}, {}, {}, rule={"input": rule})']
    assert rule_dependencies(via_function)[1] == {"entry"}


def test_a_lambda_or_comprehension_variable_is_not_confused_with_a_loop_variable_elsewhere():
    cells = ["J = Y.jacobian(X)", "for r in range(J.rows):\n    print(J[r, :])",
             "rule = sp.Matrix(2, 2, lambda r, c: g[r, c] * sp.Heaviside(x[r, c], 0))",
             "ones = [J[k, k] for k in range(2)]",
             'check_vjp_symbolic("Relu", {}, {}, {}, rule={"X": rule})']
    assert rule_dependencies(cells)[1] == set()


def test_a_witness_through_the_chapters_forward_needs_a_recorded_departure_and_says_so():
    from proofkit import evidence
    x = np.array([0.0, 2.0])
    absolute = lambda inputs, **attrs: [np.abs(inputs[0])]  # noqa: E731 - stands in for a forward onnx.reference lacks
    with pytest.raises(AssertionError, match="recorded a departure"):
        witness_kink("Relu", [x], forward=absolute)
    evidence.record("Relu", "", "reference-departure", None, "t", {})
    w = witness_kink("Relu", [x], forward=absolute)
    assert "left -1, right 1" in w.summary and "through the chapter's forward" in w.summary
    with pytest.raises(AssertionError, match="no kink"):  # the forward is really run: a smooth one has no kink
        witness_kink("Relu", [x], forward=lambda inputs, **attrs: [inputs[0] ** 2])


def test_a_kink_in_a_float_format_input_is_witnessed_along_its_grid_with_reals():
    import ml_dtypes
    point = [np.array([6.0]), np.array(1.0), np.array(1.5, ml_dtypes.float6_e2m3fn)]  # x/s + z = 7.5, float6's top
    w = witness_kink("QuantizeLinear", point, input=2, steps=(1.0, 0.5), reals=True)
    assert "y_zero_point = 1.5 (float6_e2m3fn)" in w.summary and "left 1, right 0" in w.summary
    with pytest.raises(AssertionError, match="a witness perturbs a float input"):  # without reals: not a float
        witness_kink("QuantizeLinear", point, input=2, steps=(1.0, 0.5))
    with pytest.raises(AssertionError, match="leaves the grid of float6_e2m3fn"):  # 1.5 + 0.3 is not a float6 value
        witness_kink("QuantizeLinear", point, input=2, steps=(0.3, 0.25), reals=True)
    with pytest.raises(AssertionError, match="no kink"):  # inside the range the function is linear in z
        witness_kink("QuantizeLinear", [np.array([1.0]), np.array(1.0), point[2]], input=2, steps=(1.0, 0.5),
                     reals=True)


def test_the_rule_of_the_outer_values_is_traced_like_an_inputs_rule():
    by_hand = ['f = sp.tanh(a * b)', 'def rule_if(a, b, g):\n    return {"a": g * (1 - sp.tanh(a * b) ** 2) * b}',
               'check_vjp_symbolic_outer("If", {"a": a}, {"outputs": f}, {"outputs": g}, rule_if(a, b, g), vjp=vjp, '
               'call=[c])']
    deps, derived = rule_dependencies(by_hand)
    assert "rule_if" in deps and derived == set()
    derived_rule = ['f = sp.tanh(a * b)', 'df = f.diff(a)',
                    'check_vjp_symbolic_outer("If", {"a": a}, {"outputs": f}, {"outputs": g}, rule={"a": g * df}, '
                    'vjp=vjp, call=[c])']
    assert rule_dependencies(derived_rule)[1] == {"df"}
    assert rule_dependencies(["check_vjp_other(1, 2, 3, 4, g * df)", "df = f.diff(a)"]) == (set(), set())
