"""Run one ONNX node through ONNX's own reference implementation (`onnx.reference`)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import onnx.defs
import onnx.helper
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import RuntimeContextError

from .schema import op_info


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


@lru_cache(maxsize=256)
def _typed_evaluator(op: str, dtypes: tuple, n_outputs: int, attrs: tuple) -> ReferenceEvaluator:
    """A one-node model whose inputs carry their element types: onnx.reference implements some operators (Gelu) only
    by the function body their schema generates for the input types, which a bare node does not give."""
    names = [f"x{i}" if d is not None else "" for i, d in enumerate(dtypes)]
    outs = [f"y{i}" for i in range(n_outputs)]
    node = onnx.helper.make_node(op, names, outs, **{k: (list(v) if isinstance(v, tuple) else v) for k, v in attrs})
    graph = onnx.helper.make_graph(
        [node], op,
        [onnx.helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(d)), None)
         for n, d in zip(names, dtypes) if d is not None],
        [onnx.helper.make_empty_tensor_value_info(o) for o in outs])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", onnx.defs.onnx_opset_version())])
    return ReferenceEvaluator(model)


def run_onnx(op: str, inputs, attrs: dict | None = None, n_outputs: int | None = None) -> list[np.ndarray]:
    """Outputs of `op` on NumPy `inputs` (schema order, None for an omitted optional input).

    Attributes are given by their ONNX names; absent ones take ONNX's defaults inside onnx.reference.
    Dtypes are kept as given. Returns one array per output, in schema order.
    """
    info = op_info(op)
    inputs = list(inputs)
    info.check_arity(len(inputs))
    while inputs and inputs[-1] is None:  # trailing omitted inputs are simply not named
        inputs.pop()
    attrs = {k: v for k, v in (attrs or {}).items() if v is not None}
    info.with_defaults(attrs)  # rejects unknown attribute names
    if n_outputs is None:
        n_outputs = len(info.outputs) if not (info.outputs and info.outputs[-1].variadic) else 1
    present = tuple(x is not None for x in inputs)
    feeds = {f"x{i}": np.asarray(x) for i, x in enumerate(inputs) if x is not None}
    try:
        key = tuple(sorted((k, _frozen(v)) for k, v in attrs.items()))
        hash(key)
        sess = _evaluator(op, present, n_outputs, key)
    except TypeError:  # an unhashable attribute value (a tensor): build without the cache
        sess = _evaluator.__wrapped__(op, present, n_outputs, tuple(sorted(attrs.items())))
    except RuntimeContextError:  # a context-dependent function (Gelu): give onnx.reference the input types
        dtypes = tuple(None if x is None else np.asarray(x).dtype.str for x in inputs)
        sess = _typed_evaluator(op, dtypes, n_outputs, key)
    with np.errstate(all="ignore"):  # NaN and inf outside an op's domain are ONNX semantics, not accidents
        return [np.asarray(y) for y in sess.run(None, feeds)]
