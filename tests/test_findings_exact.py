"""Departures of onnx.reference compared by equality (strings): check_reference_departure_exact."""

import numpy as np
import pytest

from proofkit import recorded
from proofkit.evidence import _reset
from proofkit.findings import FINDING_MIME, check_reference_departure_exact


@pytest.fixture(autouse=True)
def clean_evidence():
    _reset()
    yield
    _reset()


def strings(*values):
    return np.array(values, dtype=object)


def concat(inputs, **attrs):
    return [np.array([a + b for a, b in zip(inputs[0], inputs[1])], dtype=object)]


def test_an_unequal_string_is_a_departure_shown_with_its_escapes():
    # onnx.reference casts to NumPy's fixed-width str, which drops trailing NUL characters
    f = check_reference_departure_exact("StringConcat", [strings("a", "b\x00"), strings("x", "y")], spec=concat,
                                        title="drops NUL", explanation="e")
    assert (f.output, f.index, f.reference, f.spec, f.difference) == ("Z", (1,), "'by'", "'b\\x00y'", "unequal")
    assert any(r.kind == "reference-departure" for r in recorded("StringConcat"))
    assert "'b\\x00y'" in repr(f) and FINDING_MIME in f._repr_mimebundle_()


def test_a_spec_equal_to_the_reference_fails():
    with pytest.raises(AssertionError, match="is gone"):
        check_reference_departure_exact("StringConcat", [strings("a", "b"), strings("x", "y")], spec=concat,
                                        title="t", explanation="e")


def test_another_shape_is_a_departure():
    f = check_reference_departure_exact("StringConcat", [strings("a", "b"), strings("x", "y")],
                                        spec=lambda i, **a: [strings("ax")], title="t", explanation="e")
    assert f.index is None and f.difference == "shapes differ"


def test_bool_outputs_compare_by_equality():
    f = check_reference_departure_exact("RegexFullMatch", [strings("\u0663", "3")], {"pattern": r"\d"},
                                        spec=lambda i, **a: [np.array([False, True])], title="t", explanation="e")
    assert (f.index, f.reference, f.spec) == ((0,), "True", "False")


def test_control_characters_of_the_witness_are_escaped_in_its_text():
    f = check_reference_departure_exact("StringConcat", [strings("a", "b\x00"), strings("x", "y")], spec=concat,
                                        title="drops NUL", explanation="e")
    assert "b\\x00" in f.inputs and "\x00" not in f.inputs


def test_nan_equals_nan_on_a_float_output():
    x = np.array([-1.0, 4.0])
    with pytest.raises(AssertionError, match="is gone"):  # both NaN at -1: no departure
        check_reference_departure_exact("Sqrt", [x], spec=lambda i, **a: [np.array([np.nan, 2.0])], title="t",
                                        explanation="e")
    f = check_reference_departure_exact("Sqrt", [x], spec=lambda i, **a: [np.array([0.0, 2.0])], title="t",
                                        explanation="e")  # NaN against a number still is one
    assert (f.index, f.reference, f.spec, f.difference) == ((0,), "nan", "0.0", "unequal")


def test_a_spec_with_another_number_of_outputs_is_refused():
    with pytest.raises(ValueError, match="spec returned 2 outputs, onnx.reference 1"):
        check_reference_departure_exact("StringConcat", [strings("a"), strings("x")], n_outputs=1,
                                        spec=lambda i, **a: [strings("ax"), strings("ax")], title="t",
                                        explanation="e")


def test_control_characters_are_escaped_when_the_shapes_differ():
    f = check_reference_departure_exact("StringConcat", [strings("a\x00b"), strings("x")],
                                        spec=lambda i, **a: [strings("a\x00bx", "z\x01")], title="t",
                                        explanation="e")
    assert f.difference == "shapes differ"
    assert "a\\x00bx" in f.spec and "z\\x01" in f.spec and "a\\x00bx" in f.reference
    assert not any(c in f.spec + f.reference + f.inputs for c in "\x00\x01")


def test_a_0d_output_is_compared_at_its_single_entry():
    x, y = np.array("a", dtype=object), np.array("b", dtype=object)
    f = check_reference_departure_exact("StringConcat", [x, y], spec=lambda i, **a: [np.array("ba", dtype=object)],
                                        title="t", explanation="e")
    assert (f.index, f.reference, f.spec) == ((), "'ab'", "'ba'")
    assert "Z = 'ab'" in repr(f)
    with pytest.raises(AssertionError, match="is gone"):
        check_reference_departure_exact("StringConcat", [x, y], spec=lambda i, **a: [np.array("ab", dtype=object)],
                                        title="t", explanation="e")
