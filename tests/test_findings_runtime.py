"""Departures of ONNX Runtime's forward from the spec (check_runtime_departure) and where the audit files them."""

import numpy as np
import pytest

from proofkit import recorded
from proofkit.audit import render_disagreements, render_engines
from proofkit.evidence import _reset
from proofkit.findings import FINDING_MIME, REFERENCE, RUNTIME, check_runtime_departure


@pytest.fixture(autouse=True)
def clean_evidence():
    _reset()
    yield
    _reset()


def hamming(inputs, periodic=1, output_datatype=1, **_):
    n = int(inputs[0])
    k = np.arange(n)
    return [25 / 46 - 21 / 46 * np.cos(2 * np.pi * k / (n if periodic else n - 1))]


def test_a_wrong_value_is_a_departure_of_onnx_runtime():
    # ONNX Runtime keeps the window coefficients in float32: its double window is off by about 2e-8
    f = check_runtime_departure("HammingWindow", [np.array(8, np.int64)], {"output_datatype": 11}, spec=hamming,
                                title="t", explanation="e", min_difference=1e-9)
    assert f.component.startswith(RUNTIME + " ") and f.as_json()["component"] == f.component
    assert f.output == "output" and isinstance(f.difference, float) and 1e-9 <= f.difference < 1e-6
    assert repr(f).startswith("Departure of ONNX Runtime ")
    assert any(r.kind == "reference-departure" for r in recorded("HammingWindow"))
    assert FINDING_MIME in f._repr_mimebundle_()


def test_an_equal_output_fails_the_call():
    relu = lambda inputs, **_: [np.maximum(inputs[0], 0)]  # noqa: E731
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    with pytest.raises(AssertionError, match="is gone"):
        check_runtime_departure("Relu", [x], spec=relu, title="t", explanation="e")  # exact
    with pytest.raises(AssertionError, match="is gone"):
        check_runtime_departure("Relu", [x], spec=relu, title="t", explanation="e", min_difference=1e-6)
    with pytest.raises(AssertionError, match="no longer fails"):
        check_runtime_departure("Relu", [x], spec=relu, title="t", explanation="e", raises=True)


def test_a_refused_node_is_a_departure_when_asked_for():
    # a region negative along one axis only: ONNX Runtime 1.19.2 fails the node with an integer overflow
    x, rois, idx = np.ones((1, 1, 2, 2), np.float32), np.array([[0, 0, 1, -1]], np.float32), np.zeros(1, np.int64)
    zero = lambda inputs, **_: [np.zeros((1, 1, 1, 1))]  # noqa: E731
    f = check_runtime_departure("RoiAlign", [x, rois, idx], {"output_height": 1, "output_width": 1}, spec=zero,
                                title="t", explanation="e", raises=True)
    assert f.reference == "fails: Integer overflow" and f.index is None
    from proofkit.ortgrad import OrtRunError
    with pytest.raises(OrtRunError):  # not asked for: ONNX Runtime's failure propagates
        check_runtime_departure("RoiAlign", [x, rois, idx], {"output_height": 1, "output_width": 1}, spec=zero,
                                title="t", explanation="e")


def test_a_terminated_process_is_a_departure_run_in_a_child():
    mean = lambda inputs, **a: [np.full(a["shape"], a["mean"])]  # noqa: E731
    f = check_runtime_departure("RandomNormal", [], {"shape": [2], "scale": 0.0, "mean": 3.0, "seed": 1.0},
                                spec=mean, title="t", explanation="e", aborts=True)
    assert f.reference == "terminates the process (SIGABRT: Assertion '_M_stddev > _RealType(0)' failed)"
    with pytest.raises(AssertionError, match="no longer terminates"):
        check_runtime_departure("RandomNormal", [], {"shape": [2], "scale": 1.0, "seed": 1.0}, spec=mean,
                                title="t", explanation="e", aborts=True)
    with pytest.raises(ValueError):
        check_runtime_departure("RandomNormal", [], {"shape": [2]}, spec=mean, title="t", explanation="e",
                                aborts=True, raises=True)


def test_the_audit_files_each_departure_under_what_departs():
    base = {"op": "X", "title": "T", "explanation": "E", "inputs": "x", "output": "y", "index": None,
            "reference": "fails: no", "spec": "1", "difference": None}
    runtime = {**base, "title": "runtime title", "component": f"{RUNTIME} 1.19.2"}
    reference = {**base, "title": "reference title"}
    body = {**base, "title": "body title", "component": "the schema's function body"}
    page = render_disagreements({}, {"X": [runtime, reference, body]})
    sections = page.split("\n## ")
    where = {t: next(s.splitlines()[0] for s in sections if f"### X: {t}" in s)
             for t in ("runtime title", "reference title", "body title")}
    assert where == {"runtime title": "Departures of ONNX Runtime's forward from the spec",
                     "reference title": "Departures of onnx.reference from the spec",
                     "body title": "Departures of the schemas' function bodies from the spec's text"}
    assert "ONNX Runtime 1.19.2 fails: no" in page and "`onnx.reference` fails: no" in page
    engines = render_engines({}, {"X": [runtime, reference]})
    assert "## ONNX Runtime's forward" in engines and "runtime title" in engines
    assert "reference title" not in engines and REFERENCE not in engines.split("## ONNX Runtime's forward")[1]
    assert "## ONNX Runtime's forward" not in render_engines({}, {"X": [reference]})


def test_the_witness_is_fed_with_its_own_types():
    # float64 inverse DFT of (1, 2, 3): ONNX Runtime 1.19.2 rounds the 1/N scale to float32 (fed as float32, the
    # input itself would be rounded and the witness lost)
    x = np.array([[[1.0], [2.0], [3.0]]])
    spec = lambda inputs, **_: [np.stack([np.fft.ifft(inputs[0][0, :, 0]).real,  # noqa: E731
                                          np.fft.ifft(inputs[0][0, :, 0]).imag], -1)[None]]
    f = check_runtime_departure("DFT", [x], {"inverse": 1}, spec=spec, title="t", explanation="e",
                                min_difference=1e-9, opset=20)
    assert isinstance(f.difference, float) and 1e-9 <= f.difference < 1e-6
