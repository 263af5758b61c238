"""Departures of onnx.reference from the spec: asserted at a witness, recorded, stored and read back."""

import json
import math

import nbformat
import numpy as np
import pytest
import sympy as sp
from onnx import TensorProto

from proofkit import (Claim, check_reference_departure, check_vjp_fd, check_vjp_onnxad, check_vjp_ort,
                      check_vjp_symbolic, recorded, samplers)
from proofkit.evidence import _reset
from proofkit.audit import by_mime, collect_outputs, stored_outputs
from proofkit.findings import FINDING_MIME, Finding

erf = np.vectorize(math.erf, otypes=[np.float64])
X = np.array([0.5, -1.0, 2.0])
KEYS = {"op", "title", "explanation", "inputs", "reference", "spec", "difference"}


@pytest.fixture(autouse=True)
def clean_evidence():
    _reset()
    yield
    _reset()


def erf_spec(inputs, **attrs):
    return [erf(inputs[0])]


def erf_finding(**kw):
    args = dict(spec=erf_spec, title="Erf is evaluated in float32", explanation="It rounds math.erf to float32.",
                min_difference=1e-9)
    args.update(kw)
    return check_reference_departure("Erf", [X], **args)


def test_a_departure_is_found_at_the_largest_difference_and_recorded():
    f = erf_finding()
    assert isinstance(f, Finding)
    ref = erf(X).astype(np.float32).astype(np.float64)
    k = int(np.argmax(np.abs(ref - erf(X))))
    assert f.index == (k,) and f.output == "output"
    assert f.reference == pytest.approx(ref[k], rel=1e-10) and f.spec == pytest.approx(erf(X)[k], rel=1e-10)
    assert f.reference != f.spec  # rounded to enough digits to show the difference
    assert f.difference == pytest.approx(abs(ref[k] - erf(X)[k]), rel=1e-9)
    recs = [r for r in recorded("Erf") if r.kind == "reference-departure"]
    assert len(recs) == 1 and recs[0].name == "" and recs[0].fn is None and recs[0].data == f.as_json()


def test_a_spec_equal_to_the_reference_fails():
    def like_the_reference(inputs, **attrs):
        return [erf(inputs[0]).astype(np.float32).astype(np.float64)]

    with pytest.raises(AssertionError, match="gone"):
        erf_finding(spec=like_the_reference)
    assert not recorded("Erf")


def test_a_difference_below_the_threshold_fails():
    with pytest.raises(AssertionError, match="within"):
        erf_finding(min_difference=1e-3)


def test_a_non_positive_threshold_is_rejected():
    with pytest.raises(ValueError):
        erf_finding(min_difference=0)


def test_nan_against_a_number_is_a_departure():
    f = check_reference_departure("Sqrt", [np.array([-1.0, 4.0])], spec=lambda i, **a: [np.array([0.0, 2.0])],
                                  title="t", explanation="e", min_difference=1.0)
    assert f.reference == "nan" and f.difference == "inf" and f.index == (0,)
    json.dumps(f.as_json(), allow_nan=False)  # strict JSON: no NaN or infinity numbers


def test_nan_against_nan_is_no_departure():
    with pytest.raises(AssertionError):
        check_reference_departure("Sqrt", [np.array([-1.0, 4.0])], spec=lambda i, **a: [np.array([np.nan, 2.0])],
                                  title="t", explanation="e", min_difference=1e-12)


def test_a_reference_that_raises():
    spec = lambda inputs, **a: [np.mean(np.broadcast_arrays(*inputs), axis=0)]  # noqa: E731
    bad = [np.array([1.0, 2.0, 3.0]), np.arange(6.0).reshape(2, 3)]
    f = check_reference_departure("Mean", bad, spec=spec, title="in place", explanation="e", min_difference=1e-12,
                                  raises=ValueError)
    assert f.reference.startswith("raises ValueError") and f.difference is None
    assert f.spec == "float64[2, 3] = [0.5, 1.5, 2.5, 2.0, 3.0, 4.0]" and f.index is None
    assert "data_0 #0: float64[3] = [1.0, 2.0, 3.0]; data_0 #1: float64[2, 3]" in f.inputs
    with pytest.raises(AssertionError, match="no longer raises"):  # in the other order the reference broadcasts
        check_reference_departure("Mean", bad[::-1], spec=spec, title="in place", explanation="e",
                                  min_difference=1e-12, raises=ValueError)


def test_outputs_of_another_shape_are_a_departure():
    x = np.arange(4.0)
    f = check_reference_departure("Slice", [x, np.array([-10]), np.array([-100]), np.array([0]), np.array([-1])],
                                  spec=lambda inputs, **a: [inputs[0][:1]], title="t", explanation="e",
                                  min_difference=1.0)
    assert (f.reference, f.spec, f.difference) == ("returns float64[0] = []", "float64[1] = [0.0]", "shapes differ")
    assert "where the spec gives output: float64[1] = [0.0]" in repr(f)


def test_the_attributes_reach_the_spec_with_defaults_and_the_text():
    seen = {}

    def spec(inputs, **attrs):
        seen.update(attrs)
        return [np.array([1.0078125])]  # 1 + 2^-8 + 2^-40 rounded to nearest bfloat16

    f = check_reference_departure("Cast", [np.array([1 + 2.0**-8 + 2.0**-40])], {"to": TensorProto.BFLOAT16},
                                  spec=spec, title="t", explanation="e", min_difference=1e-3)
    assert seen["to"] == TensorProto.BFLOAT16 and seen["saturate"] == 1
    assert f.inputs == "input: float64[1] = [1.0039062500009095]; to=16"
    assert (f.reference, f.spec, f.difference) == (1.0, 1.0078125, 0.0078125)


def test_the_display_is_deterministic_and_plain():
    a, b = erf_finding(), erf_finding()
    assert repr(a) == repr(b) and a._repr_html_() == b._repr_html_()
    text = repr(a)
    assert "0x" not in text and "\n" not in text and text.endswith(".")
    assert text.startswith("Departure of onnx.reference from the spec (Erf): Erf is evaluated in float32")
    assert '<div class="proofkit-finding"' in a._repr_html_() and "&lt;" not in a._repr_html_()
    bundle = a._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html", FINDING_MIME}
    assert KEYS <= set(bundle[FINDING_MIME]) and bundle[FINDING_MIME]["op"] == "Erf"
    assert bundle[FINDING_MIME]["inputs"] == "input: float64[3] = [0.5, -1.0, 2.0]"


def test_the_payload_round_trips_through_a_stored_notebook(tmp_path):
    first = erf_finding()
    second = check_reference_departure("Cast", [np.array([1 + 2.0**-30])], {"to": TensorProto.FLOAT8E8M0},
                                       spec=lambda i, **a: [np.array([2.0])], title="E8M0", explanation="e",
                                       min_difference=0.5)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Erf")]
    for k, f in enumerate([first, second]):
        out = nbformat.v4.new_output("display_data", data=f._repr_mimebundle_())
        nb.cells.append(nbformat.v4.new_code_cell(f"f{k}", outputs=[out], execution_count=k + 1))
    nb.cells.append(nbformat.v4.new_code_cell("print(1)", outputs=[nbformat.v4.new_output("stream", text="1\n")]))
    nbformat.validate(nb)
    path = tmp_path / "Erf.ipynb"
    nbformat.write(nb, path)
    assert stored_outputs(path)[FINDING_MIME] == [first.as_json(), second.as_json()]
    assert stored_outputs(path)[FINDING_MIME][1]["reference"] == 1.0


def test_every_chapter_with_findings_is_listed(tmp_path):
    f = erf_finding()
    (tmp_path / "proofs").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("f", outputs=[nbformat.v4.new_output("display_data",
                                                                            data=f._repr_mimebundle_())])]
    nbformat.write(nb, tmp_path / "proofs" / "Erf.ipynb")
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "proofs" / "Abs.ipynb")
    assert by_mime(collect_outputs(tmp_path), FINDING_MIME) == {"Erf": [f.as_json()]}


def test_an_error_message_shows_no_address(monkeypatch):
    class Refusal(Exception):
        pass

    def refuse(inputs, **attrs):
        raise Refusal(f"cannot run {object()!r}")

    monkeypatch.setattr("proofkit.findings.run_onnx", lambda *a, **k: refuse(None))
    f = check_reference_departure("Relu", [np.array([1.0])], spec=lambda i, **a: [i[0]], title="t",
                                  explanation="e", min_difference=1.0, raises=Refusal)
    assert f.reference == "raises Refusal: cannot run <object object>" and "0x" not in repr(f)


def test_a_notebook_without_findings_has_none(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("1", outputs=[nbformat.v4.new_output(
        "execute_result", data={"text/plain": "1"}, execution_count=1)], execution_count=1)]
    path = tmp_path / "Abs.ipynb"
    nbformat.write(nb, path)
    assert stored_outputs(path).get(FINDING_MIME, []) == []


def test_the_verdict_ignores_a_departure():
    x, g = sp.Symbol("x", real=True), sp.Symbol("g", real=True)

    def vjp(inputs, cotangents, **attrs):
        (X_,), (g_,) = inputs, cotangents
        if not np.issubdtype(np.asarray(X_).dtype, np.floating):
            return [None]
        return [g_ * 2 / np.sqrt(np.pi) * np.exp(-X_**2)]

    X_ = samplers.normal((3,), seed=1)
    erf_finding()
    check_vjp_fd("Erf", vjp, [X_], eps=3e-3, rtol=5e-4)
    check_vjp_symbolic("Erf", {"input": [x]}, {"output": [sp.erf(x)]}, {"output": [g]},
                       {"input": [g * 2 / sp.sqrt(sp.pi) * sp.exp(-x**2)]}, vjp=vjp)
    check_vjp_ort("Erf", vjp, [X_])
    check_vjp_onnxad("Erf", vjp, [X_], rtol=1e-7)  # onnx.reference's Erf computes in float32 (proofs/Gelu)
    claim = Claim("Erf", {"input": ("differentiable", "smooth"), "output": ("differentiable", "of input")})
    claim.verdict(vjp)  # a departure recorded before and after the checks does not bind or break the verdict
    erf_finding()
    claim.verdict(vjp)


def test_a_sequence_output_is_compared_as_a_sequence_element_then_entry():
    def insert_spec(inputs, **attrs):  # SequenceInsert as the spec says: position n appends
        seq, t = list(inputs[0]), inputs[1]
        p = len(seq) if len(inputs) < 3 else int(inputs[2])
        p = p + len(seq) if p < 0 else p
        return [seq[:p] + [t] + seq[p:]]

    s, t = [np.array([1.0]), np.array([2.0])], np.array([9.0])
    f = check_reference_departure("SequenceInsert", [s, t, np.array(2)], spec=insert_spec, min_difference=1.0,
                                  title="front", explanation="e")
    assert (f.output, f.element, f.index, f.reference, f.spec) == ("output_sequence", 0, (0,), 9.0, 1.0)
    assert "output_sequence element 0, entry [0] = 9.0" in repr(f) and f.as_json()["element"] == 0
    raised = check_reference_departure("SequenceInsert", [[], t, np.array(0)], spec=insert_spec, min_difference=1.0,
                                       raises=ZeroDivisionError, title="empty", explanation="e")
    assert raised.spec == "seq(float64[1] = [9.0])" and "element" not in raised.as_json()
    # elements of different shapes: the structure differs, both sequences shown whole
    ragged = check_reference_departure("SequenceInsert", [[np.array([1.0, 5.0]), np.array([2.0])],
                                                          np.array([9.0, 8.0, 7.0]), np.array(2)],
                                       spec=insert_spec, min_difference=1.0, title="ragged", explanation="e")
    assert ragged.index is None and ragged.difference == "shapes differ" and ragged.reference.startswith("returns seq(")
    # negative: where onnx.reference agrees with the spec (position -1), the departure is gone and the call fails
    with pytest.raises(AssertionError, match="is gone"):
        check_reference_departure("SequenceInsert", [s, t, np.array(-1)], spec=insert_spec, min_difference=1.0,
                                  title="none", explanation="e")
