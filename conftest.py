"""Records how long each chapter takes under the test run, for the book's status page (proofkit.status)."""

import json
import os
from collections import defaultdict
from pathlib import Path

from proofkit.status import TIMES_FILE

_times: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _times[path] += report.duration  # setup (kernel start), every cell, teardown


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput") or not _times:
        return  # xdist workers report to the controller, which writes the file once
    out = Path(session.config.rootpath) / TIMES_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"workers": session.config.getoption("numprocesses", None), "cpus": os.cpu_count(),
               "chapters": {k: round(v, 2) for k, v in sorted(_times.items())}}
    out.write_text(json.dumps(payload, indent=1) + "\n")
