"""Benchmark of the book's reverse mode (proofkit.reverse) on the models of book/backward-pass (proofkit.zoo).

For each model: the forward pass by onnx.reference (what a user's forward costs: ReferenceEvaluator built and run),
the book's backward pass after it (every node's chapter rule, the rules already loaded), their ratio, and onnx-ad's
adjoint model run by onnx.reference (it recomputes the forward inside) against the same forward. Then where the
backward's time goes: the chapters' rules against the walk around them. Medians over --repeat runs, after one warm-up
run (which loads the rules from the chapters). Not a test: timings depend on the machine. Run from the repository:

    .venv/bin/python bench/reverse_mode.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import onnx_ad  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from proofkit import reverse, zoo  # noqa: E402
from proofkit.wholemodel import _seeds, with_parameters_as_inputs  # noqa: E402


def timed_rules():
    """Wrap every rule reverse.rule_of returns so that the time spent inside the chapters' rules is summed."""
    spent = {"rules": 0.0}
    real = reverse.rule_of

    def rule_of(op):
        vjp = real(op)
        if vjp is reverse._NO_RULE:
            return vjp

        def wrapped(*args, **kwargs):
            t = time.perf_counter()
            try:
                return vjp(*args, **kwargs)
            finally:
                spent["rules"] += time.perf_counter() - t
        return wrapped

    reverse.rule_of = rule_of
    return spent


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=20)
    args = p.parse_args(argv)
    spent = timed_rules()
    rows = []
    for case in zoo.cases():
        reverse.gradients(case.model, case.feeds, case.cotangents)  # warm-up: loads the rules
        params = reverse.parameters(case.model)
        values = reverse.forward(case.model, case.feeds)
        seeds = _seeds(case.model, values, case.cotangents)
        adjoint = onnx_ad.reverse(with_parameters_as_inputs(case.model, params), inputs=params,
                                  outputs=list(seeds), prefix="adj_", layout="onnx")
        inits = {t.name: numpy_helper.to_array(t) for t in case.model.graph.initializer}
        feeds = {**{k: v for k, v in inits.items() if k in params}, **case.feeds,
                 **{f"adj_{k}": np.asarray(g)[..., None] for k, g in seeds.items()}}
        needed = {i.name for i in adjoint.graph.input}
        feeds = {k: v for k, v in feeds.items() if k in needed}
        fwd, bwd, rules, adj, why = [], [], [], [], ""
        for _ in range(args.repeat):
            t = time.perf_counter()
            ReferenceEvaluator(case.model).run(None, case.feeds)
            fwd.append(time.perf_counter() - t)
            spent["rules"] = 0.0
            g = reverse.gradients(case.model, case.feeds, case.cotangents)
            bwd.append(g.backward_seconds)
            rules.append(spent["rules"])
            t = time.perf_counter()
            try:
                ReferenceEvaluator(adjoint).run(None, feeds)
                adj.append(time.perf_counter() - t)
            except Exception as e:  # noqa: BLE001 - onnx.reference cannot run this adjoint model (a reverse Scan)
                adj.append(None)
                why = type(e).__name__
        f, b, r = (statistics.median(v) for v in (fwd, bwd, rules))
        a = statistics.median(adj) if None not in adj else None
        rows.append((case.name, len(case.model.graph.node), f, b, b / f, r / b, a, why if a is None else ""))
    print(f"{'model':<24}{'nodes':>6}{'forward':>11}{'backward':>11}{'bwd/fwd':>9}{'in rules':>10}"
          f"{'onnx-ad adjoint':>17}{'adj/fwd':>9}")
    for name, n, f, b, ratio, share, a, why in rows:
        adj_text = f"{a * 1e3:14.2f} ms" if a is not None else f"{'not run (' + why + ')':>17}"
        print(f"{name:<24}{n:>6}{f * 1e3:8.2f} ms{b * 1e3:8.2f} ms{ratio:9.2f}{share:9.0%} {adj_text}"
              f"{(a / f if a is not None else float('nan')):9.2f}")
    worst = max(r[4] for r in rows)
    print(f"largest backward/forward ratio: {worst:.2f} (goal: at most 3)")
    return 0 if worst <= 3 else 1


if __name__ == "__main__":
    sys.exit(main())
