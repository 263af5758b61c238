"""The verdict is bound to the checks and to ONNX's tags."""

import json

import numpy as np
import pytest
import torch

from proofkit import Claim, VerdictError, check_vjp_fd, check_vjp_torch, check_zero_almost_everywhere, reset_ledger
from proofkit import samplers
from proofkit.verdict import VERDICT_MIME

X = samplers.uniform((3, 4), seed=3, avoid=[0.0], margin=1e-3)
RELU = {"X": ("differentiable almost everywhere", "kink at 0"), "Y": ("differentiable almost everywhere", "of X")}


@pytest.fixture(autouse=True)
def clean_ledger():
    reset_ledger()
    yield
    reset_ledger()


def relu_vjp(inputs, cotangents, **attrs):
    return [cotangents[0] * (inputs[0] > 0)]


def test_a_verdict_bound_to_passed_checks_renders_with_the_audit_payload():
    check_vjp_fd("Relu", relu_vjp, [X])
    check_vjp_torch("Relu", relu_vjp, torch.relu, [X])
    bundle = Claim("Relu", RELU).verdict()._repr_mimebundle_()
    payload = bundle[VERDICT_MIME]
    assert payload["op"] == "Relu" and [r["agreement"] for r in payload["rows"]] == ["agrees", "agrees"]
    assert 'id="verdict-relu-x"' in bundle["text/html"] and "kink at 0" in bundle["text/plain"]
    json.dumps(payload)


def test_differentiable_without_any_check_is_rejected():
    with pytest.raises(VerdictError, match="X is called differentiable almost everywhere, but it has not passed"):
        Claim("Relu", RELU).verdict()


def test_differentiable_with_only_the_finite_difference_check_is_rejected():
    check_vjp_fd("Relu", relu_vjp, [X])
    with pytest.raises(VerdictError, match="finite-difference check and one of the PyTorch or symbolic"):
        Claim("Relu", RELU).verdict()


def test_calling_an_input_differentiable_whose_vjp_returns_none_is_rejected():
    def reshape_vjp(inputs, cotangents, **attrs):
        return [None, None]

    check_vjp_fd("Reshape", reshape_vjp, [np.ones((2, 3)), np.array([3, 2])])
    claim = Claim("Reshape", {"data": ("differentiable", "copy"), "shape": ("non-differentiable", "int64"),
                              "reshaped": ("differentiable", "copy of data")})
    with pytest.raises(VerdictError, match="data is called differentiable, but vjp returns None for it"):
        claim.verdict()


def test_calling_an_input_non_differentiable_while_vjp_gives_it_a_gradient_is_rejected():
    check_vjp_fd("Relu", relu_vjp, [X])
    check_vjp_torch("Relu", relu_vjp, torch.relu, [X])
    claim = Claim("Relu", {"X": ("non-differentiable", "x"), "Y": ("non-differentiable", "y")},
                  disagreements={"X": "an argument", "Y": "an argument"})
    with pytest.raises(VerdictError, match="X is called non-differentiable, but vjp returned a gradient"):
        claim.verdict()


def test_an_undeclared_disagreement_with_the_onnx_tag_is_rejected():
    with pytest.raises(VerdictError, match="min is called differentiable almost everywhere but ONNX tags it "
                                           "NonDifferentiable; declare the disagreement"):
        Claim("Clip", {"input": ("differentiable almost everywhere", "r"), "min": ("differentiable almost everywhere", "r"),
                       "max": ("non-differentiable", "r"), "output": ("differentiable almost everywhere", "r")})


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


def test_zero_almost_everywhere_needs_its_check_and_a_none_from_vjp():
    pts = samplers.uniform((5,), seed=4, avoid=[lambda x: x - np.round(x)], margin=1e-3)
    claim = Claim("Floor", {"X": ("zero almost everywhere", "steps"), "Y": ("zero almost everywhere", "steps")})
    check_vjp_fd("Floor", lambda i, c: [None], [pts])
    with pytest.raises(VerdictError, match="X is called zero almost everywhere without the zero-derivative check"):
        claim.verdict()
    check_zero_almost_everywhere("Floor", [pts])
    claim.verdict()


def test_a_non_differentiable_float_output_beside_a_differentiable_input_is_rejected():
    check_vjp_fd("Relu", relu_vjp, [X])
    check_vjp_torch("Relu", relu_vjp, torch.relu, [X])
    claim = Claim("Relu", {"X": RELU["X"], "Y": ("non-differentiable", "r")}, disagreements={"Y": "an argument"})
    with pytest.raises(VerdictError, match="output Y is called non-differentiable although X is differentiable"):
        claim.verdict()


def test_none_for_an_integer_typed_input_does_not_contradict_a_differentiable_verdict():
    # Pow's exponent may be an integer tensor: vjp gives it None then, which says nothing about a float exponent
    def pow_vjp(inputs, cotangents, **attrs):
        x, y = inputs
        g = cotangents[0]
        gx = g * y * x ** (y - 1.0)
        return [gx, None if not np.issubdtype(y.dtype, np.floating) else g * x ** y * np.log(x)]

    x = samplers.uniform((4,), 0.5, 2.0, seed=1)
    check_vjp_fd("Pow", pow_vjp, [x, np.array([2, 3, 1, 0])])
    check_vjp_fd("Pow", pow_vjp, [x, samplers.uniform((4,), -1.0, 2.0, seed=2)])
    check_vjp_torch("Pow", pow_vjp, torch.pow, [x, samplers.uniform((4,), -1.0, 2.0, seed=2)])
    Claim("Pow", {"X": ("differentiable almost everywhere", "r"), "Y": ("differentiable almost everywhere", "r"),
                  "Z": ("differentiable almost everywhere", "r")}).verdict()


def test_only_the_bound_verdict_carries_row_anchors():
    check_vjp_fd("Relu", relu_vjp, [X])
    check_vjp_torch("Relu", relu_vjp, torch.relu, [X])
    claim = Claim("Relu", RELU)
    assert "id=" not in claim._repr_mimebundle_()["text/html"]
    assert claim.verdict()._repr_mimebundle_()["text/html"].count('id="verdict-relu-') == 2
