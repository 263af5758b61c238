"""Whole models, every engine: the gradient of one model by the book's reverse mode (proofkit.reverse), by finite
differences of `onnx.reference`, by PyTorch autograd on a twin with the same weights, by ONNX Runtime training's
gradient graph and by onnx-ad's adjoint model (run with `onnx.reference` and with ONNX Runtime), compared in one table.

Each engine differentiates the same objective, Σ over the seeded outputs of ⟨output, cotangent⟩, with respect to the
same parameters (the float graph inputs and initializers). An engine that refuses the model gives its own words, shown
as a refusal and never as a comparison. Where an engine differs from the book, `localize` runs that engine on every
node of the model alone, at the values and cotangents of the book's pass, and names the nodes whose rule differs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .reverse import Gradients, forward, gradients, node_attributes, parameters

#: The name of the objective the ONNX Runtime graph differentiates (unlikely to clash with a model's own names).
LOSS = "proofkit_objective"
ENGINES = ("finite differences", "PyTorch", "ONNX Runtime", "ONNX Runtime, optional outputs named",
           "onnx-ad (onnx.reference)", "onnx-ad (ONNX Runtime)")


# --- the model, rewritten for an engine -------------------------------------------------------------------------


def with_parameters_as_inputs(model: onnx.ModelProto, params: list[str]) -> onnx.ModelProto:
    """The same model with the float initializers in `params` moved to graph inputs: onnx-ad differentiates graph
    inputs only."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    moved = [t for t in m.graph.initializer if t.name in params]
    keep = [t for t in m.graph.initializer if t.name not in params]
    del m.graph.initializer[:]
    m.graph.initializer.extend(keep)
    known = {v.name for v in m.graph.input}
    for t in moved:
        if t.name not in known:
            m.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    return m


def as_float32(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same model in float32: double initializers, graph inputs, outputs, value infos and Cast targets, and the
    graphs its nodes hold (If's branches, Loop's and Scan's bodies)."""
    from .ortgrad import float32_graph

    m = onnx.ModelProto()
    m.CopyFrom(model)
    m.graph.CopyFrom(float32_graph(model.graph))
    return m


def _with_loss(model: onnx.ModelProto, cotangents: dict, dtype) -> tuple[onnx.ModelProto, dict]:
    """The model with one more output, `LOSS` = Σ ReduceSum(output · cotangent) over the seeded outputs, the
    cotangents fed as inputs named `cot_<output>` (returned as feeds)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    terms, feeds = [], {}
    for k, (name, g) in enumerate(cotangents.items()):
        g = np.asarray(g, dtype)
        feeds[f"cot_{name}"] = g
        m.graph.input.append(helper.make_tensor_value_info(f"cot_{name}", elem, list(g.shape)))
        m.graph.node.extend([helper.make_node("Mul", [name, f"cot_{name}"], [f"loss_p{k}"]),
                             helper.make_node("ReduceSum", [f"loss_p{k}"], [f"loss_s{k}"], keepdims=0)])
        terms.append(f"loss_s{k}")
    total = terms[0]
    for k, t in enumerate(terms[1:]):  # a chain of Add: ONNX Runtime 1.19 has no gradient builder for Sum
        m.graph.node.append(helper.make_node("Add", [total, t], [f"loss_acc{k}"]))
        total = f"loss_acc{k}"
    m.graph.node.append(helper.make_node("Identity", [total], [LOSS]))
    del m.graph.output[:]
    m.graph.output.append(helper.make_tensor_value_info(LOSS, elem, []))
    return m, feeds


# --- the engines ------------------------------------------------------------------------------------------------


class EngineRefused(Exception):
    """The engine gave no gradient for the model; the message quotes its own words."""


def _seeds(model, values, cotangents):
    out = {}
    for o in model.graph.output:
        y = values[o.name]
        if np.issubdtype(y.dtype, np.floating):
            out[o.name] = np.asarray(cotangents.get(o.name, np.ones_like(y)), np.float64)
    return out


def with_optional_outputs(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same model with every node's omitted optional outputs named (and left unused): SoftmaxCrossEntropyLoss's
    log_prob, LayerNormalization's Mean and InvStdDev. ONNX Runtime's gradient builders for these operators read
    those outputs, and fail on a node that omits them."""
    from .schema import op_info

    m = onnx.ModelProto()
    m.CopyFrom(model)
    for k, node in enumerate(m.graph.node):
        info = op_info(node.op_type)
        if info.outputs and info.outputs[-1].variadic:
            continue
        names = list(node.output) + [""] * (len(info.outputs) - len(node.output))
        names = [n or f"{node.op_type}_{k}_{f.name}" for n, f in zip(names, info.outputs)]
        if node.op_type == "BatchNormalization" and not any(a.name == "training_mode" and a.i for a in node.attribute):
            continue  # its running statistics exist in training mode only
        del node.output[:]
        node.output.extend(names)
    return m


def _ort_build(m, params):
    """ONNX Runtime's GradientGraphBuilder on the model with the objective LOSS, built; the parameters it gives no
    gradient (its error names `<p>_grad`) are dropped and the build retried. Returns the builder and the parameters
    it differentiates; raises RuntimeError with ONNX Runtime's words."""
    from onnxruntime.capi._pybind_state import GradientGraphBuilder

    from .ortgrad import OPSET, IR_VERSION, quiet_stderr

    for entry in m.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = min(entry.version, OPSET)
    m.ir_version = min(m.ir_version, IR_VERSION)
    wanted = set(params)
    while True:
        try:
            with quiet_stderr():
                builder = GradientGraphBuilder(m.SerializeToString(), {LOSS}, wanted, LOSS)
                builder.build()
            return builder, wanted
        except RuntimeError as e:
            missing = re.search(r"failed to find NodeArg by name: (\w+)_grad", str(e))
            if missing and missing.group(1) in wanted:  # no gradient for this parameter: ask for the others
                wanted.discard(missing.group(1))
                continue
            raise


def ort_model_gradient(model, feeds, cotangents, params, *, declare_outputs: bool = False) -> dict[str, np.ndarray]:
    """ONNX Runtime training's gradient graph of the model, built by its GradientGraphBuilder and run on its CPU
    provider, in float32 (its gradient builders emit float32 nodes: a double model fails to build, see
    `ort_double_refusal`), at opset 21 and IR version 10 (the newest ONNX Runtime 1.19 reads). Parameters the builder
    gives no gradient (Clip's max) are left out of the result, as the single-node check does. With
    `declare_outputs`, the nodes' omitted optional outputs are named first (`with_optional_outputs`)."""
    m32 = as_float32(with_parameters_as_inputs(with_optional_outputs(model) if declare_outputs else model, params))
    m32, cot_feeds = _with_loss(m32, cotangents, np.float32)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    all_feeds = {**{k: np.asarray(v) for k, v in inits.items() if k in params}, **feeds}
    all_feeds = {k: (np.asarray(v, np.float32) if np.issubdtype(np.asarray(v).dtype, np.floating) else np.asarray(v))
                 for k, v in all_feeds.items()}
    all_feeds.update(cot_feeds)
    return run_gradient_graph(m32, params, all_feeds)


def run_gradient_graph(model, params, feeds: dict) -> dict:
    """ONNX Runtime training's gradient graph of `model` (float32, with the objective LOSS: `_with_loss`), built by
    its GradientGraphBuilder (`_ort_build`) and run on its CPU provider on `feeds` (sequences as lists): the gradient
    per parameter it differentiates. Raises EngineRefused with ONNX Runtime's words."""
    import onnxruntime as ort

    from .ortgrad import _reason, ort_version, quiet_stderr, session_options

    ort.set_default_logger_severity(3)
    try:
        builder, wanted = _ort_build(model, params)
    except RuntimeError as e:
        raise EngineRefused(f"ONNX Runtime {ort_version()} could not build the gradient graph: "
                            f"{_reason(str(e))}") from None
    options = session_options(3)
    try:
        with quiet_stderr():
            sess = ort.InferenceSession(builder.get_model(), options, providers=["CPUExecutionProvider"])
            names = {i.name for i in sess.get_inputs()}
            got = dict(zip([o.name for o in sess.get_outputs()],
                           sess.run(None, {k: v for k, v in feeds.items() if k in names})))
    except Exception as e:  # noqa: BLE001 - the graph was built and does not run: ONNX Runtime's words
        raise EngineRefused(f"ONNX Runtime {ort_version()} built the gradient graph but could not run it: "
                            f"{_reason(str(e).split('Status Message: ')[-1])}") from None
    return {p: np.asarray(got[f"{p}_grad"], np.float64) for p in wanted if f"{p}_grad" in got}


def ort_double_refusal(model, feeds, cotangents, params) -> str:
    """What ONNX Runtime says when asked for the gradient graph of the model in float64, its optional outputs named
    (why the table runs it in float32); the empty string if it builds."""
    from .ortgrad import _reason

    m, _ = _with_loss(with_parameters_as_inputs(with_optional_outputs(model), params), cotangents, np.float64)
    try:
        _ort_build(m, params)
    except RuntimeError as e:
        return _reason(str(e))
    return ""


def onnxad_model_gradient(model, feeds, cotangents, params, *, runner="onnx.reference") -> dict[str, np.ndarray]:
    """onnx-ad's adjoint model of the model (parameters moved to graph inputs), seeded with the cotangents, run with
    `onnx.reference` or with ONNX Runtime (float64, optimizations off, opset relabelled 21: proofkit.onnxad)."""
    m = with_parameters_as_inputs(model, params)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    all_feeds = {**{k: v for k, v in inits.items() if k in params}, **{k: np.asarray(v) for k, v in feeds.items()}}
    return run_adjoint(m, params, cotangents, all_feeds, runner)


def run_adjoint(model, params, seeds: dict, feeds: dict, runner: str = "onnx.reference") -> dict:
    """onnx-ad's adjoint model of `model` (whose parameters are graph inputs) for the outputs in `seeds`, seeded with
    them and run by `runner` ("onnx.reference" or "onnxruntime") on `feeds` (sequences as lists): the gradient per
    parameter. Raises EngineRefused with onnx-ad's or the runner's words."""
    import onnx_ad
    from onnx.reference import ReferenceEvaluator

    from .onnxad import _run_with_onnxruntime, onnxad_version

    try:
        adjoint = onnx_ad.reverse(model, inputs=list(params), outputs=list(seeds), prefix="adj_", layout="onnx")
    except Exception as e:  # noqa: BLE001 - onnx-ad's own refusal, quoted
        raise EngineRefused(f"onnx-ad {onnxad_version()} could not build the adjoint model: {type(e).__name__}: "
                            f"{' '.join(str(e).split())[:300]}") from None
    feeds = {**feeds, **{f"adj_{name}": np.asarray(g)[..., None] for name, g in seeds.items()}}
    wanted = [f"adj_{p}" for p in params]
    try:
        with np.errstate(all="ignore"):
            if runner == "onnxruntime":
                got = _run_with_onnxruntime(adjoint, wanted, feeds)
            else:
                needed = {i.name for i in adjoint.graph.input}
                got = ReferenceEvaluator(adjoint).run(wanted, {k: v for k, v in feeds.items() if k in needed})
    except Exception as e:  # noqa: BLE001 - the adjoint model was built and the runner could not run it
        raise EngineRefused(f"onnx-ad {onnxad_version()} built the adjoint model, which "
                            f"{'ONNX Runtime' if runner == 'onnxruntime' else 'onnx.reference'} could not run: "
                            f"{type(e).__name__}: {' '.join(str(e).split())[:300]}") from None
    return {p: np.asarray(g)[..., 0] for p, g in zip(params, got)}


def torch_model_gradient(twin, model, feeds, cotangents, params) -> dict[str, np.ndarray]:
    """PyTorch autograd through `twin(values) -> {output name: tensor}`, where `values` maps every graph input and
    initializer to a float64 tensor (integer ones as they are); the same weights as the ONNX model."""
    import torch

    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    values = {}
    for k, v in {**inits, **feeds}.items():
        v = np.asarray(v)
        values[k] = torch.tensor(v, requires_grad=k in params and np.issubdtype(v.dtype, np.floating))
    outs = twin(values)
    total = sum((outs[name] * torch.tensor(g)).sum() for name, g in cotangents.items())
    total.backward()
    return {p: (values[p].grad.numpy() if values[p].grad is not None else np.zeros(np.shape(values[p].detach())))
            for p in params}


def fd_directions(model, feeds, cotangents, grads: dict, *, directions: int = 3, eps: float = 1e-6, seed: int = 1):
    """Central differences of the objective along random directions of all parameters at once, each against the
    directional derivative Σ⟨grad, direction⟩ of `grads`: one (finite difference, directional derivative) pair per
    direction."""
    from .reverse import objective

    rng = np.random.default_rng(seed)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    base = {**inits, **{k: np.asarray(v) for k, v in feeds.items()}}
    params = list(grads)
    pairs = []
    for _ in range(directions):
        d = {p: rng.standard_normal(np.shape(base[p])) for p in params}

        def shifted(s):
            values = {p: (base[p] + s * eps * d[p]).astype(base[p].dtype) for p in params}
            m = onnx.ModelProto()
            m.CopyFrom(model)
            keep = [t for t in m.graph.initializer if t.name not in values]
            del m.graph.initializer[:]
            m.graph.initializer.extend(keep + [numpy_helper.from_array(values[p], p) for p in params if p in inits])
            return objective(m, {k: values.get(k, v) for k, v in feeds.items()}, cotangents)
        fd = (shifted(1) - shifted(-1)) / (2 * eps)
        pairs.append((fd, sum(float(np.sum(np.asarray(grads[p], np.float64) * d[p])) for p in params)))
    return pairs


# --- the comparison ---------------------------------------------------------------------------------------------


@dataclass
class EngineRow:
    engine: str
    difference: float | None = None  # largest |engine − book| over all parameters, relative to max |book|
    refused: str = ""
    missing: list[str] = field(default_factory=list)  # parameters the engine gave no gradient
    grads: dict = field(default_factory=dict, repr=False)


def relative_difference(got: dict, want: dict) -> float:
    scale = max(float(np.max(np.abs(w))) if w.size else 0.0 for w in want.values())
    worst = max((float(np.max(np.abs(np.asarray(got[p]) - want[p]))) if want[p].size else 0.0)
                for p in want if p in got)
    return worst / max(scale, 1e-300)


def compare(model, feeds, cotangents=None, *, twin=None, fd_eps: float = 1e-6) -> tuple[Gradients, list[EngineRow]]:
    """The book's reverse mode, then every engine on the same model, inputs and cotangents."""
    cotangents = dict(cotangents or {})
    book = gradients(model, feeds, cotangents)
    seeds = _seeds(model, forward(model, {k: np.asarray(v) for k, v in feeds.items()}), cotangents)
    params = parameters(model)
    rows = []
    pairs = fd_directions(model, feeds, seeds, book.grads, eps=fd_eps)
    rows.append(EngineRow("finite differences", max(abs(f - r) / max(abs(f), abs(r), 1e-300) for f, r in pairs)))
    runs = [("PyTorch", (lambda: torch_model_gradient(twin, model, feeds, seeds, params)) if twin else None),
            ("ONNX Runtime", lambda: ort_model_gradient(model, feeds, seeds, params)),
            ("ONNX Runtime, optional outputs named", lambda: ort_model_gradient(model, feeds, seeds, params,
                                                                                declare_outputs=True)),
            ("onnx-ad (onnx.reference)", lambda: onnxad_model_gradient(model, feeds, seeds, params)),
            ("onnx-ad (ONNX Runtime)", lambda: onnxad_model_gradient(model, feeds, seeds, params,
                                                                     runner="onnxruntime"))]
    for engine, run in runs:
        if run is None:
            rows.append(EngineRow(engine, refused="no twin"))
            continue
        try:
            got = run()
        except EngineRefused as e:
            rows.append(EngineRow(engine, refused=str(e)))
            continue
        missing = [p for p in params if p not in got]
        rows.append(EngineRow(engine, relative_difference(got, book.grads) if len(missing) < len(params) else None,
                              missing=missing, grads=got))
    return book, rows


def localize(model, feeds, cotangents, book: Gradients, engine: str, *, rtol=1e-6, atol=1e-9) -> list[str]:
    """The nodes whose single-node gradient by `engine` ("ONNX Runtime" or "onnx-ad") differs from the chapter's
    vjp at the values and cotangents of the book's pass (each node alone, the kit's single-node engine checks):
    where a whole-model difference comes from."""
    from .ortgrad import NoGradientBuilder, ort_gradient
    from .onnxad import NoOnnxAdGradient, onnxad_gradient
    from .reverse import rule_of, _NO_RULE
    from .schema import op_info

    values = book.values
    found = []
    for index, node in enumerate(model.graph.node):
        seeds = [book.cotangents.get(o) for o in node.output]
        if all(g is None for g in seeds):
            continue
        ins = [values[i] if i else None for i in node.input]
        info = op_info(node.op_type)
        attrs = node_attributes(node)
        vjp = rule_of(node.op_type)
        if vjp is _NO_RULE:
            continue
        outs = [values[o] for o in node.output]
        seeds = [g if g is not None else (np.zeros_like(y) if np.issubdtype(y.dtype, np.floating) else None)
                 for g, y in zip(seeds, outs)]
        mine = list(vjp(ins, seeds + [None] * (len(info.outputs) - len(seeds)), **info.with_defaults(attrs)))
        try:
            if engine == "ONNX Runtime":
                theirs = ort_gradient(node.op_type, ins, seeds, attrs)
                tol = (1e-4, 1e-5)
            else:
                theirs = onnxad_gradient(node.op_type, ins, seeds, attrs)
                tol = (rtol, atol)
        except (NoGradientBuilder, NoOnnxAdGradient) as e:
            found.append(f"{node.op_type} #{index}: {e}")
            continue
        for k, (a, b) in enumerate(zip(mine, theirs)):
            if a is None or b is None:
                if (a is None) != (b is None) and node.input[k] in book.dependent:
                    found.append(f"{node.op_type} #{index}: {info.input_name(k)}: "
                                 f"{'the book gives no gradient' if a is None else engine + ' gives none'}")
                continue
            if not np.allclose(b, a, rtol=tol[0], atol=tol[1] * max(1.0, float(np.max(np.abs(a))) if a.size else 1)):
                diff = np.argwhere(~np.isclose(b, a, rtol=tol[0], atol=tol[1]))
                at = tuple(int(v) for v in diff[0]) if len(diff) else ()
                found.append(f"{node.op_type} #{index}: {info.input_name(k)} at {at}: book {a[at]:.6g}, "
                             f"{engine} {np.asarray(b)[at]:.6g}")
    return found


def check_model_ort_defect(op: str, name: str, model, feeds: dict, cotangents: dict, want: dict, *, reason: str,
                           vjp, rtol: float = 1e-4, atol: float = 1e-5):
    """A wrong gradient of ONNX Runtime training that shows only in a model around `op` (a sequence edge it drops
    without an error, where the node alone is reported unreachable), asserted and recorded.

    ONNX Runtime's gradient of `model` (ort_model_gradient: float32, objective Σ⟨output, cotangent⟩) is compared with
    `want`, {graph input: the proof's gradient}, computed by the chapter from its vjp. Some input must differ by more
    than atol + rtol·max|want|, and ONNX Runtime must give one for every input in `want`; otherwise the check fails
    (the departure is gone, or became a refusal: update the chapter). The finding is recorded for `op`'s input `name`
    as "ort-differs" (a wrong value, with `reason`, the case and both gradients), as check_vjp_ort records a declared
    difference, and returned as a CheckResult whose outcome is "differs (declared)"."""
    from .checks import DIFFERS_DECLARED, CheckResult
    from .evidence import record
    from .findings import _array

    if not reason:
        raise ValueError("a declared defect needs its reason")
    try:
        theirs = ort_model_gradient(model, feeds, cotangents, list(want))
    except EngineRefused as e:
        raise AssertionError(f"{op}: a wrong gradient of ONNX Runtime is declared, but it gave none: {e}") from None
    nodes = " -> ".join(n.op_type for n in model.graph.node if n.op_type != "Constant")
    shown = "; ".join(f"{k} = {_array(np.asarray(v))}" for k, v in feeds.items())
    case = f"the model {nodes} (run in float32) at {shown}"
    differs, worst, values = [], [], {"engine": [], "the proof": []}
    for p, w in want.items():
        if p not in theirs:
            raise AssertionError(f"{op}: ONNX Runtime gives no gradient for {p}; the declared wrong value is gone")
        w, t = np.asarray(w, np.float64), np.asarray(theirs[p], np.float64)
        gap = float(np.max(np.abs(t - w))) if w.size else 0.0
        if t.shape != w.shape or gap > atol + rtol * (float(np.max(np.abs(w))) if w.size else 0.0):
            differs.append(p)
            worst.append(f"{p}: ONNX Runtime gives {_array(np.asarray(t, np.float32))}, the proof "
                         f"{_array(np.asarray(w, np.float32))}")
            values["engine"].append(f"{p}_grad = {_array(np.asarray(t, np.float32))}")
            values["the proof"].append(f"{p}_grad = {_array(np.asarray(w, np.float32))}")
    if not differs:
        raise AssertionError(f"{op}: ONNX Runtime agrees with the proof on {case}: the declared wrong gradient is "
                             "gone, update the chapter")
    values = {k: "; ".join(v) for k, v in values.items()}
    record(op, name, "ort-differs", vjp, detail=reason, data={"what": "wrong value", "case": case,
                                                              "values": values})
    return CheckResult("ONNX Runtime", op, [], summary=f"ONNX Runtime check of {op} in a model: {case}; "
                       + "; ".join(worst) + f"; {reason}", inputs=shown, attrs="default",
                       notes="; ".join(worst) + f" ({reason})", outcome=DIFFERS_DECLARED)
