"""Benchmark of the notebook suite against its kernel-and-import floor (not a test: timings depend on the machine).

In one pytest run, the way `make test` runs notebooks (nbval strict, this environment's kernel, 2 workers, one
notebook per worker), it runs every chapter (with its teeth) and as many trivial notebooks: a fresh kernel that
imports numpy, sympy, torch, onnx, matplotlib and proofkit and prints one operator's signature. It prints the suite's
and the floor's total (the sum of each notebook's setup, cells and teardown, in worker-seconds), their ratio, the run's
wall time, the median and largest chapter, and the slowest chapters and cells. It splits the ratio in two: the
chapters' own work (every cell after the first, the teeth, teardown) against the floor, and what their first cells
(kernel start and imports, the floor's own work) take beyond the floor, which differs from zero by what a chapter
imports beyond the floor's modules and by the run's noise. Run from the repository:

    .venv/bin/python bench/suite.py [--workers 2] [--top 15] [proofs/A.ipynb ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOOR = ROOT / "_build" / "bench-floor"
FLOOR_SOURCE = """import numpy as np
import sympy as sp
import torch
import onnx
import matplotlib
import proofkit
from proofkit import signature
signature("Relu")"""


def floor_notebooks(n: int) -> list[Path]:
    """n copies of the trivial notebook, executed once so that nbval has its stored output to compare."""
    import nbformat

    from proofkit.runner import run_notebook

    if FLOOR.exists():
        shutil.rmtree(FLOOR)
    FLOOR.mkdir(parents=True)
    first = FLOOR / "floor_000.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(FLOOR_SOURCE)]
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nbformat.write(nb, first)
    run_notebook(first)
    paths = [first]
    for k in range(1, n):
        paths.append(FLOOR / f"floor_{k:03d}.ipynb")
        shutil.copy(first, paths[-1])
    return paths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("chapters", nargs="*", type=Path, help="default: every chapter in proofs/")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--top", type=int, default=15)
    args = p.parse_args(argv)
    chapters = [c.resolve() for c in args.chapters] or sorted((ROOT / "proofs").glob("*.ipynb"))
    floor = floor_notebooks(len(chapters))
    report = ROOT / "_build" / "bench-suite.xml"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-o", "addopts=",
           "--nbval", "--nbval-current-env", "--nbval-sanitize-with", "nbval-sanitize.cfg",
           "--nbval-kernel-startup-timeout", "300", "-n", str(args.workers), "--dist", "loadscope",
           f"--junitxml={report}", *map(str, chapters), *map(str, floor)]
    start = time.perf_counter()
    env = {**os.environ, "PROOFKIT_BENCH": "1"}  # conftest.py then leaves the status page's times alone
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    per_file: dict[str, float] = defaultdict(float)
    first: dict[str, float] = defaultdict(float)
    cells = []
    for case in ET.parse(report).iter("testcase"):
        t = float(case.get("time", 0))
        cls = case.get("classname", "")  # "proofs.Abs.ipynb": the notebook's path with "/" written "."
        key = cls[: -len(".ipynb")].replace(".", "/") + ".ipynb" if cls.endswith(".ipynb") else cls
        per_file[key] += t
        if case.get("name") == "Cell 0":  # kernel start and the imports cell: what a floor notebook does
            first[key] += t
        cells.append((t, f"{Path(key).name}::{case.get('name', '')}"))
    suite = {k: v for k, v in per_file.items() if k.startswith("proofs/")}
    base = {k: v for k, v in per_file.items() if "bench-floor" in k}
    total, floor_total = sum(suite.values()), sum(base.values())
    print(f"chapters: {len(suite)}; floor notebooks: {len(base)}; workers: {args.workers}")
    print(f"notebook suite: {total:.0f} s; floor: {floor_total:.0f} s; ratio {total / floor_total:.2f} "
          f"(goal: at most 1.3)")
    imports = sum(v for k, v in first.items() if k in suite)
    print(f"  = chapters' first cells (kernel start, imports) {imports:.0f} s + their own work (other cells, teeth, "
          f"teardown) {total - imports:.0f} s;\n  ratio = 1 + own work / floor ({(total - imports) / floor_total:.2f}) "
          f"+ (first cells - floor) / floor ({(imports - floor_total) / floor_total:+.2f})")
    print(f"wall time of the run (both): {wall:.0f} s")
    times = sorted(suite.values())
    print(f"per chapter: median {statistics.median(times):.1f} s, largest {times[-1]:.1f} s "
          f"(goals: median under 5 s, none over 30 s); floor median {statistics.median(base.values()):.1f} s")
    print("\nslowest chapters (setup, cells, teeth and teardown):")
    for k, v in sorted(suite.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {v:6.1f} s  {Path(k).name}")
    print("\nslowest cells:")
    for t, name in sorted(cells, reverse=True)[: args.top]:
        print(f"  {t:6.1f} s  {name}")
    if run.returncode:
        failed = [line for line in run.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
        print("\nthe run failed (its figures still stand for what ran):\n" + "\n".join(failed or
              [run.stdout[-3000:]]), file=sys.stderr)
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
