"""ONNX Runtime training's own gradient of one node, executed: the third cross-check (Method 1 of ONNX's guide, for
the runtime that trains ONNX graphs).

The node is wrapped in a model whose loss is Σ_k sum(output_k · cotangent_k); ONNX Runtime's GradientGraphBuilder
(onnxruntime-training 1.19.2) builds the gradient graph of that loss with respect to the float inputs, and an
InferenceSession on the CPU provider runs it. ONNX Runtime 1.19 reads models up to IR version 10 and opset 21, so
the node is built at opset 21 (the operator resolves to its newest version up to 21) and runs in float32.
"""

from __future__ import annotations

import contextlib
from functools import lru_cache
import os
import re

import numpy as np

from .checks import (DIFFERS_DECLARED, NOTHING_COMPARED, REFUSED, CheckResult, _Worst, _as_list, _attr_text,
                     _call_vjp, _is_float, _is_float_format, _shapes_text, _shown_name, as_engine_sees,
                     compare_with_engine)
from .evidence import record
from .onnxrun import run_onnx
from .ortimport import install_probe_answer
from .schema import op_info
from . import values

#: The opset and IR version the gradient models are built at (the newest ONNX Runtime 1.19 reads).
OPSET, IR_VERSION = 21, 10


install_probe_answer()  # onnxruntime imported anywhere in this process skips its ORTModule probe (ortimport)


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
    feeds = {n: (values.cast(x, np.float32) if values.is_sequence(x) and not keep_types else values.as_value(x)
                 if values.is_sequence(x) else
                 np.asarray(x, np.float32) if _is_float(x) and not keep_types else np.asarray(x))
             for n, x in zip(names, inputs) if x is not None}  # a sequence is fed as a list (proofkit.values)
    return inputs, names, feeds


def optional_positions(op, inputs, optional_inputs) -> set[int]:
    """The positions of the inputs named in `optional_inputs` (formal names), which the model declares with an
    optional type (`optional(tensor(T))`, `optional(seq(tensor(T)))`): OptionalGetElement and OptionalHasElement
    take such a value. A name that is not a given input of this call is refused."""
    wanted = set(optional_inputs or ())
    if not wanted:
        return set()
    info = op_info(op)
    found = {i for i, x in enumerate(inputs) if x is not None and info.input_name(i) in wanted}
    unknown = wanted - {info.input_name(i) for i in found}
    if unknown:
        raise ValueError(f"{op}: optional_inputs {sorted(unknown)} are not given inputs of this call")
    if any(not any(t.startswith("optional(") for t in info.inputs[min(i, len(info.inputs) - 1)].types)
           for i in found):
        raise ValueError(f"{op}: optional_inputs names an input whose schema takes no optional type")
    return found


def input_infos(op, feeds: dict, optional: set[int] = frozenset(), elem_types: dict | None = None) -> list:
    """The graph inputs of a one-node model, one per feed x{i}: a tensor with its type and shape, as always; a
    sequence as `seq(tensor(T))`, an input at a position in `optional` wrapped in `optional(...)`. An empty sequence
    shows no T: it takes `elem_types[i]` (a NumPy dtype or an ONNX type name) when given, else the one element type
    the schema allows there (proofkit.values.fixed_element_type), else none (ONNX Runtime then refuses the model)."""
    from onnx import helper

    info = op_info(op)
    out = []
    for n, v in feeds.items():
        i = int(n[1:])
        elem = (elem_types or {}).get(i)
        if elem is None and values.is_sequence(v) and not v:
            elem = values.fixed_element_type(info.inputs[min(i, len(info.inputs) - 1)].types)
        if values.is_sequence(v) or i in optional or elem is not None:
            out.append(values.value_info(n, v, optional=i in optional, elem_type=elem))
        else:
            out.append(helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape))
    return out


def optional_outputs(op) -> set[int]:
    """The positions of the outputs whose schema type is optional only (Optional's output): ONNX Runtime's Mul or
    SequenceAt cannot take such a value, so the loss reads it through OptionalGetElement first."""
    return {k for k, f in enumerate(op_info(op).outputs) if f.types and all(t.startswith("optional(") for t in f.types)}


def ort_version() -> str:
    import onnxruntime
    return onnxruntime.__version__


def session_options(severity: int = 3):
    """ONNX Runtime's session options for every session the kit builds: log severity `severity` and one thread.

    By default a session starts a pool of one thread per core, whose threads spin while waiting for work. The checks'
    graphs are a node or a gradient graph on a few hundred values, which a pool does not speed up, and the suite runs
    one notebook per core (make test's `-n 2`): the pool's threads only took the other notebook's core, and starting
    and joining them cost each session more than its run (about 1.5 ms against 0.4 ms per `ort_forward` of a small
    MaxRoiPool here). One thread computes the same kernels; only the pool's partition of a large loop is gone."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = severity
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return options


def _session(model_bytes: bytes):
    """A new ONNX Runtime CPU session of the model (log severity 3). Sessions are not kept: a few hundred kept alive
    slowed the checks that build many (MaxRoiPool's hundreds of cases)."""
    import onnxruntime as ort

    return ort.InferenceSession(model_bytes, session_options(3), providers=["CPUExecutionProvider"])


@lru_cache(maxsize=256)
def _built_gradient(model_bytes: bytes, asked: frozenset, reals: bool, op: str):
    """ONNX Runtime's GradientGraphBuilder on the loss model: (the gradient graph's bytes, the inputs it has a gradient
    for), or the NoGradientBuilder that says why there is none. Built once per model and process, refusals included:
    a check that samples several points of one shape asks for the same graph each time, and the model holds every
    value that is not fed (attributes are in the node). An input the builder refuses is dropped and the others asked
    for again."""
    try:
        return _build_gradient(model_bytes, set(asked), reals, op)
    except NoGradientBuilder as e:
        return e


def _build_gradient(model_bytes: bytes, wanted: set, reals: bool, op: str) -> tuple:
    """The loop of _built_gradient: NoGradientBuilder when no input is left or the operator has no builder."""
    from onnxruntime.capi._pybind_state import GradientGraphBuilder

    first_error = None
    while True:
        try:
            with quiet_stderr():
                builder = GradientGraphBuilder(model_bytes, {"loss"}, set(wanted), "loss")
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
                if "unreachable from the output" not in text:
                    # ONNX Runtime names one unreachable input, in an order set by Python's string hashing when
                    # several are: the message of the last request, for one input, is the reproducible one
                    first_error = first_error or text
                wanted.discard(max(wanted))
                continue
            # "unreachable from the output node(s)": ONNX Runtime's graph has no gradient edge through the operator
            # to these inputs (it treats them as non-differentiable), a fact about the operator; any other build
            # failure is a refusal of this node
            reason = first_error or text
            if reals and "unreachable from the output" in text:
                # with several inputs ONNX Runtime names whichever it meets first, which varies between processes:
                # the last attempt, on one input (the first by name), is the message that stays the same
                reason = text
            raise NoGradientBuilder(f"ONNX Runtime {ort_version()} could not build the gradient graph of {op}: "
                                    f"{_reason(reason)}", refused="unreachable from the output" not in reason) from None
    return builder.get_model(), frozenset(wanted)


def ort_gradient(op, inputs, cotangents, attrs=None, reals: bool = False, *, optional_inputs=(),
                 elem_types: dict | None = None) -> list:
    """ONNX Runtime's gradient of Σ sum(output·cotangent) for every input: an array (float32 computation, returned as
    float64), or None where ONNX Runtime's graph has no gradient for that input (or the input is not float).

    Float inputs are fed as float32; integer and bool inputs as they are; omitted optional inputs stay omitted. A
    sequence input (a list of arrays, proofkit.values) is declared `seq(tensor(T))` and fed as a list; a sequence
    output enters the loss element by element, read with SequenceAt, so a missing builder or an unreachable input is
    ONNX Runtime's answer for the sequence graph (never a comparison).
    With `reals`, the float formats NumPy does not call floating (float8, float6, float4, bfloat16) are read as real
    numbers (proofkit.checks.check_vjp_fd): an output of such a type is cast to float32 before its product with the
    cotangent, and an input of such a type is fed as float32 (its values are exact there) and cast to its format in
    the graph, its gradient being the one ONNX Runtime gives that float32 input through the Cast.
    `optional_inputs` names inputs declared with an optional type, `elem_types` ({position: type}) the element type
    of an empty sequence input (input_infos); an output whose schema type is optional (Optional's) enters the loss
    through OptionalGetElement.
    Raises NoGradientBuilder when ONNX Runtime has no gradient builder for the operator, or fails to build the graph.
    """
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    ort.set_default_logger_severity(3)
    optional = optional_positions(op, inputs, optional_inputs)
    inputs, names, feeds = _feeds(inputs)
    if any(isinstance(v, onnx.GraphProto) for v in (attrs or {}).values()):
        # a node holding a graph: its outputs' types as ONNX Runtime sees them, the inputs and the graph in float32
        outs = run_onnx(op, [feeds.get(n) if n else None for n in names], float32_graphs(attrs))
    else:
        outs = run_onnx(op, inputs, attrs)
    out_names = [f"y{k}" for k in range(len(outs))]
    node_names, casts = list(names), []
    if reals:  # a float-format input: fed as float32, cast to its format in the graph
        for i, (n, x) in enumerate(zip(names, inputs)):
            if x is not None and _is_float_format(x):
                feeds[n] = np.asarray(x).astype(np.float32)
                node_names[i] = f"{n}_r"
                casts.append(helper.make_node("Cast", [n], [f"{n}_r"],
                                              to=helper.np_dtype_to_tensor_dtype(np.asarray(x).dtype)))
    nodes = casts + [helper.make_node(op, node_names, out_names, **float32_graphs(attrs or {}))]
    value_info = input_infos(op, feeds, optional, elem_types)
    terms, wrapped = [], optional_outputs(op)
    for k, (y, g) in enumerate(zip(outs, cotangents)):
        if g is None or not (_is_float(y) or (reals and _is_float_format(y))):
            continue
        if k in wrapped:  # an optional output: its value, read by OptionalGetElement, meets the cotangent
            nodes.append(helper.make_node("OptionalGetElement", [f"y{k}"], [f"y{k}_v"]))
            out_names[k] = f"y{k}_v"
        if values.is_sequence(y):  # a sequence output: element j read by SequenceAt, its product with g[j] summed
            for j, gj in enumerate(g):
                if gj is None:
                    continue
                feeds[f"g{k}_{j}"] = np.asarray(gj, np.float32)
                value_info.append(helper.make_tensor_value_info(f"g{k}_{j}", TensorProto.FLOAT, np.shape(gj)))
                nodes += [helper.make_node("Constant", [], [f"i{k}_{j}"],
                                           value=helper.make_tensor(f"i{k}_{j}", TensorProto.INT64, [], [j])),
                          helper.make_node("SequenceAt", [out_names[k], f"i{k}_{j}"], [f"e{k}_{j}"]),
                          helper.make_node("Mul", [f"e{k}_{j}", f"g{k}_{j}"], [f"p{k}_{j}"]),
                          helper.make_node("ReduceSum", [f"p{k}_{j}"], [f"s{k}_{j}"], keepdims=0)]
                terms.append(f"s{k}_{j}")
            continue
        feeds[f"g{k}"] = np.asarray(g, np.float32)
        value_info.append(helper.make_tensor_value_info(f"g{k}", TensorProto.FLOAT, np.shape(g)))
        if not _is_float(y):  # a float format read as reals: its values, in float32, meet the cotangent
            nodes.append(helper.make_node("Cast", [out_names[k]], [f"y{k}_f"], to=TensorProto.FLOAT))
        nodes += [helper.make_node("Mul", [out_names[k] if _is_float(y) else f"y{k}_f", f"g{k}"], [f"p{k}"]),
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
    wanted = {n for n, x in zip(names, inputs) if x is not None and (_is_float(x) or (reals and _is_float_format(x)))}
    built = _built_gradient(model.SerializeToString(deterministic=True), frozenset(wanted), reals, op)
    if isinstance(built, NoGradientBuilder):
        raise NoGradientBuilder(str(built), refused=built.refused) from None
    grad_bytes, wanted = built
    try:
        with quiet_stderr():
            sess = _session(grad_bytes)
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
    if values.is_sequence(x):
        return [_round32(e) for e in x]
    return None if x is None else (np.asarray(x, np.float32).astype(np.float64) if _is_float(x) else np.asarray(x))


def check_vjp_ort(op, vjp, inputs, attrs=None, *, seed=0, rtol=1e-4, atol=1e-5,
                  disagree: dict[str, str] | None = None, reals: bool = False, optional_inputs=(),
                  elem_types: dict | None = None) -> CheckResult:
    """Check 3 (executed, not cited): `vjp` against ONNX Runtime training's gradient of the same node.

    The inputs are rounded to float32 (ONNX Runtime runs in float32) and `vjp` is evaluated in float64 at the rounded
    point, with the same random cotangents. Each float input for which ONNX Runtime returns a gradient must agree
    within atol + rtol·max|gradient|, unless it is named in `disagree` with the reason: then it must differ (the
    witness of a finding about ONNX Runtime, printed). Where ONNX Runtime has no gradient builder, or no gradient for
    an input, that is recorded from the attempt and printed.

    With `reals`, the float formats NumPy does not call floating (float8, float6, float4, bfloat16) are read as real
    numbers, as check_vjp_fd(reals=True) reads them (see ort_gradient): an output of such a type gets a cotangent,
    drawn after the others (so that the draws without `reals` are unchanged) and rounded to the output's format, the
    cotangents check_vjp_onnxad(reals=True) draws with the same seed; an input of such a type is compared too, with
    vjp's gradient rounded to the input's format, the type ONNX Runtime returns it in.

    `optional_inputs` names the inputs the model declares with an optional type (OptionalGetElement's input); an
    output of optional type (Optional's) is read through OptionalGetElement before the loss. `elem_types`
    ({position: type}) declares the element type of an empty sequence input (ort_gradient).
    """
    info = op_info(op)
    disagree = dict(disagree or {})
    full = info.with_defaults(attrs)
    x = [_round32(v) for v in inputs]
    outs = run_onnx(op, x, attrs)

    def real(v):
        return _is_float(v) or (reals and _is_float_format(v))

    if not any(real(y) for y in outs):
        raise AssertionError(f"{op}: no output is float here, so there is no cotangent and nothing for ONNX Runtime "
                             "to differentiate; this check is for operators with a float output")
    rng = np.random.default_rng(seed)
    # float32-exact draws, per element of a sequence output (proofkit.values), as before for a tensor
    cot = [values.draw_like(y, rng, np.float32) for y in outs]
    if reals:  # the float formats draw after the others; rounded to the output's format, exact in float32
        cot = [np.asarray(rng.standard_normal(y.shape)).astype(y.dtype).astype(np.float64) if _is_float_format(y)
               else c for y, c in zip(outs, cot)]
    formats = sorted({str(np.asarray(v).dtype) for v in [*x, *outs] if v is not None and reals and _is_float_format(v)})
    where = (f"inputs {_shapes_text(x)}, attributes {_attr_text(attrs)}, float32 at opset {OPSET}"
             + (f"; {', '.join(formats)} read as reals" if formats else "")
             + (f"; {', '.join(sorted(optional_inputs))} declared optional" if optional_inputs else ""))
    try:
        theirs = ort_gradient(op, x, cot, attrs, reals=reals, optional_inputs=optional_inputs, elem_types=elem_types)
    except NoGradientBuilder as e:
        # a refusal of this node is recorded as such: only a missing builder is a fact about the operator
        for i, v in enumerate(x):
            if real(v):
                record(op, info.input_name(i), "ort-refused" if e.refused else "ort-none", vjp, detail=str(e),
                       data={"case": where})
        if disagree:
            raise AssertionError(f"{op}: a disagreement with ONNX Runtime is declared, but it gave no gradient: {e}")
        attempt = "" if "could not run" in str(e) else "the attempt to build its gradient graph failed; "
        return CheckResult("ONNX Runtime", op, [], summary=f"ONNX Runtime check of {op}: {e} ({attempt}{where})",
                           inputs=_shapes_text(x), attrs=_attr_text(attrs), notes=str(e),
                           outcome=REFUSED if e.refused else NOTHING_COMPARED)
    ours = _call_vjp(op, vjp, x, cot, full, reals=reals)
    checked, missing, witnesses, worst = [], [], [], _Worst()
    for i, (g, t) in enumerate(zip(ours, theirs)):
        name, shown = info.input_name(i), _shown_name(info, i)
        if x[i] is None or not real(x[i]):
            continue
        if t is None:
            record(op, name, "ort-none", vjp)
            missing.append(shown)
            continue
        mine, t = as_engine_sees(g, t, x[i], reals)
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


def float32_graph(graph):
    """A copy of the graph in float32: double graph inputs, outputs, value infos, initializers, Constant tensors and
    Cast targets, nested graphs included."""
    import onnx
    from onnx import TensorProto, numpy_helper

    g = onnx.GraphProto()
    g.CopyFrom(graph)
    stack = [g]
    while stack:
        h = stack.pop()
        for t in h.initializer:
            if t.data_type == TensorProto.DOUBLE:
                t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name))
        for v in list(h.input) + list(h.output) + list(h.value_info):
            if v.type.tensor_type.elem_type == TensorProto.DOUBLE:
                v.type.tensor_type.elem_type = TensorProto.FLOAT
        for node in h.node:
            for a in node.attribute:
                if a.name == "to" and a.type == onnx.AttributeProto.INT and a.i == TensorProto.DOUBLE:
                    a.i = TensorProto.FLOAT
                if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.DOUBLE:
                    a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float32), a.t.name))
                stack += [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
    return g


def float32_graphs(attrs: dict) -> dict:
    """The attributes with every graph (If's branches, a Loop, Scan or SequenceMap body) in float32, as the node's
    float inputs are fed (`float32_graph`). Other attributes are left as they are."""
    import onnx

    return {k: float32_graph(v) if isinstance(v, onnx.GraphProto) else v for k, v in attrs.items()}


class OrtRunError(Exception):
    """ONNX Runtime failed to load or run a node; the message is ONNX Runtime's status message."""


def forward_model(op, inputs, attrs=None, *, n_outputs: int | None = None, keep_types: bool = False,
                  opset: int | None = None, optional_inputs=(), elem_types: dict | None = None):
    """The one-node model ort_forward gives ONNX Runtime, serialized, and its feeds (the arguments as ort_forward's):
    for a child process that runs the node where ONNX Runtime may terminate the process."""
    from onnx import helper

    info = op_info(op)
    if n_outputs is None and not any(o.optional or o.variadic for o in info.outputs):
        n_outputs = len(info.outputs)  # every output is required: onnx.reference gives them all in any mode
    if n_outputs is None:
        try:  # the outputs the op has in this mode (BatchNormalization outside training: Y only)
            n_outputs = len(run_onnx(op, inputs, attrs))
        except Exception:  # noqa: BLE001 - onnx.reference cannot run it: ask for every declared output
            n_outputs = len(info.outputs) if not (info.outputs and info.outputs[-1].variadic) else 1
    optional = optional_positions(op, inputs, optional_inputs)
    inputs, names, feeds = _feeds(inputs, keep_types)
    outs = [f"y{k}" for k in range(n_outputs)]
    graph = helper.make_graph(
        [helper.make_node(op, names, outs, **((attrs or {}) if keep_types else float32_graphs(attrs or {})))], op,
        input_infos(op, feeds, optional, elem_types), [helper.make_empty_tensor_value_info(o) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset or OPSET)], ir_version=IR_VERSION)
    return model.SerializeToString(), feeds


def ort_forward(op, inputs, attrs=None, *, n_outputs: int | None = None, keep_types: bool = False,
                opset: int | None = None, optional_inputs=(), elem_types: dict | None = None) -> list[np.ndarray]:
    """ONNX Runtime's own forward of one node (CPU, opset 21 unless `opset`, float inputs fed as float32 unless
    `keep_types`), for chapters that compare the runtime's forward with onnx.reference. Omitted optional inputs stay
    omitted; by default it asks for the outputs onnx.reference gives in this mode. `optional_inputs` names inputs
    declared with an optional type; `elem_types` ({position: type}) declares an empty sequence's element type, which
    otherwise comes from the schema where it allows one (input_infos). An empty optional output comes back as None.
    Raises OrtRunError with ONNX Runtime's message when the node does not load or does not run."""
    import onnxruntime as ort

    model, feeds = forward_model(op, inputs, attrs, n_outputs=n_outputs, keep_types=keep_types, opset=opset,
                                 optional_inputs=optional_inputs, elem_types=elem_types)
    try:
        with quiet_stderr():
            session = ort.InferenceSession(model, session_options(4), providers=["CPUExecutionProvider"])
            return [values.as_value(y) for y in session.run(None, feeds)]
    except Exception as e:  # noqa: BLE001 - ONNX Runtime's own failure is the result
        head, _, status = str(e).partition("Status Message: ")
        raise OrtRunError(_reason(status if status.strip() else re.sub(r"\s*Name:'[^']*'\s*$", "", head))) from None
