"""The status page: how long each chapter took in the last test run on this machine, slowest first.

The times come from the test run (conftest.py writes TIMES_FILE), so the page is rendered at build time and is not
committed; a chapter over the contract's budget shows up at the top.
"""

from __future__ import annotations

import json
from pathlib import Path

TIMES_FILE = "_build/test-times.json"
BUDGET_SECONDS = 30  # the chapter contract: each chapter runs in under 30 seconds


def render_status(root: Path) -> str:
    path = Path(root) / TIMES_FILE
    lines = ["---", "orphan: true", "---", "", "(status)=", "# Status", "",
             "How long each notebook took under the last test run (`make test`, or `pytest`) on the machine that "
             "built this site: kernel start, every cell re-executed and its outputs compared by nbval. Slowest first; "
             f"the chapter contract asks for under {BUDGET_SECONDS} seconds each.", ""]
    if not path.exists():
        return "\n".join(lines + ["No test run has been recorded where this site was built; run `make test` before "
                                  "`make book` to fill this page.", ""])
    data = json.loads(path.read_text())
    times = sorted(data["chapters"].items(), key=lambda kv: (-kv[1], kv[0]))
    total = sum(t for _, t in times)
    workers = f" by {data['workers']} workers" if data.get("workers") else ""
    lines += [f"{len(times)} notebooks, {total:.1f} seconds in all, on {data.get('cpus')} CPUs{workers}.", "",
              "| notebook | seconds | within budget |", "|---|---:|---|"]
    for name, t in times:
        doc = name[: -len(".ipynb")]
        lines.append(f"| {{doc}}`{Path(doc).name} </{doc}>` | {t:.1f} | {'yes' if t < BUDGET_SECONDS else '**no**'} |")
    return "\n".join(lines) + "\n"


def write_status(root: Path) -> Path:
    out = Path(root) / "book" / "status.md"
    text = render_status(root)
    if not out.exists() or out.read_text() != text:
        out.write_text(text)
    return out
