"""The per-cell table of checks (proofkit.report): what it shows, what it leaves to the chapter's own prints."""

import numpy as np
import pytest

from proofkit import check_vjp_fd, report
from proofkit.checks import CheckResult
from proofkit.ortgrad import ort_version


@pytest.fixture
def kernel():
    """Collect as a notebook kernel does, without one."""
    report._pending.clear()
    report._state["installed"] = True
    yield
    report._state["installed"] = False
    report._pending.clear()


def neg_vjp(inputs, cotangents, **attrs):
    return [-np.asarray(cotangents[0])]


def test_a_cell_gets_one_row_per_check_it_did_not_print(kernel):
    for k, shape in enumerate([(3,), (2, 4)]):
        check_vjp_fd("Neg", neg_vjp, [np.linspace(-1, 1, int(np.prod(shape))).reshape(shape)], seed=k).labelled(
            "shape", shape, "->")
    printed = check_vjp_fd("Neg", neg_vjp, [np.ones(5)])
    repr(printed)  # the chapter printed this one: it keeps its sentence and leaves the table
    table = report.flush()
    assert report.flush() is None  # flushed once
    text = repr(table)
    assert text.splitlines()[0] == "Neg: 2 checks run in this cell, none failed"
    assert "shape (3,)" in text and "shape (2, 4)" in text and "(5,)" not in text
    assert "finite-difference" in text and "2 directions, ε=1e-06" in text
    assert "<th>largest error</th>" in table._repr_html_()


def test_results_outside_a_kernel_are_not_collected():
    report._pending.clear()
    check_vjp_fd("Neg", neg_vjp, [np.ones(3)])
    assert report._pending == [] and report.flush() is None


def test_errors_and_tolerances_are_measured_figures_and_an_exact_zero_is_plain():
    shown = [str(report.error_text(e)) for e in (None, 0.0, 3e-10, 1e-9, 2.5e-3, float("inf"))]
    assert shown == ["—", "⟦0⟧", "⟦3e-10⟧", "⟦1e-09⟧", "⟦3e-03⟧", "⟦inf⟧"]
    assert report.error_text(0.0, exact=True) == "0" and report.tolerance_text(None) == "—"
    assert str(report.tolerance_text(2e-9)) == "⟦2e-09⟧"
    with pytest.raises(AssertionError):
        report.error_text(1e-16, exact=True)  # an exact comparison cannot have passed with an error


def _sanitized(text):
    """What nbval compares, through the repository's own sanitize file and nbval's own parser."""
    import re
    from pathlib import Path

    from nbval.plugin import get_sanitize_patterns
    patterns = get_sanitize_patterns((Path(__file__).parent.parent / "nbval-sanitize.cfg").read_text())
    assert len(patterns) == 2
    for regex, replace in patterns:
        text = re.sub(regex, replace, text)
    return text


def _table_on(errors, tol=1e-6, label="shape (3,)"):
    results = [CheckResult("finite-difference", "Neg", ["X"], inputs="(3,)", error=e, tol=tol).labelled(label)
               for e in errors]
    return report.CheckTable(results)


def test_tables_that_differ_only_in_measured_figures_compare_equal_under_the_sanitize_file():
    # what one processor and the next give: 0 against a last-bit error, a power of ten apart, another tolerance
    a, b = _table_on([0.0, 4e-6, 3e-16]), _table_on([1e-16, 1e-7, 0.0], tol=7e-7)
    assert repr(a) != repr(b) and a._repr_html_() != b._repr_html_()
    assert _sanitized(repr(a)) == _sanitized(repr(b))
    assert _sanitized(a._repr_html_()) == _sanitized(b._repr_html_())
    # the columns do not move with the figures: every line keeps its length before sanitizing
    assert [len(x) for x in repr(a).splitlines()[:3]] == [len(x) for x in repr(b).splitlines()[:3]]


def test_the_sanitize_file_leaves_everything_else_compared():
    a = _table_on([3e-16])
    for other in (_table_on([3e-16], label="shape (4,)"), _table_on([None]),
                  report.CheckTable([CheckResult("forward", "Neg", ["Y"], error=0.0, exact=True)])):
        assert _sanitized(repr(a)) != _sanitized(repr(other))
        assert _sanitized(a._repr_html_()) != _sanitized(other._repr_html_())
    # prose with a measured figure keeps its words
    assert _sanitized(f"residual {report.Measured(5.6e-17, '.1e')} after 3 steps") == "residual ⟦measured⟧after 3 steps"
    assert _sanitized("0.5 ≈ 1/2, ⟨u, v⟩") == "0.5 ≈ 1/2, ⟨u, v⟩"


def test_a_failed_or_missing_ort_builder_is_a_note_not_a_pass():
    from proofkit import check_vjp_ort

    def tan_vjp(inputs, cotangents, **attrs):
        return [np.asarray(cotangents[0]) / np.cos(inputs[0]) ** 2]

    r = check_vjp_ort("Tan", tan_vjp, [np.array([0.1, 0.2, 0.3])])
    row = report.CheckTable([r]).table.rows[0]
    assert row[4] == "—" and row[-1] == f"ONNX Runtime {ort_version()} has no gradient builder for Tan"
    assert "(the attempt" in repr(r)  # the printed sentence keeps the whole account


def test_labels_drop_the_arrow_and_extra_spaces():
    r = CheckResult("forward", "Neg", ["Y"]).labelled("  next to the kinks", [0.5], "->")
    assert r.label == "next to the kinks [0.5]"
