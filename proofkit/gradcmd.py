"""`python -m proofkit grad MODEL.onnx`: the book's reverse mode (proofkit.reverse) on a user's model.

It differentiates Σ over the float graph outputs of ⟨output, cotangent⟩ (cotangents of ones, unless `--inputs` holds
an array named after the output) with respect to every float graph input and initializer, prints a summary per
parameter, lists the model's operators that have no chapter yet, writes the gradients with `--out`, and with
`--check` compares them with central finite differences of `onnx.reference` along random directions.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import onnx

from .reverse import ReverseModeError, chapters_missing, default_opset, gradients, load_model, upgrade

#: Symbolic or unknown dimensions of a graph input get this size when the command draws the input itself.
FREE_DIM = 2


def random_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs for the graph inputs that are not initializers: standard normal floats, zeros otherwise."""
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for v in model.graph.input:
        if v.name in inits:
            continue
        if not v.type.HasField("tensor_type"):
            raise ReverseModeError(f"graph input {v.name} is not a tensor: give it in --inputs")
        tt = v.type.tensor_type
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        shape = [d.dim_value if d.HasField("dim_value") else FREE_DIM for d in tt.shape.dim]
        feeds[v.name] = (rng.standard_normal(shape).astype(dtype) if np.issubdtype(dtype, np.floating)
                         else np.zeros(shape, dtype))
    return feeds


def finite_difference_check(model, feeds, cotangents, result, *, directions: int = 3, seed: int = 1):
    """Central differences of the objective along random directions of all parameters at once, against the
    reverse mode's directional derivative (proofkit.wholemodel.fd_directions), with a step of 1e-6 for float64
    parameters and 1e-2 otherwise. Returns one (fd, reverse) pair per direction."""
    from .wholemodel import fd_directions

    wide = min(np.finfo(g.dtype).eps for g in result.grads.values())
    return fd_directions(model, feeds, cotangents, result.grads, directions=directions, seed=seed,
                         eps=1e-6 if wide < 1e-10 else 1e-2)


def _progress(start):
    state = {"shown": False}

    def report(done, total):
        if time.perf_counter() - start < 2 and not state["shown"]:
            return
        state["shown"] = True
        width = 30
        filled = width * done // total
        sys.stderr.write(f"\rbackward [{'#' * filled}{'.' * (width - filled)}] {done}/{total} nodes")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()
    return report


def main(path, inputs_path=None, out_path=None, check=False, seed=0) -> int:
    model = load_model(path)
    missing = chapters_missing(model)
    model = upgrade(model)
    outputs = {o.name for o in model.graph.output}
    given = {}
    if inputs_path is not None:
        try:
            with np.load(inputs_path) as data:
                given = {k: data[k] for k in data.files}
        except FileNotFoundError:
            raise ReverseModeError(f"no inputs file at {inputs_path}") from None
    cotangents = {k: v for k, v in given.items() if k in outputs}
    feeds = {k: v for k, v in given.items() if k not in outputs}
    drawn = random_inputs(model, seed)
    unknown = sorted(set(feeds) - set(drawn) - {t.name for t in model.graph.initializer})
    if unknown:
        raise ReverseModeError(f"{inputs_path} holds arrays that are neither graph inputs, initializers nor "
                               f"outputs: {', '.join(unknown)}")
    drew = sorted(set(drawn) - set(feeds))
    feeds = {**drawn, **feeds}
    start = time.perf_counter()
    result = gradients(model, feeds, cotangents, progress=_progress(start))
    print(f"model: {path}  ({len(model.graph.node)} nodes, opset {default_opset(model)})")
    if drew:
        print(f"inputs drawn (seed {seed}; standard normal floats, zero integers): {', '.join(drew)}")
    print(f"objective: sum over the float outputs of output · cotangent "
          f"({'given' if cotangents else 'ones'} for {', '.join(sorted(outputs))})")
    print(f"forward {result.forward_seconds:.3f} s, backward {result.backward_seconds:.3f} s")
    width = max([len("parameter")] + [len(p) for p in result.grads])
    print(f"{'parameter':<{width}}  {'shape':<16} {'dtype':<8} {'|grad|':>12} {'max|grad|':>12}")
    for p, g in result.grads.items():
        print(f"{p:<{width}}  {str(tuple(g.shape)):<16} {str(g.dtype):<8} {np.linalg.norm(g):12.6g} "
              f"{(np.max(np.abs(g)) if g.size else 0.0):12.6g}")
    for p, nodes in result.cuts.items():
        print(f"note: paths to {p} through {'; '.join(nodes)} contribute nothing (the book proves no gradient)")
    print("operators without a chapter: " + (", ".join(missing) if missing else "none"))
    if out_path is not None:
        np.savez(out_path, **result.grads)
        print(f"wrote {out_path}")
    if check:
        pairs = finite_difference_check(model, feeds, cotangents, result)
        worst = 0.0
        for k, (fd, rev) in enumerate(pairs):
            rel = abs(fd - rev) / max(abs(fd), abs(rev), 1e-300)
            worst = max(worst, rel)
            print(f"check: direction {k}: finite differences {fd:.10g}, reverse mode {rev:.10g}, relative "
                  f"difference {rel:.2e}")
        dtype64 = all(g.dtype == np.float64 for g in result.grads.values())
        bound = 1e-5 if dtype64 else 5e-2
        if worst > bound:
            print(f"check FAILED: relative difference {worst:.2e} above {bound:g}")
            return 1
        print(f"check passed: every relative difference at most {bound:g}")
    return 0

