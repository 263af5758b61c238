"""The chapters' teeth, in their own nbval kernels, and how long each chapter takes under the test run (for the book's
status page, proofkit.status)."""

import importlib.util
import json
import os
from collections import defaultdict
from pathlib import Path

import nbformat
import nbval.plugin as nbval_plugin

from proofkit.status import TIMES_FILE

# One thread per notebook kernel: the suite runs one notebook per core (pytest-xdist, `make test`'s -n 2), and a kernel
# inherits this process's environment. PyTorch's and the BLAS libraries' thread pools (one thread per core by default)
# only compete with the other notebook there: under that load a small PyTorch convolution, whose threads wait for one
# another, took milliseconds instead of microseconds. One thread computes the same operations; a value set in the
# environment is kept. ONNX Runtime's sessions get one thread from proofkit.ortgrad.session_options.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

_teeth_spec = importlib.util.spec_from_file_location("teeth", Path(__file__).parent / "tests" / "teeth.py")
teeth = importlib.util.module_from_spec(_teeth_spec)
_teeth_spec.loader.exec_module(teeth)


def _with_teeth(collect):
    """After a chapter's cells, one more item in the same kernel: the mutants of tests/teeth.py."""

    def collect_with_teeth(self):
        items = list(collect(self))
        yield from items
        path = Path(str(self.fspath))
        if path.parent.name == "proofs" and path.suffix == ".ipynb":
            options = defaultdict(bool, check=False)  # its output is not compared; a surviving mutant raises
            cell = nbformat.v4.new_code_cell(teeth.teeth_code(path))
            yield nbval_plugin.IPyNbCell.from_parent(self, name="teeth", cell_num=len(items), cell=cell,
                                                     options=options)

    return collect_with_teeth


nbval_plugin.IPyNbFile.collect = _with_teeth(nbval_plugin.IPyNbFile.collect)

_times: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _times[path] += report.duration  # setup (kernel start), every cell, teardown


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput") or not _times or os.environ.get("PROOFKIT_BENCH"):
        return  # xdist workers report to the controller, which writes the file once; a benchmark run writes none
    out = Path(session.config.rootpath) / TIMES_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"workers": session.config.getoption("numprocesses", None), "cpus": os.cpu_count(),
               "chapters": {k: round(v, 2) for k, v in sorted(_times.items())}}
    out.write_text(json.dumps(payload, indent=1) + "\n")
