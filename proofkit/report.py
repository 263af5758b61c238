"""One compact table per notebook cell for the checks the cell ran.

A cross-check loop calls the same check on many shapes and attributes; printing a sentence per call buries the
figures. In a notebook kernel, every check result a cell creates and does not print itself is collected, and at the
end of the cell they are shown as one table: the check, the variant, the inputs and attributes, the inputs it passed
for, the largest error against its tolerance, and notes (inputs vjp gives no gradient, what ONNX Runtime lacks, a
declared difference). A result the chapter prints or formats keeps its sentence and is left out of the table.

Errors are shown as the power of ten above them (≤ 1e-9), so the table is identical on every run.
"""

from __future__ import annotations

import math

from .display import Table

TABLED = ("forward", "symbolic", "finite-difference", "PyTorch autograd", "ONNX Runtime", "zero-derivative")
_pending: list = []
_state = {"installed": False}


def collect(result) -> None:
    """Called by every check result as it is created; only collects inside an installed kernel."""
    if _state["installed"] and result.kind in TABLED:
        _pending.append(result)


def error_text(err) -> str:
    if err is None:
        return "—"
    if err == 0:
        return "0"
    if not math.isfinite(err):
        return str(err)
    return f"≤ 1e{math.ceil(math.log10(err))}"


def tolerance_text(tol) -> str:
    return "—" if tol is None else f"{tol:.0e}"


class CheckTable:
    """The checks of one cell, in the order they ran."""

    def __init__(self, results):
        self.results = list(results)
        labelled = any(r.label for r in self.results)
        head = ["check"] + (["variant"] if labelled else []) + ["inputs", "attributes", "passed for", "largest error",
                                                                  "tolerance", "notes"]
        rows = []
        for r in self.results:
            rows.append([r.kind] + ([r.label] if labelled else [])
                        + [r.inputs or "—", r.attrs or "—", ", ".join(r.names) or "—", error_text(r.error),
                           tolerance_text(r.tol), r.table_notes()])
        ops = sorted({r.op for r in self.results})
        n = len(self.results)
        self.table = Table(head, rows, caption=f"{', '.join(ops)}: {n} check{'s' if n != 1 else ''} run in this cell, none failed",
                           css_class="proofkit-table proofkit-checks")

    def __repr__(self):
        return repr(self.table)

    def _repr_html_(self):
        return self.table._repr_html_()


def flush() -> CheckTable | None:
    """The pending results not shown by the cell itself, as a table (and forget them)."""
    todo = [r for r in _pending if not r.shown]
    _pending.clear()
    return CheckTable(todo) if todo else None


def install() -> None:
    """Collect check results per cell in this IPython kernel (a no-op outside one, and when already installed)."""
    if _state["installed"]:
        return
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is always there with Jupyter
        return
    ip = get_ipython()
    if ip is None or not hasattr(ip, "events"):
        return

    def _pre(*_):
        _pending.clear()

    def _post(*_):
        found = flush()
        if found is not None:
            from IPython.display import display
            display(found)

    ip.events.register("pre_run_cell", _pre)
    ip.events.register("post_run_cell", _post)
    _state["installed"] = True
