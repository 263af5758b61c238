"""Departures of the schema's function body from the spec: check_function_body_departure."""

import numpy as np
import pytest
from onnx import TensorProto

from proofkit import recorded
from proofkit.evidence import _reset
from proofkit.findings import FINDING_MIME, BodyFinding, Finding, _body_model, check_function_body_departure


@pytest.fixture(autouse=True)
def clean_evidence():
    _reset()
    yield
    _reset()


P = np.full(10_000, 0.01)


def fraction_of_ones(outputs):
    return np.mean(outputs[0])


def probability(inputs, **attrs):
    return np.mean(inputs[0])  # the spec: output 1 with probability p


def bernoulli(inputs, attrs=None, **kw):
    return check_function_body_departure("Bernoulli", inputs, {"seed": 0.0} if attrs is None else attrs,
                                         spec=kw.pop("spec", probability), statistic=fraction_of_ones,
                                         what="the fraction of ones in output", min_difference=0.5, title="t",
                                         explanation="e", **kw)


def test_bernoullis_body_draws_one_with_probability_one_minus_p():
    f = bernoulli([P])
    assert isinstance(f, BodyFinding) and isinstance(f, Finding)
    # seed 0: NumPy's uniforms, 9885 of 10^4 above 0.01 (an exact count: the same on every CPU)
    assert (f.output, f.index, f.reference, f.spec, f.difference) == (
        "the fraction of ones in output", (), 0.9885, 0.01, 0.9785)
    assert any(r.kind == "reference-departure" for r in recorded("Bernoulli"))
    bundle = f._repr_mimebundle_()
    assert bundle[FINDING_MIME] == f.as_json() | {"index": []}
    assert repr(f).startswith("Departure of the schema's function body from the spec (Bernoulli): t;")
    assert "function body" in bundle["text/html"]
    # the component is stored, so the audit files it under function bodies, not under onnx.reference
    assert f.as_json()["component"] == "the schema's function body"
    assert "the schema's function body gives the fraction of ones in output = 0.9885" in repr(f)


def test_the_nodes_attributes_reach_the_body():
    model, names = _body_model("Bernoulli", [P], {"seed": 2.0, "dtype": TensorProto.INT64})
    assert names == ["input"] and [n.op_type for n in model.graph.node] == ["RandomUniformLike", "Greater", "Cast"]
    uniform, cast = model.graph.node[0], model.graph.node[2]
    assert {a.name: a.f for a in uniform.attribute}["seed"] == 2.0
    assert {a.name: a.i for a in cast.attribute}["to"] == TensorProto.INT64
    unseeded, _ = _body_model("Bernoulli", [P], {})  # an attribute referred to but not given is left out
    assert "seed" not in {a.name for a in unseeded.graph.node[0].attribute}
    f = bernoulli([P], {"seed": 0.0, "dtype": TensorProto.INT64})
    assert f.reference == 0.9885  # the same draw, cast to int64


def test_a_body_that_agrees_with_the_spec_fails():
    with pytest.raises(AssertionError, match="is gone"):
        check_function_body_departure("Relu", [np.array([-1.0, 0.0, 2.5])], spec=lambda i, **a: np.maximum(i[0], 0),
                                      min_difference=1e-12, title="t", explanation="e")
    with pytest.raises(AssertionError, match="largest difference is 0"):  # the spec of the body's own statistic
        bernoulli([P], spec=lambda i, **a: 0.9885)
    assert not recorded("Relu") and not recorded("Bernoulli")


def test_a_difference_below_min_difference_is_no_departure():
    with pytest.raises(AssertionError, match="is gone"):
        bernoulli([P], spec=lambda i, **a: 0.9)  # 0.0885 from the body's 0.9885, under 0.5


def test_entries_are_compared_without_a_statistic_and_nan_counts():
    # AffineGrid's body divides by H - 1 = 0 with align_corners=1 and gives NaN where a finite grid is expected
    theta = np.tile(np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), (2, 1, 1))
    size = np.array([2, 1, 1, 3], np.int64)
    spec = np.zeros((2, 1, 3, 2))
    f = check_function_body_departure("AffineGrid", [theta, size], {"align_corners": 1},
                                      spec=lambda i, **a: spec, min_difference=1.0, title="t", explanation="e")
    assert f.output == "grid" and f.difference == "inf" and f.reference == "nan"
    assert len(f.index) == 4


def test_another_shape_is_a_departure():
    f = check_function_body_departure("Relu", [np.array([-1.0, 2.0])], spec=lambda i, **a: np.zeros(3),
                                      min_difference=1.0, title="t", explanation="e")
    assert f.index is None and f.difference == "shapes differ"


def test_refusals():
    with pytest.raises(ValueError, match="no function body"):
        check_function_body_departure("Conv", [np.ones((1, 1, 3)), np.ones((1, 1, 2))], spec=lambda i, **a: 0.0,
                                      min_difference=1.0, title="t", explanation="e")
    with pytest.raises(ValueError, match="omitted"):
        check_function_body_departure("Relu", [None], spec=lambda i, **a: 0.0, min_difference=1.0, title="t",
                                      explanation="e")
    with pytest.raises(ValueError, match="positive"):
        check_function_body_departure("Relu", [np.ones(2)], spec=lambda i, **a: np.ones(2), min_difference=0.0,
                                      title="t", explanation="e")
    with pytest.raises(ValueError, match="spec returned 2 outputs, the function body 1"):
        check_function_body_departure("Relu", [np.ones(2)], spec=lambda i, **a: [np.ones(2), np.ones(2)],
                                      min_difference=1.0, title="t", explanation="e")
