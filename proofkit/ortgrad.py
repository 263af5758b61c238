"""ONNX Runtime training's own gradient of one node, executed: the third cross-check (Method 1 of ONNX's guide, for
the runtime that trains ONNX graphs).

The node is wrapped in a model whose loss is Σ_k sum(output_k · cotangent_k); ONNX Runtime's GradientGraphBuilder
(onnxruntime-training 1.19.2) builds the gradient graph of that loss with respect to the float inputs, and an
InferenceSession on the CPU provider runs it. ONNX Runtime 1.19 reads models up to IR version 10 and opset 21, so
the node is built at opset 21 (the operator resolves to its newest version up to 21) and runs in float32.
"""

from __future__ import annotations

import contextlib
import os
import re

import numpy as np

from .checks import (DIFFERS_DECLARED, NOTHING_COMPARED, REFUSED, CheckResult, _Worst, _as_list, _attr_text,
                     _call_vjp, _is_float, _shapes_text, _shown_name, compare_with_engine)
from .evidence import record
from .onnxrun import run_onnx
from .schema import op_info

#: The opset and IR version the gradient models are built at (the newest ONNX Runtime 1.19 reads).
OPSET, IR_VERSION = 21, 10


class NoGradientBuilder(Exception):
    """ONNX Runtime gave no gradient for the node; the message quotes ONNX Runtime's own.

    `refused` tells the two cases apart: False where ONNX Runtime cannot differentiate the operator at all (no gradient
    builder is registered for it, it cannot load the node at the opset it reads, or its graph has no gradient edge to
    the inputs: "unreachable from the output node(s)"; or the gradient operator its builder emits has no CPU kernel,
    ConvTransposeGrad), True where a builder exists but the runtime refused this node
    (its builder failed on these attributes, or the graph it built failed to run). A
    refusal is not a statement about the operator, so it never stands in for a comparison (proofkit.verdict)."""

    def __init__(self, message: str, *, refused: bool = False):
        super().__init__(message)
        self.refused = refused


def _reason(text: str) -> str:
    """ONNX Runtime's error without its source paths and C++ signatures: the part a reader needs."""
    text = text.split("[ONNXRuntimeError] :")[-1]
    text = re.sub(r"^\s*\d+\s*:\s*\w+\s*:\s*", "", text)
    text = re.sub(r"/onnxruntime_src/\S+:\d+\s+", "", text)
    if "onnxruntime::" in text:  # a C++ signature, return type included: not for readers
        text = re.sub(r"(?:\b[\w:<>*&]+\s+)?\S*onnxruntime::\S*?\([^()]*(\([^()]*\)[^()]*)*\)\s*", "", text, count=1)
    return " ".join(text.split())[:300]


@contextlib.contextmanager
def quiet_stderr():
    """ONNX Runtime's C++ logger writes to file descriptor 2, which a notebook would store; silence it."""
    fd = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(fd, 2)
        os.close(fd)


def _feeds(inputs, keep_types: bool = False):
    """Inputs without trailing omitted ones, their node input names ("" for an omitted one), and ONNX Runtime's feeds
    (float inputs as float32 unless `keep_types`, others as they are)."""
    inputs = list(inputs)
    while inputs and inputs[-1] is None:
        inputs.pop()
    names = [f"x{i}" if x is not None else "" for i, x in enumerate(inputs)]
    feeds = {n: (np.asarray(x, np.float32) if _is_float(x) and not keep_types else np.asarray(x))
             for n, x in zip(names, inputs) if x is not None}
    return inputs, names, feeds


def ort_version() -> str:
    import onnxruntime
    return onnxruntime.__version__


def ort_gradient(op, inputs, cotangents, attrs=None) -> list:
    """ONNX Runtime's gradient of Σ sum(output·cotangent) for every input: an array (float32 computation, returned as
    float64), or None where ONNX Runtime's graph has no gradient for that input (or the input is not float).

    Float inputs are fed as float32; integer and bool inputs as they are; omitted optional inputs stay omitted.
    Raises NoGradientBuilder when ONNX Runtime has no gradient builder for the operator, or fails to build the graph.
    """
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
    from onnxruntime.capi._pybind_state import GradientGraphBuilder

    ort.set_default_logger_severity(3)
    inputs, names, feeds = _feeds(inputs)
    outs = run_onnx(op, inputs, attrs)
    out_names = [f"y{k}" for k in range(len(outs))]
    nodes = [helper.make_node(op, names, out_names, **(attrs or {}))]
    value_info = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                  for n, v in feeds.items()]
    terms = []
    for k, (y, g) in enumerate(zip(outs, cotangents)):
        if g is None or not _is_float(y):
            continue
        feeds[f"g{k}"] = np.asarray(g, np.float32)
        value_info.append(helper.make_tensor_value_info(f"g{k}", TensorProto.FLOAT, np.shape(g)))
        nodes += [helper.make_node("Mul", [f"y{k}", f"g{k}"], [f"p{k}"]),
                  helper.make_node("ReduceSum", [f"p{k}"], [f"s{k}"], keepdims=0)]
        terms.append(f"s{k}")
    if not terms:
        return [None] * len(list(inputs))
    total = terms[0]  # a chain of Add: ONNX Runtime 1.19 has no gradient builder for Sum
    for k, t in enumerate(terms[1:]):
        nodes.append(helper.make_node("Add", [total, t], [f"acc{k}"]))
        total = f"acc{k}"
    nodes.append(helper.make_node("Identity", [total], ["loss"]))
    graph = helper.make_graph(nodes, op, value_info, [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    wanted = {n for n, x in zip(names, inputs) if x is not None and _is_float(x)}
    first_error = None
    while True:
        try:
            with quiet_stderr():
                builder = GradientGraphBuilder(model.SerializeToString(), {"loss"}, set(wanted), "loss")
        except RuntimeError as e:  # the model does not load: e.g. the operator is newer than opset 21 (Swish)
            raise NoGradientBuilder(f"ONNX Runtime {ort_version()} could not load the node at opset {OPSET}: "
                                    f"{_reason(str(e))}") from None
        try:
            with quiet_stderr():
                builder.build()
            break
        except RuntimeError as e:
            text = str(e)
            if "has not been registered" in text:
                found = re.search(r"The gradient builder has not been registered: (\S+)", text)
                raise NoGradientBuilder(f"ONNX Runtime {ort_version()} has no gradient builder for "
                                        f"{found.group(1) if found else op}") from None
            missing = re.search(r"failed to find NodeArg by name: (\w+)_grad", text)
            if missing and missing.group(1) in wanted:
                wanted.discard(missing.group(1))  # the builder gives no gradient for this input: ask for the others
                continue
            if len(wanted) > 1:  # the builder refuses one input (Pow's exponent): ask for the others, last first
                first_error = first_error or text
                wanted.discard(max(wanted))
                continue
            # "unreachable from the output node(s)": ONNX Runtime's graph has no gradient edge through the operator
            # to these inputs (it treats them as non-differentiable), a fact about the operator; any other build
            # failure is a refusal of this node
            reason = first_error or text
            raise NoGradientBuilder(f"ONNX Runtime {ort_version()} could not build the gradient graph of {op}: "
                                    f"{_reason(reason)}", refused="unreachable from the output" not in reason) from None
    grad_model = onnx.load_from_string(builder.get_model())
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        with quiet_stderr():
            sess = ort.InferenceSession(grad_model.SerializeToString(), options, providers=["CPUExecutionProvider"])
            wanted_feeds = {i.name for i in sess.get_inputs()}
            result = dict(zip([o.name for o in sess.get_outputs()],
                              sess.run(None, {k: v for k, v in feeds.items() if k in wanted_feeds})))
    except Exception as e:  # noqa: BLE001 - the graph was built but does not run: ONNX Runtime's own failure
        text = _reason(str(e).split('Status Message: ')[-1])
        kernel = re.search(r"Could not find an implementation for (\w+Grad)\(", text)
        if kernel:  # the gradient operator has no CPU kernel at all: a fact about the operator, not about this node
            raise NoGradientBuilder(f"ONNX Runtime {ort_version()} has no CPU kernel for {kernel.group(1)}, the "
                                    f"gradient operator its builder emits for {op}") from None
        raise NoGradientBuilder(f"ONNX Runtime {ort_version()} built the gradient graph of {op} but could not run "
                                f"it: {text}", refused=True) from None
    return [np.asarray(result[f"{n}_grad"], np.float64) if n in wanted and f"{n}_grad" in result else None
            for n in names]


def _round32(x):
    return None if x is None else (np.asarray(x, np.float32).astype(np.float64) if _is_float(x) else np.asarray(x))


def check_vjp_ort(op, vjp, inputs, attrs=None, *, seed=0, rtol=1e-4, atol=1e-5,
                  disagree: dict[str, str] | None = None) -> CheckResult:
    """Check 3 (executed, not cited): `vjp` against ONNX Runtime training's gradient of the same node.

    The inputs are rounded to float32 (ONNX Runtime runs in float32) and `vjp` is evaluated in float64 at the rounded
    point, with the same random cotangents. Each float input for which ONNX Runtime returns a gradient must agree
    within atol + rtol·max|gradient|, unless it is named in `disagree` with the reason: then it must differ (the
    witness of a finding about ONNX Runtime, printed). Where ONNX Runtime has no gradient builder, or no gradient for
    an input, that is recorded from the attempt and printed.
    """
    info = op_info(op)
    disagree = dict(disagree or {})
    full = info.with_defaults(attrs)
    x = [_round32(v) for v in inputs]
    outs = run_onnx(op, x, attrs)
    if not any(_is_float(y) for y in outs):
        raise AssertionError(f"{op}: no output is float here, so there is no cotangent and nothing for ONNX Runtime "
                             "to differentiate; this check is for operators with a float output")
    rng = np.random.default_rng(seed)
    cot = [np.asarray(rng.standard_normal(y.shape), np.float32).astype(np.float64) if _is_float(y) else None
           for y in outs]
    where = f"inputs {_shapes_text(x)}, attributes {_attr_text(attrs)}, float32 at opset {OPSET}"
    try:
        theirs = ort_gradient(op, x, cot, attrs)
    except NoGradientBuilder as e:
        # a refusal of this node is recorded as such: only a missing builder is a fact about the operator
        for i, v in enumerate(x):
            if _is_float(v):
                record(op, info.input_name(i), "ort-refused" if e.refused else "ort-none", vjp, detail=str(e),
                       data={"case": where})
        if disagree:
            raise AssertionError(f"{op}: a disagreement with ONNX Runtime is declared, but it gave no gradient: {e}")
        attempt = "" if "could not run" in str(e) else "the attempt to build its gradient graph failed; "
        return CheckResult("ONNX Runtime", op, [], summary=f"ONNX Runtime check of {op}: {e} ({attempt}{where})",
                           inputs=_shapes_text(x), attrs=_attr_text(attrs), notes=str(e),
                           outcome=REFUSED if e.refused else NOTHING_COMPARED)
    ours = _call_vjp(op, vjp, x, cot, full)
    checked, missing, witnesses, worst = [], [], [], _Worst()
    for i, (g, t) in enumerate(zip(ours, theirs)):
        name, shown = info.input_name(i), _shown_name(info, i)
        if x[i] is None or not _is_float(x[i]):
            continue
        if t is None:
            record(op, name, "ort-none", vjp)
            missing.append(shown)
            continue
        mine = np.zeros(np.shape(x[i])) if g is None else np.asarray(g, np.float64)
        c = compare_with_engine(op, "ONNX Runtime", shown, mine, t, rtol=rtol, atol=atol, declared=disagree.get(name))
        if not c.agree:
            witnesses.append(f"{shown}: ONNX Runtime differs ({c.why}); {disagree[name]}")
            record(op, name, "ort-differs", vjp, detail=disagree[name], data={"what": c.what, "case": where})
            continue
        worst.add(c.err, c.tol)
        record(op, name, "ort", vjp)
        checked.append(shown)
    detail = where + f", tolerance {rtol:.0e}"
    if missing:
        detail += f"; ONNX Runtime's gradient graph has no gradient for {', '.join(missing)}"
    if witnesses:
        detail += "; " + "; ".join(witnesses)
    notes = "; ".join((["no gradient for " + ", ".join(missing)] if missing else []) + witnesses)
    fields = dict(inputs=_shapes_text(x), attrs=_attr_text(attrs), notes=notes)
    if not checked:
        return CheckResult("ONNX Runtime", op, [], summary=f"ONNX Runtime check of {op}: no input agrees; {detail}",
                           outcome=DIFFERS_DECLARED if witnesses else NOTHING_COMPARED, **fields)
    return CheckResult("ONNX Runtime", op, checked, detail, error=worst.err, tol=worst.tol, **fields)


class OrtRunError(Exception):
    """ONNX Runtime failed to load or run a node; the message is ONNX Runtime's status message."""


def ort_forward(op, inputs, attrs=None, *, n_outputs: int | None = None, keep_types: bool = False,
                opset: int | None = None) -> list[np.ndarray]:
    """ONNX Runtime's own forward of one node (CPU, opset 21 unless `opset`, float inputs fed as float32 unless
    `keep_types`), for chapters that compare the runtime's forward with onnx.reference. Omitted optional inputs stay
    omitted; by default it asks for the outputs onnx.reference gives in this mode. Raises OrtRunError with ONNX
    Runtime's message when the node does not load or does not run."""
    import onnxruntime as ort
    from onnx import helper

    info = op_info(op)
    if n_outputs is None:
        try:  # the outputs the op has in this mode (BatchNormalization outside training: Y only)
            n_outputs = len(run_onnx(op, inputs, attrs))
        except Exception:  # noqa: BLE001 - onnx.reference cannot run it: ask for every declared output
            n_outputs = len(info.outputs) if not (info.outputs and info.outputs[-1].variadic) else 1
    inputs, names, feeds = _feeds(inputs, keep_types)
    outs = [f"y{k}" for k in range(n_outputs)]
    graph = helper.make_graph(
        [helper.make_node(op, names, outs, **(attrs or {}))], op,
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for n, v in feeds.items()],
        [helper.make_empty_tensor_value_info(o) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset or OPSET)], ir_version=IR_VERSION)
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        with quiet_stderr():
            session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
            return [np.asarray(y) for y in session.run(None, feeds)]
    except Exception as e:  # noqa: BLE001 - ONNX Runtime's own failure is the result
        head, _, status = str(e).partition("Status Message: ")
        raise OrtRunError(_reason(status if status.strip() else re.sub(r"\s*Name:'[^']*'\s*$", "", head))) from None
