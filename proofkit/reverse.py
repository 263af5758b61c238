"""The book as a backward pass: reverse mode over an ONNX model, with every node's rule loaded from its chapter.

`gradients(model, feeds, cotangents)` runs the forward with `onnx.reference`, keeping every intermediate value, then
walks the nodes in reverse order. Each node's cotangents go to its chapter's `vjp` (`rules.load_vjp`) with the node's
attributes, ONNX's defaults filled in (`schema.OpInfo.with_defaults`), exactly as the chapter's checks call it. The
cotangents of a value used by several nodes are summed. Omitted optional inputs, and inputs that are not float (the
book gives integer, bool and string values no gradient), get nothing. The result holds a gradient for every float
graph input and initializer (the parameters), of Σ_outputs ⟨output, cotangent⟩.

Values are tensors, sequences (Python lists of tensors; their cotangents are lists, None entries allowed) and
optionals (a value or None). A node that holds a graph attribute (If, Loop, Scan, SequenceMap) reads values of the
outer scope that are not its inputs (`captured`); its chapter's rule is called with `outer={name: value}` and returns
a pair, the inputs' gradients and a dict of the outer values' gradients. Such a rule differentiates its graph with
`graph_vjp`, which runs this same reverse mode inside it: the control-flow chapters compose the other chapters' rules.

What is an error, naming the node (`ReverseModeError`):
- an operator with no chapter, or of another domain than ONNX's default one, on a path the gradient takes;
- a node whose opset version is not the one the chapter proves (`upgrade` converts a model to the book's opset);
- a parameter the seeded outputs depend on only through nodes where the book proves no gradient (a chapter with no
  rule, or a rule that gives its input None): the chain of derivatives does not exist there.
A parameter that has a gradient along some paths and is cut on others gets its gradient with the cut nodes listed in
`Gradients.cuts` (the book proves no derivative through them; they contribute nothing, as every engine does).

Layering: this module reads the schema (`schema`), the chapters' rules (`rules`) and runs `onnx.reference`; it imports
no check, no engine and no page.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import onnx
import onnx.defs
import onnx.helper
from onnx import numpy_helper

from .rules import RuleLoadError, chapter_path, code_cells, is_tagged, load_vjp
from .schema import op_info


class ReverseModeError(Exception):
    """The book's reverse mode cannot differentiate the model (the message names the node and why)."""


@dataclass
class Gradients:
    """What one reverse pass gave: a gradient per parameter (graph inputs and initializers that are float), the
    nodes whose rule cut a path to a parameter that other paths reach (`cuts`: parameter -> node descriptions), and
    the forward and backward times in seconds."""

    grads: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]
    cuts: dict[str, list[str]] = field(default_factory=dict)
    forward_seconds: float = 0.0
    backward_seconds: float = 0.0
    values: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # every value of the forward pass
    cotangents: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # every cotangent of the backward
    dependent: set[str] = field(default_factory=set, repr=False)  # the values that depend on a parameter

    def __getitem__(self, name: str) -> np.ndarray:
        return self.grads[name]


# --- the model --------------------------------------------------------------------------------------------------


def describe(node: onnx.NodeProto, index: int | None = None) -> str:
    """How an error names a node: its operator, its name when it has one, its position and its first output."""
    where = f" #{index}" if index is not None else ""
    name = f" {node.name!r}" if node.name else ""
    out = f" -> {node.output[0]}" if node.output and node.output[0] else ""
    return f"{node.op_type}{name}{where}{out}"


def load_model(model) -> onnx.ModelProto:
    """A ModelProto from a path or a ModelProto, checked by onnx.checker (its error is quoted)."""
    if not isinstance(model, onnx.ModelProto):
        try:
            model = onnx.load(str(model))
        except FileNotFoundError:
            raise ReverseModeError(f"no model file at {model}") from None
        except Exception as e:  # noqa: BLE001 - not a model: the loader's words
            raise ReverseModeError(f"{model} is not an ONNX model: {type(e).__name__}: {e}") from None
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ReverseModeError(f"the model fails onnx.checker: {first}") from None
    return model


def default_opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    raise ReverseModeError("the model imports no opset of ONNX's default domain")


def upgrade(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model converted to the installed onnx's latest opset (onnx.version_converter), whose operators are the
    ones the chapters prove."""
    import onnx.version_converter

    latest = onnx.defs.onnx_opset_version()
    if default_opset(model) == latest:
        return model
    try:
        return onnx.version_converter.convert_version(model, latest)
    except Exception as e:  # noqa: BLE001 - the converter's own refusal
        raise ReverseModeError(f"onnx.version_converter could not bring the model from opset {default_opset(model)} "
                               f"to {latest}: {' '.join(str(e).split())[:300]}") from None


def parameters(model: onnx.ModelProto) -> list[str]:
    """The names the gradient is taken with respect to: the float graph inputs and the float initializers."""
    names = []
    inits = {t.name: t for t in model.graph.initializer}
    for v in model.graph.input:
        if v.type.HasField("tensor_type") and _float_elem(v.type.tensor_type.elem_type):
            names.append(v.name)
    for name, t in inits.items():
        if name not in names and _float_elem(t.data_type):
            names.append(name)
    return names


def _float_elem(elem_type: int) -> bool:
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem_type)
    except Exception:  # noqa: BLE001 - an element type NumPy has no dtype for
        return False
    return np.issubdtype(dtype, np.floating)


def _is_float(x) -> bool:
    return isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.floating)


def node_attributes(node: onnx.NodeProto) -> dict:
    """The node's attributes as a chapter's vjp takes them: strings decoded, lists as lists, tensors as arrays."""
    out = {}
    for a in node.attribute:
        if a.ref_attr_name:
            raise ReverseModeError(f"{describe(node)} refers to a function attribute ({a.ref_attr_name}): only "
                                   f"nodes of the main graph are differentiated")
        value = onnx.helper.get_attribute_value(a)
        if isinstance(value, bytes):
            value = value.decode()
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode() for v in value]
        elif isinstance(value, onnx.TensorProto):
            value = numpy_helper.to_array(value)
        out[a.name] = value
    return out


# --- the rules --------------------------------------------------------------------------------------------------


_NO_RULE = object()


@lru_cache(maxsize=None)
def rule_of(op: str):
    """The chapter's vjp; `_NO_RULE` for a chapter that proves no input differentiable (the contract test requires
    every chapter with a differentiable input to tag its rule cells, so an untagged chapter is one whose vjp gives
    every input None, when it defines one at all); raises RuleLoadError for an operator with no chapter."""
    path = chapter_path(op)
    if not path.exists():
        raise RuleLoadError(f"{op} has no chapter in the book yet")
    if not any(is_tagged(c) for c in code_cells(json.loads(path.read_text()))):
        return _NO_RULE
    return load_vjp(op)


def chapters_missing(model: onnx.ModelProto) -> list[str]:
    """The operators of the model (main graph and nested graphs) that have no chapter yet, sorted."""
    ops = set()

    def walk(graph):
        for node in graph.node:
            ops.add(node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}")
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for g in a.graphs:
                        walk(g)

    walk(model.graph)
    return sorted(op for op in ops if "." in op or not chapter_path(op).exists())


# --- forward and backward ---------------------------------------------------------------------------------------


def forward(model: onnx.ModelProto, feeds: dict) -> dict[str, np.ndarray]:
    """Every value of the graph (inputs, initializers, intermediates, outputs) after one onnx.reference run."""
    from onnx.reference import ReferenceEvaluator

    evaluator = ReferenceEvaluator(model)
    with np.errstate(all="ignore"):
        values = evaluator.run(None, dict(feeds), intermediate=True)
    values = {k: v for k, v in values.items() if k}
    for t in model.graph.initializer:
        values.setdefault(t.name, numpy_helper.to_array(t))
    values.update(feeds)
    return values


def objective(model, feeds, cotangents) -> float:
    """Σ over the float outputs of ⟨output, cotangent⟩ (ones where `cotangents` names none), in float64, from one
    onnx.reference run: the function whose gradient `gradients` returns."""
    values = forward(model, feeds)
    total = 0.0
    for o in model.graph.output:
        y = values[o.name]
        if isinstance(y, np.ndarray) and np.issubdtype(y.dtype, np.floating):
            g = cotangents.get(o.name)
            total += float(np.sum(y.astype(np.float64) * (1.0 if g is None else np.asarray(g, np.float64))))
    return total


def _check_node(node, index, opset):
    if node.domain not in ("", "ai.onnx"):
        raise ReverseModeError(f"{describe(node, index)} is of domain {node.domain!r}: the book proves the operators "
                               f"of ONNX's default domain only")
    try:
        info = op_info(node.op_type)
    except Exception as e:  # noqa: BLE001 - an operator the installed onnx does not know
        raise ReverseModeError(f"{describe(node, index)}: {e}") from None
    used = onnx.defs.get_schema(node.op_type, opset, "").since_version
    if used != info.version:
        raise ReverseModeError(f"{describe(node, index)} is {node.op_type}-{used} at the model's opset {opset}; the "
                               f"book proves {node.op_type}-{info.version} (convert the model with "
                               f"proofkit.reverse.upgrade, or onnx.version_converter)")
    return info


def captured(node: onnx.NodeProto) -> set[str]:
    """The outer-scope names a node's nested graphs read (If's branches, Loop's and Scan's bodies): values the node
    depends on without listing them as inputs."""
    found = set()

    def walk(graph, defined):
        defined = defined | {v.name for v in graph.input} | {t.name for t in graph.initializer}
        for n in graph.node:
            found.update(i for i in n.input if i and i not in defined)
            for a in n.attribute:
                for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else
                          list(a.graphs) if a.type == onnx.AttributeProto.GRAPHS else []):
                    walk(g, defined)
            defined = defined | set(n.output)

    for a in node.attribute:
        for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else
                  list(a.graphs) if a.type == onnx.AttributeProto.GRAPHS else []):
            walk(g, set())
    return found


def _is_value(x) -> bool:
    """A value that carries a cotangent: a float tensor, or a sequence (a list) of float tensors."""
    if isinstance(x, list):
        return all(_is_float(v) for v in x)
    return _is_float(x)


def _zeros(x):
    return [np.zeros_like(v) for v in x] if isinstance(x, list) else np.zeros_like(x)


def _add(a, b):
    """The sum of two cotangents of one value (a sequence's entries may be None: no cotangent there)."""
    if isinstance(a, list):
        return [v if w is None else w if v is None else v + w for v, w in zip(a, b)]
    return a + b


def _shape_problem(g, x) -> str:
    """Why a gradient cannot be the gradient of the value x ('' when it can)."""
    if isinstance(x, list):
        if not isinstance(g, list) or len(g) != len(x):
            return f"a {type(g).__name__} of length {len(g) if isinstance(g, list) else '-'} for a sequence of {len(x)}"
        bad = [k for k, (a, b) in enumerate(zip(g, x)) if a is not None and np.shape(a) != np.shape(b)]
        return f"entries {bad} of the wrong shape" if bad else ""
    return "" if np.shape(g) == np.shape(x) else f"shape {np.shape(g)}; the input has {np.shape(x)}"


def _cast(g, x):
    if isinstance(x, list):
        return [None if a is None else np.asarray(a).astype(b.dtype, copy=False) for a, b in zip(g, x)]
    return np.asarray(g).astype(x.dtype, copy=False)


def _backward(nodes, values: dict, cot: dict, params, opset: int, progress=None):
    """The reverse pass over `nodes` (in graph order), from the cotangents in `cot` (updated in place). `values`
    holds every value the nodes read, the outer scope's included. Returns the paths cut by a rule (`cut`), those
    stopped at a discrete value (`stopped`), and the dependence of every value on the parameters (`dep`)."""
    dep = {p: {p} for p in params}
    for node in nodes:
        got = set()
        for i in list(node.input) + sorted(captured(node)):
            got |= dep.get(i, set())
        for o in node.output:
            dep[o] = set(got)
    wanted = set(params)
    cut: dict[str, list[str]] = {}  # float paths the book's rules stop (shown when other paths reach)
    stopped: dict[str, list[str]] = {}  # paths through a discrete value
    for done, (index, node) in enumerate(reversed(list(enumerate(nodes))), 1):
        if progress is not None:
            progress(done, len(nodes))
        seeds = [cot.get(o) if o else None for o in node.output]
        if all(g is None for g in seeds):
            continue
        # values that lead back to a wanted parameter: float inputs, and the outer values a nested graph reads
        needed = [k for k, i in enumerate(node.input) if i and _is_value(values.get(i)) and dep.get(i, set()) & wanted]
        inner = sorted(i for i in captured(node) if _is_value(values.get(i)) and dep.get(i, set()) & wanted)
        for k, i in enumerate(node.input):  # a discrete value carries no cotangent: the chain stops there
            if i and k not in needed and dep.get(i, set()) & wanted:
                for p in dep[i] & wanted:
                    stopped.setdefault(p, []).append(f"{describe(node, index)} (its input {i} is "
                                                     f"{np.asarray(values.get(i)).dtype}, discrete)")
        if not needed and not inner:
            continue
        info = _check_node(node, index, opset)
        try:
            vjp = rule_of(node.op_type)
        except RuleLoadError as e:
            raise ReverseModeError(f"{describe(node, index)}: {e}") from None
        if vjp is _NO_RULE:
            for name in [node.input[k] for k in needed] + inner:
                for p in dep[name] & wanted:
                    cut.setdefault(p, []).append(f"{describe(node, index)} (its chapter proves no input "
                                                 f"differentiable)")
            continue
        ins = [values[i] if i else None for i in node.input]
        n_out = len(info.outputs) if not (info.outputs and info.outputs[-1].variadic) else len(node.output)
        outs = [values.get(o) if o else None for o in node.output]
        seeds = [g if g is not None else (_zeros(y) if _is_value(y) else None) for g, y in zip(seeds, outs)]
        seeds += [None] * (n_out - len(seeds))
        attrs = info.with_defaults(node_attributes(node))
        try:
            with np.errstate(all="ignore"):
                if inner or captured(node):  # a nested graph: its rule also gives the outer values' gradients
                    grads, outer_grads = vjp(ins, seeds, outer={i: values[i] for i in captured(node)}, **attrs)
                else:
                    grads, outer_grads = vjp(ins, seeds, **attrs), {}
                grads = list(grads)
        except ReverseModeError:
            raise
        except Exception as e:  # noqa: BLE001 - the chapter's rule failed on this node: name it
            raise ReverseModeError(f"{describe(node, index)}: the chapter's vjp raised {type(e).__name__}: "
                                   f"{' '.join(str(e).split())[:300]}") from None
        if len(grads) != len(ins):
            raise ReverseModeError(f"{describe(node, index)}: the chapter's vjp gave {len(grads)} gradients for "
                                   f"{len(ins)} inputs")
        flows = [(node.input[k], grads[k], info.input_name(k)) for k in needed]
        flows += [(i, outer_grads.get(i), f"the outer value {i}") for i in inner]
        for name, g, shown in flows:
            if g is None:
                for p in dep[name] & wanted:
                    cut.setdefault(p, []).append(f"{describe(node, index)} (no gradient for its input {shown})")
                continue
            problem = _shape_problem(g, values[name])
            if problem:
                raise ReverseModeError(f"{describe(node, index)}: the chapter's vjp gave {shown} {problem}")
            g = _cast(g, values[name])
            cot[name] = _add(cot[name], g) if name in cot else g
    return cut, stopped, dep


def _seed(outputs: dict, cotangents: dict | None) -> dict:
    cot = {}
    for name, y in outputs.items():
        g = (cotangents or {}).get(name)
        if g is not None:
            if isinstance(y, list):
                cot[name] = list(g)
                continue
            g = np.asarray(g, dtype=y.dtype)
            if g.shape != y.shape:
                raise ReverseModeError(f"the cotangent of {name} has shape {g.shape}; the output has {y.shape}")
            cot[name] = g
        elif _is_value(y):
            cot[name] = [np.ones_like(v) for v in y] if isinstance(y, list) else np.ones_like(y)
    extra = sorted(set(cotangents or {}) - set(outputs))
    if extra:
        raise ReverseModeError(f"cotangents given for values that are not graph outputs: {', '.join(extra)}")
    return cot


def _results(params, cot, cut, stopped, dep, outputs, values):
    result = {}
    reached = {p for o in outputs if o in cot for p in dep.get(o, set())}
    for p in params:
        if p in cot:
            result[p] = cot[p]
        elif (p in cut or p in stopped) and p in reached:
            raise ReverseModeError(f"the outputs depend on {p} only through nodes where the book proves no gradient: "
                                   + "; ".join(dict.fromkeys(cut.get(p, []) + stopped.get(p, []))))
        else:  # the seeded outputs do not depend on it
            result[p] = _zeros(values[p])
    return result


def gradients(model, feeds: dict, cotangents: dict | None = None, *, wrt: list[str] | None = None,
              progress=None) -> Gradients:
    """The gradient of Σ_outputs ⟨output, cotangent⟩ with respect to every parameter (or those in `wrt`).

    `feeds`: the graph inputs by name (initializers are the model's unless fed). `cotangents`: by output name; the
    float outputs not named get ones. `progress(done, total)` is called after each node of the backward pass."""
    model = load_model(model)
    opset = default_opset(model)
    params = parameters(model)
    if wrt is not None:
        unknown = sorted(set(wrt) - set(params))
        if unknown:
            raise ReverseModeError(f"not a float graph input or initializer: {', '.join(unknown)}")
        params = list(wrt)
    missing = [v.name for v in model.graph.input
               if v.name not in feeds and v.name not in {t.name for t in model.graph.initializer}]
    if missing:
        raise ReverseModeError(f"no value fed for the graph input(s) {', '.join(missing)}")
    for index, node in enumerate(model.graph.node):  # onnx.reference cannot run what the book does not cover
        if node.domain not in ("", "ai.onnx"):
            _check_node(node, index, opset)
    t0 = time.perf_counter()
    values = forward(model, {k: (v if isinstance(v, list) else np.asarray(v)) for k, v in feeds.items()})
    t1 = time.perf_counter()
    outputs = {o.name: values[o.name] for o in model.graph.output}
    cot = _seed(outputs, cotangents)
    cut, stopped, dep = _backward(list(model.graph.node), values, cot, params, opset, progress)
    t2 = time.perf_counter()
    result = _results(params, cot, cut, stopped, dep, outputs, values)
    cuts = {p: list(dict.fromkeys(c)) for p, c in cut.items() if p in cot}
    return Gradients(result, outputs, cuts, t1 - t0, t2 - t1, values, cot,
                     {v for v, ps in dep.items() if ps & set(params)})


def run_graph(graph: onnx.GraphProto, env: dict, opset: int | None = None) -> dict:
    """Every value of a nested graph (a branch, a loop body) run by onnx.reference, its formal inputs and the outer
    values it reads taken from `env` (name -> value)."""
    from onnx.reference import ReferenceEvaluator

    opset = opset or onnx.defs.onnx_opset_version()
    names = [v.name for v in graph.input] + sorted(captured_by_graph(graph))
    g = onnx.GraphProto()
    g.CopyFrom(graph)
    del g.input[:]
    for n in names:
        if n not in env:
            raise ReverseModeError(f"the graph {graph.name!r} reads {n}, which has no value")
        g.input.append(_value_info(n, env[n]))
    model = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", opset)])
    with np.errstate(all="ignore"):
        values = ReferenceEvaluator(model).run(None, {n: env[n] for n in names}, intermediate=True)
    values = {k: v for k, v in values.items() if k}
    values.update({n: env[n] for n in names})
    for t in graph.initializer:
        values.setdefault(t.name, numpy_helper.to_array(t))
    return values


def _value_info(name, value):
    if isinstance(value, list):
        elem = onnx.helper.np_dtype_to_tensor_dtype(value[0].dtype) if value else onnx.TensorProto.FLOAT
        return onnx.helper.make_value_info(name, onnx.helper.make_sequence_type_proto(
            onnx.helper.make_tensor_type_proto(elem, None)))
    value = np.asarray(value)
    return onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(value.dtype), None)


def captured_by_graph(graph: onnx.GraphProto) -> set[str]:
    """The outer-scope names a graph reads (its nodes' inputs defined neither in it nor by its inputs)."""
    holder = onnx.helper.make_node("If", [], [], then_branch=graph)
    return captured(holder)


def graph_vjp(graph: onnx.GraphProto, env: dict, cotangents: list, *, opset: int | None = None,
              values: dict | None = None) -> dict:
    """The book's reverse mode through a nested graph (If's branch, a Loop or Scan body, SequenceMap's body): the
    gradient of Σ_k ⟨graph output k, cotangents[k]⟩ for each of the graph's formal inputs and each outer value it
    reads, by name. `env` gives their values; `values`, every value of the graph from an earlier `run_graph` (run
    again when absent). A name gets None where the book proves no gradient through the graph (a discrete value, a
    rule that gives None), and zeros where the outputs do not depend on it. Each node goes through its chapter's
    rule, as in `gradients`; errors name the node."""
    opset = opset or onnx.defs.onnx_opset_version()
    values = values if values is not None else run_graph(graph, env, opset)
    names = [v.name for v in graph.input] + sorted(captured_by_graph(graph))
    params = [n for n in names if _is_value(env.get(n))]
    outputs = {o.name: values[o.name] for o in graph.output}
    cot = {}
    for o, g in zip(graph.output, cotangents):
        if g is not None:
            cot[o.name] = _add(cot[o.name], g) if o.name in cot else g
    cut, stopped, dep = _backward(list(graph.node), values, cot, params, opset)
    out = {}
    for n in names:
        if n not in params:
            out[n] = None
        elif n in cot:
            out[n] = cot[n]
        elif n in cut or n in stopped:
            out[n] = None
        else:
            out[n] = _zeros(values[n])
    return out
