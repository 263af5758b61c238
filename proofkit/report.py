"""One compact table per notebook cell for the checks the cell ran.

A cross-check loop calls the same check on many shapes and attributes; printing a sentence per call buries the
figures. In a notebook kernel, every check result a cell creates and does not print itself is collected, and at the
end of the cell they are shown as one table: the check, the variant, the inputs and attributes, the inputs it passed
for, the largest error against its tolerance, and notes (inputs vjp gives no gradient, what ONNX Runtime lacks, a
declared difference). A result the chapter prints or formats keeps its sentence and is left out of the table.

The largest error and the tolerance it was tested against (atol + rtol·scale, computed from the data) are measured
figures: they depend on the floating-point path of the processor that ran the check, so they are shown to one
significant digit as `Measured` cells, which nbval does not compare (proofkit.display.Measured, nbval-sanitize.cfg).
Everything else in the table (which check, on which inputs and attributes, what it passed for) is the same on every
processor, and the figures' claim, error ≤ tolerance, is asserted by the check itself. An exact comparison (integer
outputs, outputs unchanged under a perturbation) shows its 0 plainly: equality does not depend on the processor.
"""

from __future__ import annotations

from .display import Measured, Table

TABLED = ("forward", "symbolic", "finite-difference", "PyTorch autograd", "ONNX Runtime", "onnx-ad", "zero-derivative")
_pending: list = []
_state = {"installed": False}


def collect(result) -> None:
    """Called by every check result as it is created; only collects inside an installed kernel."""
    if _state["installed"] and result.kind in TABLED:
        _pending.append(result)


def error_text(err, exact: bool = False):
    """The largest error: '—' where nothing was compared, a plain 0 for an exact comparison, else measured."""
    if err is None:
        return "—"
    if exact:
        assert err == 0, "an exact comparison that passed has no error"
        return "0"
    return Measured(err)


def tolerance_text(tol):
    """The tolerance the largest error was tested against (computed from the data): measured, or '—'."""
    return "—" if tol is None else Measured(tol)


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
                        + [r.inputs or "—", r.attrs or "—", r.shown_outcome(), error_text(r.error, r.exact),
                           tolerance_text(r.tol), r.table_notes()])
        ops = sorted({r.op for r in self.results})
        n = len(self.results)
        idle = sum(not r.compared for r in self.results)
        caption = f"{', '.join(ops)}: {n} check{'s' if n != 1 else ''} run in this cell, none failed"
        if idle:
            caption += f"; {'every one' if idle == n else f'{idle} of them'} compared nothing"
        self.table = Table(head, rows, caption=caption, css_class="proofkit-table proofkit-checks")

    def __repr__(self):
        return repr(self.table)

    def _repr_html_(self):
        return self.table._repr_html_()


def flush() -> CheckTable | None:
    """The pending results not shown by the cell itself, as a table (and forget them)."""
    todo = [r for r in _pending if not r.shown]
    _pending.clear()
    return CheckTable(todo) if todo else None


def _shell():
    """The IPython shell this process runs cells in, or None (a script, a test)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is always there with Jupyter
        return None
    ip = get_ipython()
    return ip if ip is not None and hasattr(ip, "events") else None


def in_kernel() -> bool:
    """Whether this process runs notebook cells (an IPython kernel or shell)."""
    return _shell() is not None


def install() -> None:
    """Collect check results per cell in this IPython kernel (a no-op outside one, and when already installed)."""
    if _state["installed"]:
        return
    ip = _shell()
    if ip is None:
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
