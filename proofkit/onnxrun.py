"""Run one ONNX node through ONNX's own reference implementation (`onnx.reference`)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import onnx.defs
import onnx.helper
from onnx.reference import ReferenceEvaluator
from onnx import numpy_helper
from onnx.reference.op_run import RuntimeContextError, RuntimeTypeError

from .schema import op_info
from .values import as_value, element_dtype, is_sequence


def _frozen(value):
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


@lru_cache(maxsize=256)
def _evaluator(op: str, present: tuple[bool, ...], n_outputs: int, attrs: tuple) -> ReferenceEvaluator:
    names = [f"x{i}" if p else "" for i, p in enumerate(present)]
    outs = [f"y{i}" for i in range(n_outputs)]
    node = onnx.helper.make_node(op, names, outs, **{k: (list(v) if isinstance(v, tuple) else v) for k, v in attrs})
    return ReferenceEvaluator(node)


def _typed_model(nodes, dtypes: tuple, n_outputs: int, opset_imports) -> ReferenceEvaluator:
    """An evaluator of `nodes` whose inputs x0, x1, ... carry their element types (None: an omitted input)."""
    graph = onnx.helper.make_graph(
        nodes, "proofkit",
        [onnx.helper.make_tensor_value_info(f"x{i}", onnx.helper.np_dtype_to_tensor_dtype(np.dtype(d)), None)
         for i, d in enumerate(dtypes) if d is not None],
        [onnx.helper.make_empty_tensor_value_info(f"y{k}") for k in range(n_outputs)])
    return ReferenceEvaluator(onnx.helper.make_model(graph, opset_imports=opset_imports))


@lru_cache(maxsize=256)
def _typed_evaluator(op: str, dtypes: tuple, n_outputs: int, attrs: tuple) -> ReferenceEvaluator:
    """A one-node model whose inputs carry their element types: onnx.reference implements some operators (Gelu) only
    by the function body their schema generates for the input types, which a bare node does not give."""
    names = [f"x{i}" if d is not None else "" for i, d in enumerate(dtypes)]
    outs = [f"y{i}" for i in range(n_outputs)]
    node = onnx.helper.make_node(op, names, outs, **{k: (list(v) if isinstance(v, tuple) else v) for k, v in attrs})
    return _typed_model([node], dtypes, n_outputs, [onnx.helper.make_opsetid("", onnx.defs.onnx_opset_version())])


class Outputs(list):
    """The outputs of one run, and what computed them (onnx.reference, or the schema's function body)."""

    source = "onnx.reference"


BODY_SOURCE = "the function body in the input's type"


@lru_cache(maxsize=64)
def _body_evaluator(op: str, dtypes: tuple, n_outputs: int, attrs: tuple) -> ReferenceEvaluator:
    """The schema's function body, run node by node with its float constants in the inputs' float type.

    Some bodies are well typed for float32 only: MeanVarianceNormalization adds a float32 constant (its epsilon) to a
    tensor of the input's type, so onnx.reference cannot run a double input (ONNX issue #5753 reports it for
    float16). The spec's math is the body's; only the constant's type changes. Attribute references in the body
    (`axes`) take the node's values, or the schema's defaults."""
    info, schema = op_info(op), onnx.defs.get_schema(op)
    values = info.with_defaults(dict(attrs))
    floats = [np.dtype(d) for d in dtypes if d is not None and np.issubdtype(np.dtype(d), np.floating)]
    dtype = floats[0] if floats else np.dtype(np.float32)
    body = schema.function_body
    rename = {n: f"x{i}" for i, n in enumerate(body.input)}
    rename.update({n: f"y{k}" for k, n in enumerate(body.output[:n_outputs])})
    nodes = []
    for node in body.node:
        kwargs = {}
        for a in node.attribute:
            if a.ref_attr_name:
                value = values.get(a.ref_attr_name)
                if value is None:
                    continue
                kwargs[a.name] = list(value) if isinstance(value, (list, tuple)) else value
            elif node.op_type == "Constant" and a.name == "value":
                t = numpy_helper.to_array(a.t)
                kwargs[a.name] = numpy_helper.from_array(t.astype(dtype) if np.issubdtype(t.dtype, np.floating)
                                                         else t)
            else:
                kwargs[a.name] = onnx.helper.get_attribute_value(a)
        nodes.append(onnx.helper.make_node(node.op_type, [rename.get(i, i) for i in node.input],
                                           [rename.get(o, o) for o in node.output], **kwargs))
    opset = [onnx.helper.make_opsetid(o.domain, o.version) for o in body.opset_import] or \
        [onnx.helper.make_opsetid("", info.version)]  # the opset the body is written for
    return _typed_model(nodes, dtypes, n_outputs, opset)


_STAND_INS: dict = {}


def stand_in(op: str, fn, source: str, *, departure=None) -> None:
    """Give the kit, in this process, `fn(inputs, **attrs)` (a list of outputs) for an operator that onnx.reference
    does not implement (GlobalLpPool in onnx 1.23.2), so that every check that runs the node runs it (the onnx-ad
    check's evaluator too, through stand_in_ops); the forward check's table names `source` where it would name
    onnx.reference. The stand-in must be the spec's own definition in terms of operators onnx.reference does
    implement, said in `source`.

    For an operator onnx.reference implements, a stand-in would replace ONNX's own reference: it is refused, unless
    `departure` is the Finding (proofkit.findings.check_reference_departure) that this process recorded for `op`,
    showing that onnx.reference departs from the spec (Optional wraps its value in a list). The stand-in then
    replaces onnx.reference for every check, as witness_kink's `forward=` does after a recorded departure."""
    from onnx.reference.op_run import RuntimeImplementationError
    from .evidence import recorded
    info = op_info(op)
    names = [f"x{i}" for i in range(info.min_input)]
    try:
        ReferenceEvaluator(onnx.helper.make_node(op, names, ["y0"]))
    except RuntimeImplementationError:
        _STAND_INS[op] = (fn, source)
        return
    if departure is None:
        raise ValueError(f"onnx.reference implements {op}; a stand-in would replace ONNX's own reference (give the "
                         "departure of onnx.reference that the chapter recorded first: departure=)")
    if getattr(departure, "op", None) != op or getattr(departure, "component", None) != "onnx.reference":
        raise ValueError(f"onnx.reference implements {op}; departure= must be a Finding of onnx.reference for {op}, "
                         f"not {departure!r}")
    if not any(r.kind == "reference-departure" and r.data == departure.as_json() for r in recorded(op)):
        raise ValueError(f"onnx.reference implements {op}; its departure '{departure.title}' is not recorded in this "
                         "process (check_reference_departure first)")
    _STAND_INS[op] = (fn, source)


def stand_in_ops() -> list:
    """The stand-ins as onnx.reference operators, for an evaluator of a model that contains such a node (onnx-ad's
    adjoint model keeps the forward node): `ReferenceEvaluator(model, new_ops=stand_in_ops())`. Outputs are held as
    the kit holds values (proofkit.values.as_value): a sequence stays a list of arrays, and an empty optional stays
    None, which onnx.reference's evaluator refuses as a result (rather than an object array that reads as present)."""
    from onnx.reference.op_run import OpRun

    def make(fn):
        def _run(self, *inputs, **attrs):
            return tuple(as_value(y) for y in fn(list(inputs), **{k: v for k, v in attrs.items() if v is not None}))
        return _run

    return [type(op, (OpRun,), {"op_domain": "", "_run": make(fn)}) for op, (fn, _) in _STAND_INS.items()]


def stand_in_key() -> tuple:
    """Which stand-ins are registered: each one's operator and the identity of its function (for a cache of
    evaluators built with stand_in_ops)."""
    return tuple((op, id(fn)) for op, (fn, _) in _STAND_INS.items())


def graph_outputs(op: str, attrs: dict | None) -> int | None:
    """How many outputs a node that holds a graph has, read from its graph: If's then_branch's outputs, Loop's body's
    less its condition, Scan's and SequenceMap's body's; None for any other node (or no graph given)."""
    attrs = attrs or {}
    graph = attrs.get("then_branch") if op == "If" else attrs.get("body") if op in ("Loop", "Scan", "SequenceMap") \
        else None
    if not isinstance(graph, onnx.GraphProto):
        return None
    return len(graph.output) - (1 if op == "Loop" else 0)


def run_onnx(op: str, inputs, attrs: dict | None = None, n_outputs: int | None = None) -> list[np.ndarray]:
    """Outputs of `op` on NumPy `inputs` (schema order, None for an omitted optional input).

    A sequence input is a Python list of arrays and a sequence output comes back as one (proofkit.values); an
    optional input is its value, or None, which leaves it unnamed (onnx.reference reads an omitted input and an
    empty optional alike: OptionalHasElement gives false for both).

    Attributes are given by their ONNX names; absent ones take ONNX's defaults inside onnx.reference.
    Dtypes are kept as given. Returns one array per output, in schema order; a node with a variadic output that
    holds a graph (If, Loop, Scan, SequenceMap) returns as many as its graph gives (`graph_outputs`).
    """
    info = op_info(op)
    inputs = list(inputs)
    info.check_arity(len(inputs))
    while inputs and inputs[-1] is None:  # trailing omitted inputs are simply not named
        inputs.pop()
    attrs = {k: v for k, v in (attrs or {}).items() if v is not None}
    info.with_defaults(attrs)  # rejects unknown attribute names
    explicit = n_outputs is not None
    if n_outputs is None:
        n_outputs = len(info.outputs) if not (info.outputs and info.outputs[-1].variadic) else \
            graph_outputs(op, attrs) or 1
    if op in _STAND_INS:
        fn, source = _STAND_INS[op]
        outs = Outputs(as_value(y) for y in fn(inputs, **attrs))
        outs.source = source
        return outs
    present = tuple(x is not None for x in inputs)
    # a sequence is fed as a Python list of arrays, as onnx.reference takes it (proofkit.values)
    feeds = {f"x{i}": as_value(x) for i, x in enumerate(inputs) if x is not None}
    dtypes = tuple(None if x is None else f"seq({element_dtype(x)})" if is_sequence(x) else np.asarray(x).dtype.str
                   for x in inputs)
    key = tuple(sorted((k, _frozen(v)) for k, v in attrs.items()))
    while True:
        try:
            hash(key)
            sess = _evaluator(op, present, n_outputs, key)
        except TypeError:  # an unhashable attribute value (a tensor): build without the cache
            sess = _evaluator.__wrapped__(op, present, n_outputs, tuple(sorted(attrs.items())))
        except RuntimeContextError:  # a context-dependent function (Gelu): give onnx.reference the input types
            sess = _typed_evaluator(op, dtypes, n_outputs, key)
        try:
            with np.errstate(all="ignore"):  # NaN and inf outside an op's domain are ONNX semantics, not accidents
                return Outputs(as_value(y) for y in sess.run(None, feeds))
        except RuntimeTypeError:
            if not onnx.defs.get_schema(op).has_function:
                raise
            body = _body_evaluator(op, dtypes, n_outputs, key)
            with np.errstate(all="ignore"):
                outs = Outputs(as_value(y) for y in body.run(None, feeds))
            outs.source = BODY_SOURCE
            return outs
        except Exception as e:  # noqa: BLE001
            # optional outputs that exist only in some modes (BatchNormalization's running statistics outside
            # training): ask for the outputs the reference produces in this mode
            if explicit or n_outputs <= 1 or "Unable to find output name" not in str(e):
                raise
            n_outputs -= 1
