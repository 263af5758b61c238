"""`python -m proofkit run`: execute chapters in place, top to bottom, in a fresh kernel of this environment.

The kernel is the one nbval uses with --nbval-current-env, so the stored outputs are exactly what nbval compares.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager


def execute(nb: nbformat.NotebookNode, cwd: Path, timeout: int = 600) -> nbformat.NotebookNode:
    """Execute `nb` in a fresh kernel started in `cwd`; raises nbclient's CellExecutionError on the first error."""
    km = KernelManager(kernel_name=CURRENT_ENV_KERNEL_NAME, kernel_spec_manager=NbvalKernelspecManager())
    NotebookClient(nb, km=km, timeout=timeout, allow_errors=False,
                   resources={"metadata": {"path": str(Path(cwd).resolve())}}).execute()
    return nb


def run_notebook(path: Path, timeout: int = 600) -> None:
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    try:
        execute(nb, path.parent, timeout)
    finally:  # store what ran, error included, so the contract tests point at it
        for cell in nb.cells:  # nothing machine-dependent in the stored file
            cell.get("metadata", {}).pop("execution", None)
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, path)
