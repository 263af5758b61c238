"""Outer values: what a node with a graph attribute (If's branches, SequenceMap's body) reads from the enclosing scope
without listing it as an input, and the checks of its rule with respect to them.

ONNX lets a nested graph read any value of an enclosing scope by name (`proofkit.reverse.captured`); the operator's
outputs are functions of those values, but they are no formal input, so the tag system has no place for them and
the ordinary checks, which run the node alone, cannot feed them. Here the node runs in a model whose graph inputs are
the node's inputs (x0, x1, ...) and the outer values under their own names (`outer_model`), and a chapter's rule is
called as the book's reverse mode calls it: `vjp(inputs, cotangents, outer={name: value}, **attrs)` returns a pair,
the inputs' gradients and {outer name: gradient or None} (`call_outer`).

Every check here records its evidence under the name `OUTER` ("outer values"), beside the formal inputs' records:
"forward", "fd", "torch", "rule", "ort" / "ort-none" / "ort-refused", "onnxad" / "onnxad-refused" / "onnxad-differs".
The verdict (proofkit.verdict) lets an output be called differentiable through the outer values alone (If, whose
only input `cond` is boolean) when they have the evidence a differentiable input needs.
"""

from __future__ import annotations

import numpy as np
import onnx
import sympy as sp
from onnx import helper

from . import values
from .checks import (CheckResult, NOTHING_COMPARED, REFUSED, REFUSED_ONNXAD, _Worst, _call_vjp,
                     _is_float, _max_err, _record_none, _shapes_text, _shown_name, compare_outputs,
                     compare_with_engine, record_types)
from .evidence import OUTER, record
from .schema import op_info


def _attr_text(attrs) -> str:
    """The attributes as a table shows them, a graph by its name and its nodes' operators."""
    from .checks import _attr_text as plain

    if not attrs:
        return plain(attrs)
    return "{" + ", ".join(f"{k}=graph {v.name!r} ({', '.join(n.op_type for n in v.node)})"
                           if isinstance(v, onnx.GraphProto) else f"{k}={v!r}" for k, v in sorted(attrs.items())) + "}"


def _outer_text(outer: dict) -> str:
    return "outer " + ", ".join(f"{k} {_shapes_text([v])}" for k, v in outer.items())


def _graph_outputs_type(op: str, attrs: dict) -> list:
    """The output types of the node, from its graph attribute: If's outputs are its branches' outputs, SequenceMap's
    are sequences of its body's outputs. None where no graph gives them (then left undeclared)."""
    graph = next((v for v in attrs.values() if isinstance(v, onnx.GraphProto)), None)
    if graph is None:
        return []
    if op == "SequenceMap":
        return [helper.make_sequence_type_proto(o.type) for o in graph.output]
    return [o.type for o in graph.output]


def outer_model(op: str, inputs, attrs: dict | None, outer: dict, n_outputs: int | None = None) -> onnx.ModelProto:
    """A model of one node of `op`: its inputs are graph inputs x0, x1, ... (None: omitted), the outer values are graph
    inputs under their own names, and its outputs are y0, y1, ... The node's graph attributes read the outer values
    by name, as in the model the node comes from."""
    attrs = {k: v for k, v in (attrs or {}).items() if v is not None}
    types = _graph_outputs_type(op, attrs)
    n = n_outputs or len(types) or 1
    names = [f"x{i}" if x is not None else "" for i, x in enumerate(inputs)]
    while names and not names[-1]:
        names.pop()
    node = helper.make_node(op, names, [f"y{k}" for k in range(n)], **attrs)
    ins = [values.value_info(f"x{i}", x) for i, x in enumerate(inputs) if x is not None]
    ins += [values.value_info(k, v) for k, v in outer.items()]
    outs = [helper.make_value_info(f"y{k}", types[k]) if k < len(types) else
            helper.make_empty_tensor_value_info(f"y{k}") for k in range(n)]
    graph = helper.make_graph([node], f"{op}_outer", ins, outs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", onnx.defs.onnx_opset_version())])


def _feeds(inputs, outer) -> dict:
    feeds = {f"x{i}": values.as_value(x) for i, x in enumerate(inputs) if x is not None}
    feeds.update({k: values.as_value(v) for k, v in outer.items()})
    return feeds


#: Where the outer-value checks run the node: ONNX's reference, or ONNX Runtime (float64, its CPU provider) where
#: onnx.reference cannot run the node with outer values (SequenceMap: its body runs without the enclosing scope).
RUNNERS = ("onnx.reference", "onnxruntime")


def run_outer(op: str, inputs, attrs: dict | None, outer: dict, n_outputs: int | None = None, *,
              runner: str = "onnx.reference") -> list:
    """The node's outputs, its graph attributes reading the outer values (`outer_model`), under onnx.reference or,
    with runner="onnxruntime", under ONNX Runtime (opset relabelled 21 and IR version 10, the newest it reads)."""
    from onnx.reference import ReferenceEvaluator

    if runner not in RUNNERS:
        raise ValueError(f"runner is one of {RUNNERS}, not {runner!r}")
    model = outer_model(op, inputs, attrs, outer, n_outputs)
    if runner == "onnxruntime":
        import onnxruntime as ort

        from .ortgrad import IR_VERSION, OPSET, quiet_stderr, session_options
        for entry in model.opset_import:
            entry.version = min(entry.version, OPSET)
        model.ir_version = IR_VERSION
        options = session_options(3)
        with quiet_stderr():
            sess = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
            return [values.as_value(y) for y in sess.run(None, _feeds(inputs, outer))]
    with np.errstate(all="ignore"):
        return [values.as_value(y) for y in ReferenceEvaluator(model).run(None, _feeds(inputs, outer))]


def call_outer(op, vjp, inputs, cotangents, outer: dict, full_attrs: dict):
    """`vjp(inputs, cotangents, outer=outer, **attrs)`, checked: a pair (the inputs' gradients, as `_call_vjp` checks
    them, and a dict with an entry per outer value, None or a gradient of its shape)."""
    got = vjp(list(inputs), list(cotangents), outer=dict(outer), **full_attrs)
    if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], dict)):
        raise AssertionError(f"{op}: vjp called with outer=... must return (the inputs' gradients, {{outer name: "
                             f"gradient}}), got a {type(got).__name__}")
    grads, og = got
    if sorted(og) != sorted(outer):
        raise AssertionError(f"{op}: vjp gave gradients for the outer values {sorted(og)}; the graph reads "
                             f"{sorted(outer)}")
    for k, g in og.items():
        if g is None:
            continue
        why = values.mismatch(g, outer[k]) if values.is_sequence(outer[k]) else (
            "" if np.shape(g) == np.shape(outer[k]) else f"has shape {np.shape(g)}, the value {np.shape(outer[k])}")
        if why:
            raise AssertionError(f"{op}: vjp's gradient for the outer value {k} {why}")
        if not _is_float(outer[k]):
            raise AssertionError(f"{op}: vjp returned a gradient for the outer value {k}, which is discrete")
    grads = _call_vjp(op, lambda i, c, **a: grads, inputs, cotangents, full_attrs)
    return grads, og


def check_forward_outer(op, model, inputs, outer: dict, attrs=None, *, rtol=1e-12, atol=1e-12,
                        runner: str = "onnx.reference") -> CheckResult:
    """`model(inputs, outer, **attrs)` against onnx.reference running the node with the outer values fed
    (`run_outer`); records "forward" for the outputs and for OUTER."""
    info = op_info(op)
    want = run_outer(op, inputs, attrs, outer, runner=runner)
    got = model(list(inputs), dict(outer), **info.with_defaults(attrs))
    worst = compare_outputs(op, got, want, rtol=rtol, atol=atol, what="the model")
    for k in range(len(want)):
        record(op, info.output_name(k), "forward")
    record(op, OUTER, "forward")
    shown = _shapes_text(inputs) + "; " + _outer_text(outer)
    return CheckResult("forward", op, [info.output_name(k) for k in range(len(want))],
                       f"inputs {shown}, attributes {_attr_text(attrs)}, tolerance {atol:.0e} + {rtol:.0e}·max|y|",
                       inputs=shown, attrs=_attr_text(attrs), error=worst.err, tol=worst.tol,
                       notes=f"model = {runner} with the outer values fed, tolerance {atol:.0e} + "
                             f"{rtol:.0e}·max|y|")


def check_vjp_fd_outer(op, vjp, inputs, outer: dict, attrs=None, *, seed=0, n_dirs=2, eps=1e-6, rtol=1e-6,
                       atol=1e-7, runner: str = "onnx.reference") -> CheckResult:
    """Finite differences of onnx.reference (the node with the outer values fed) against `vjp`'s gradients of the
    formal inputs and of every float outer value, as check_vjp_fd does for the inputs: for `n_dirs` random directions
    u of each, (vᵀf(x+εu) − vᵀf(x−εu))/2ε against ⟨gradient, u⟩, v a random cotangent on every float output.
    `runner` runs the node (run_outer)."""
    info = op_info(op)
    inputs, outer = list(inputs), dict(outer)
    full = info.with_defaults(attrs)
    rng = np.random.default_rng(seed)
    outs = run_outer(op, inputs, attrs, outer, runner=runner)
    cot = [values.draw_like(y, rng) for y in outs]
    grads, og = call_outer(op, vjp, inputs, cot, outer, full)
    checked, none, worst = [], [], _Worst()

    def objective(xs, env):
        ys = run_outer(op, xs, attrs, env, len(outs), runner=runner)
        return sum(values.dot(v, y) for v, y in zip(cot, ys) if v is not None)

    def directional(g, x, move):
        for _ in range(n_dirs):
            u = values.draw_like(x, rng) if values.is_sequence(x) else rng.standard_normal(np.shape(x))
            fd = (move(values.add_scaled(x, eps, u)) - move(values.add_scaled(x, -eps, u))) / (2 * eps)
            an = values.dot(g, u)
            err, tol = abs(fd - an), atol + rtol * max(abs(fd), abs(an), 1.0)
            if not err <= tol:
                return fd, an, err, tol
            worst.add(err, tol)
        return None

    for i, g in enumerate(grads):
        name, shown = info.input_name(i), _shown_name(info, i)
        if g is None:
            _record_none(op, i, inputs[i], none, vjp, outs)
            continue
        bad = directional(g, inputs[i], lambda x: objective(inputs[:i] + [x] + inputs[i + 1:], outer))
        if bad:
            raise AssertionError(f"{op}: gradient of input {shown} disagrees with finite differences of "
                                 f"{runner}: vᵀJu = {bad[0]:.10g}, vjp gives {bad[1]:.10g}, error "
                                 f"{bad[2]:.3e} > tolerance {bad[3]:.1e}")
        record(op, name, "fd", vjp, data=(inputs, attrs))
        checked.append(shown)
    for k, g in og.items():
        if g is None:
            if _is_float(outer[k]):
                record(op, OUTER, "none", vjp, detail=k)
                none.append(k)
            continue
        bad = directional(g, outer[k], lambda x: objective(inputs, {**outer, k: x}))
        if bad:
            raise AssertionError(f"{op}: gradient of the outer value {k} disagrees with finite differences of "
                                 f"{runner}: vᵀJu = {bad[0]:.10g}, vjp gives {bad[1]:.10g}, error "
                                 f"{bad[2]:.3e} > tolerance {bad[3]:.1e}")
        record(op, OUTER, "fd", vjp, detail=k, data=(inputs, attrs))  # the verdict reads a first fd record's call
        checked.append(f"outer {k}")
    record_types(op, inputs, outs)
    record(op, "", "called", vjp)
    for k, y in enumerate(outs):
        if cot[k] is not None and checked:
            record(op, info.output_name(k), "fd", vjp)
    shown = _shapes_text(inputs) + "; " + _outer_text(outer)
    return CheckResult("finite-difference", op, checked,
                       f"inputs {shown}, attributes {_attr_text(attrs)}, {n_dirs} random directions each, ε={eps:g}",
                       none, inputs=shown, attrs=_attr_text(attrs), error=worst.err, tol=worst.tol,
                       notes=f"{n_dirs} directions, ε={eps:g}; outer values fed as graph inputs"
                             + ("" if runner == "onnx.reference" else f"; run by {runner}, float64"))


def check_vjp_torch_outer(op, vjp, twin, inputs, outer: dict, attrs=None, *, seed=0, rtol=1e-10,
                          atol=1e-12, runner: str = "onnx.reference") -> CheckResult:
    """`vjp` against PyTorch autograd of `twin(*tensors, outer={name: tensor}, **attrs)`, for the formal inputs and
    the outer values; the twin's forward is first compared with onnx.reference (the node with the outer values fed)."""
    import torch

    from .checks import compare_with_torch, torch_gradients, torch_leaves

    info = op_info(op)
    inputs, outer = list(inputs), dict(outer)
    full = info.with_defaults(attrs)
    want = run_outer(op, inputs, attrs, outer, runner=runner)
    tens = torch_leaves(inputs)
    env = {k: torch.tensor(np.asarray(v), requires_grad=_is_float(v)) for k, v in outer.items()}
    got = twin(*tens, outer=env, **full)
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    if len(want) == 1 and values.is_sequence(want[0]) and (not got or not values.is_sequence(got[0])):
        got = [got]
    compare_outputs(op, [[e.detach().numpy() for e in g] if values.is_sequence(g) else g.detach().numpy()
                         for g in got], want, rtol=rtol, atol=atol, what="the torch twin")
    rng = np.random.default_rng(seed)
    cot = [values.draw_like(y, rng) for y in want]
    grads, og = call_outer(op, vjp, inputs, cot, outer, full)
    names = list(env)
    tg = torch_gradients(tens + [env[k] for k in names], got, cot)
    tin, tout = tg[:len(tens)], dict(zip(names, tg[len(tens):]))
    checked, none, worst = [], [], _Worst()

    def compare(mine, theirs, x, what):
        compare_with_torch(op, what, mine, theirs, x, rtol, atol, worst)

    for i, g in enumerate(grads):
        if g is None:
            _record_none(op, i, inputs[i], none, vjp, want)
            continue
        compare(g, tin[i], inputs[i], f"input {_shown_name(info, i)}")
        record(op, info.input_name(i), "torch", vjp)
        checked.append(_shown_name(info, i))
    for k, g in og.items():
        if g is None:
            continue
        compare(g, tout[k], outer[k], f"the outer value {k}")
        record(op, OUTER, "torch", vjp, detail=k)
        checked.append(f"outer {k}")
    record_types(op, inputs, want)
    shown = _shapes_text(inputs) + "; " + _outer_text(outer)
    return CheckResult("PyTorch autograd", op, checked,
                       f"inputs {shown}, attributes {_attr_text(attrs)}, tolerance {rtol:.0e}", none, inputs=shown,
                       attrs=_attr_text(attrs), error=worst.err, tol=worst.tol)


def check_vjp_symbolic_outer(op, outer: dict, outputs: dict, cotangents: dict, rule: dict, *, vjp, call: list,
                             attrs: dict | None = None, samples: int = 3, seed: int = 0, rtol: float = 1e-9,
                             atol: float = 1e-12, runner: str = "onnx.reference") -> CheckResult:
    """The hand-written rule for the outer values proved equal to Jᵀḡ on a SymPy instance, then `vjp`'s outer
    gradients tied to it at sampled points, as check_vjp_symbolic does for inputs.

    outer: outer name -> matrix of symbols; outputs: output name -> matrix of expressions in them; cotangents: output
    name -> matrix of symbols (for a sequence output, a list with one matrix per element, as check_vjp_symbolic
    takes it); rule: outer name -> matrix of expressions (the rule a reader writes); call: the node's inputs in schema
    order, as NumPy values (cond)."""
    from .symbolic import _flat, _numeric, check_closed_form, jt_entry, jt_terms, vanishes

    info = op_info(op)
    for name in list(outputs) + list(cotangents):
        if info.formal(name).role != "output":
            raise KeyError(f"{op}: {name} is not an output")
    check_closed_form(op, rule)
    terms = jt_terms(outputs, cotangents)
    for name, r in rule.items():
        if len(_flat(r)) != len(_flat(outer[name])):
            raise AssertionError(f"{op}: the rule for the outer value {name} has {len(_flat(r))} entries, the value "
                                 f"{len(_flat(outer[name]))}")
        for k, (xk, rk) in enumerate(zip(_flat(outer[name]), _flat(r))):
            d = vanishes(rk - jt_entry(terms, xk))
            if d != 0:
                raise AssertionError(f"{op}: the rule for the outer value {name}[{k}] differs from Jᵀḡ by {d}")
    full = info.with_defaults(attrs)
    rng = np.random.default_rng(seed)
    symbols = sorted({s for m in list(outer.values()) + list(cotangents.values()) for e in _flat(m)
                      for s in sp.sympify(e).free_symbols}, key=str)
    worst = _Worst()
    for _ in range(samples):
        point = {s: sp.Float(float(rng.standard_normal() * 1.5), 30) for s in symbols}
        env = {k: _numeric(m, point).reshape(np.shape(np.array(m.tolist(), dtype=object)))
               for k, m in outer.items()}
        outs = run_outer(op, call, attrs, env, runner=runner)
        cot = [None if cotangents.get(info.output_name(k)) is None else
               [_numeric(c, point).reshape(np.shape(e)) for c, e in zip(cotangents[info.output_name(k)], y)]
               if values.is_sequence(y) else  # a sequence output: one matrix of symbols per element
               _numeric(cotangents[info.output_name(k)], point).reshape(np.shape(y)) for k, y in enumerate(outs)]
        _, og = call_outer(op, vjp, call, cot, env, full)
        for name in rule:
            got = np.zeros(np.shape(env[name])) if og[name] is None else np.asarray(og[name], np.float64)
            want = _numeric(np.array(_flat(rule[name]), dtype=object), point).ravel()
            err = _max_err(got.ravel(), want)
            tol = atol + rtol * max(float(np.max(np.abs(want))) if want.size else 0.0, 1.0)
            if not err <= tol:
                raise AssertionError(f"{op}: vjp's gradient for the outer value {name} differs from the proved rule "
                                     f"by {err:.3e} (tolerance {tol:.1e}): vjp gives {got.ravel()}, the rule {want}")
            worst.add(err, tol)
    record(op, OUTER, "rule", vjp, detail=", ".join(rule))
    return CheckResult("symbolic", op, [f"outer {k}" for k in rule],
                       f"the rule for the outer values equals Jᵀḡ on the SymPy instance, and vjp equals the rule "
                       f"at {samples} sampled points", inputs="SymPy instance", attrs=_attr_text(attrs),
                       error=worst.err, tol=worst.tol, notes=f"rule = Jᵀḡ; vjp = rule at {samples} points")


def _engine_cotangents(outs, seed):
    rng = np.random.default_rng(seed)
    return [values.draw_like(y, rng, np.float32) for y in outs]


def _round32(x):
    if values.is_sequence(x):
        return [_round32(e) for e in x]
    return None if x is None else (np.asarray(x, np.float32).astype(np.float64) if _is_float(x) else np.asarray(x))


def check_vjp_engine_outer(op, vjp, engine: str, inputs, outer: dict, attrs=None, *, seed=0, rtol=None, atol=None,
                           disagree: dict[str, str] | None = None, runner: str = "onnx.reference",
                           forward: str = "onnx.reference") -> CheckResult:
    """`vjp`'s gradients of the outer values against an engine's gradient of the model of the node with the outer
    values as graph inputs (`outer_model`): engine "ort" (ONNX Runtime training's gradient graph, float32, at the
    float32-rounded point; proofkit.wholemodel.ort_model_gradient) or "onnxad" (onnx-ad's adjoint model, float64, run
    by `runner`; proofkit.wholemodel.onnxad_model_gradient). Both draw the same cotangents for the same `seed`. A
    refusal is recorded and shown as one (ONNX Runtime's missing builder or unreachable inputs as "ort-none"), never
    as a comparison; a difference is allowed only where `disagree` names the outer value with its reason. `forward`
    runs the node for the outputs' shapes (run_outer's runner)."""
    from . import wholemodel as wm
    from .ortgrad import float32_graphs

    if engine not in ("ort", "onnxad"):
        raise ValueError(f"engine is 'ort' or 'onnxad', not {engine!r}")
    info = op_info(op)
    disagree = dict(disagree or {})
    full = info.with_defaults(attrs)
    ort = engine == "ort"
    if ort:
        inputs, outer = [_round32(x) for x in inputs], {k: _round32(v) for k, v in outer.items()}
    outs = run_outer(op, inputs, attrs, outer, runner=forward)
    cot = _engine_cotangents(outs, seed)
    params = [k for k, v in outer.items() if _is_float(v)]
    name = "ONNX Runtime" if ort else "onnx-ad"
    where = (f"inputs {_shapes_text(inputs)}; {_outer_text(outer)}, attributes {_attr_text(attrs)}"
             + (", float32 at opset 21" if ort else f", float64, run by {runner}"))
    model = outer_model(op, inputs, float32_graphs(attrs or {}) if ort else attrs, outer, len(outs))
    if ort:  # float inputs fed in float32, as the node's graphs are
        for v in model.graph.input:
            if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type == onnx.TensorProto.DOUBLE:
                v.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
            elif v.type.HasField("sequence_type"):
                t = v.type.sequence_type.elem_type.tensor_type
                if t.elem_type == onnx.TensorProto.DOUBLE:
                    t.elem_type = onnx.TensorProto.FLOAT
    feeds = {k: (values.cast(v, np.float32) if ort and _is_float(v) else v) for k, v in _feeds(inputs, outer).items()}
    seeds = {}
    elem = onnx.TensorProto.FLOAT if ort else onnx.TensorProto.DOUBLE
    for k, (y, c) in enumerate(zip(outs, cot)):
        if c is None:
            continue
        if not values.is_sequence(y):
            seeds[f"y{k}"] = c
            continue
        for j, cj in enumerate(c):  # a sequence output: element j read by SequenceAt, as the objective reads it
            if cj is None:
                continue
            model.graph.node.extend([
                helper.make_node("Constant", [], [f"y{k}_at{j}"],
                                 value=helper.make_tensor(f"y{k}_at{j}", onnx.TensorProto.INT64, [], [j])),
                helper.make_node("SequenceAt", [f"y{k}", f"y{k}_at{j}"], [f"y{k}_{j}"])])
            model.graph.output.append(helper.make_tensor_value_info(f"y{k}_{j}", elem, list(np.shape(cj))))
            seeds[f"y{k}_{j}"] = cj
    try:
        theirs = _ort_gradient(model, feeds, seeds, params) if ort else _onnxad_gradient(model, feeds, seeds, params,
                                                                                          runner)
    except wm.EngineRefused as e:
        text = str(e)
        # ONNX Runtime's gradient graph has no edge to the value: no builder, an input unreachable from the loss, or
        # (1.19.2, If) the builder looking for an outer value among the node's formal inputs, where it is not
        untraced = any(f"namewhichdoesnotexist:{k}for" in text.replace(" ", "") for k in params)
        if untraced:  # which outer value it looks for first varies from run to run: the message without the name
            text = (text.split(": ")[0] + ": its builder looks for an outer value among the node's formal inputs, "
                    "where it is not (\"Attempting to get index by a name which does not exist\")")
        kind = ("ort-none" if ("has not been registered" in text or "unreachable from the output" in text or untraced)
                else "ort-refused") if ort else "onnxad-refused"
        record(op, OUTER, kind, vjp, detail=text, data={"case": where})
        if disagree:
            raise AssertionError(f"{op}: a disagreement with {name} is declared, but it gave no gradient: {text}")
        outcome = NOTHING_COMPARED if kind == "ort-none" else REFUSED if ort else REFUSED_ONNXAD
        return CheckResult(name, op, [], summary=f"{name} check of {op} (outer values): {text} ({where})",
                           inputs=_shapes_text(inputs) + "; " + _outer_text(outer), attrs=_attr_text(attrs),
                           notes=text, outcome=outcome)
    _, og = call_outer(op, vjp, inputs, cot, outer, full)
    rtol = rtol if rtol is not None else (1e-4 if ort else 1e-9)
    atol = atol if atol is not None else (1e-5 if ort else 1e-12)
    checked, missing, witnesses, worst = [], [], [], _Worst()
    for k in params:
        if k not in theirs:
            record(op, OUTER, "ort-none" if ort else "onnxad-none", vjp, detail=k)
            missing.append(k)
            continue
        mine = np.zeros(np.shape(outer[k])) if og[k] is None else np.asarray(og[k], np.float64)
        c = compare_with_engine(op, name, f"the outer value {k}", mine, np.asarray(theirs[k], np.float64),
                                rtol=rtol, atol=atol, declared=disagree.get(k))
        if not c.agree:
            witnesses.append(f"outer {k}: {name} differs ({c.why}); {disagree[k]}")
            record(op, OUTER, "ort-differs" if ort else "onnxad-differs", vjp, detail=disagree[k],
                   data={"what": c.what, "case": where})
            continue
        worst.add(c.err, c.tol)
        record(op, OUTER, "ort" if ort else "onnxad", vjp, detail=k)
        checked.append(f"outer {k}")
    notes = "; ".join((["no gradient for " + ", ".join(missing)] if missing else []) + witnesses)
    fields = dict(inputs=_shapes_text(inputs) + "; " + _outer_text(outer), attrs=_attr_text(attrs), notes=notes)
    if not checked:
        return CheckResult(name, op, [], summary=f"{name} check of {op} (outer values): none agrees; {where}; {notes}",
                           outcome="differs (declared)" if witnesses else NOTHING_COMPARED, **fields)
    return CheckResult(name, op, checked, where + f", tolerance {rtol:.0e}", error=worst.err, tol=worst.tol,
                       **fields)


def _ort_gradient(model, feeds, seeds, params) -> dict:
    """ONNX Runtime training's gradient graph of the float32 model (proofkit.wholemodel's objective and builder), fed
    as it is: sequences as lists (proofkit.wholemodel.ort_model_gradient takes tensors only)."""
    from .wholemodel import _with_loss, run_gradient_graph

    m, cot_feeds = _with_loss(model, seeds, np.float32)
    return run_gradient_graph(m, params, {**feeds, **cot_feeds})


def _onnxad_gradient(model, feeds, seeds, params, runner) -> dict:
    """onnx-ad's adjoint model of the model, seeded, run by `runner` in float64 (proofkit.wholemodel.run_adjoint,
    with sequences fed as lists)."""
    from .wholemodel import run_adjoint

    return run_adjoint(model, params, seeds, feeds, runner)


def ort_builders() -> list[str]:
    """The operators ONNX Runtime training's gradient builder registry holds a builder class for, read from its
    compiled module (the `Get<Op>Gradient` classes of onnxruntime::training), sorted: where a chapter says ONNX
    Runtime has no builder for an operator whose GradientGraphBuilder fails before looking for one (If), this is the
    executed evidence, checked beside an operator it has (Tanh)."""
    import re
    from pathlib import Path

    import onnxruntime

    found = set()
    for so in Path(onnxruntime.__file__).parent.glob("capi/onnxruntime_pybind11_state*"):
        found |= {m.decode() for m in re.findall(rb"N11onnxruntime8training\d+Get(\w+?)GradientE", so.read_bytes())}
    return sorted(found)


def outer_missing(op: str, vjp) -> list[str]:
    """What the outer values lack of the evidence a differentiable input needs (empty: they have it all): finite
    differences, a proved rule tied to vjp, an ONNX Runtime check that compared or found no gradient, an onnx-ad check
    (a comparison, a declared difference or a recorded refusal)."""
    from .evidence import facts

    got = facts(op, OUTER, vjp)
    missing = [k for k in ("fd", "rule") if k not in got]
    if not got & {"ort", "ort-none", "ort-differs"}:
        missing.append("ort")
    if not got & {"onnxad", "onnxad-none", "onnxad-differs", "onnxad-refused"}:
        missing.append("onnxad")
    if "none" in got:
        missing.append("a gradient (vjp returned None for an outer value)")
    return missing
