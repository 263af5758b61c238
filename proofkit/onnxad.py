"""onnx-ad's derivative model of one node, executed: Method 3 of ONNX's guide (an autodiff library), beside PyTorch
(proofkit.checks) and ONNX Runtime training (proofkit.ortgrad).

onnx-ad (the `onnx-ad` package, pinned in requirements.txt) differentiates an ONNX model by source transformation:
`reverse(model)` returns another ONNX model that computes adj_x = Jᵀ·adj_y. The node is wrapped in a model whose
float inputs are graph inputs with their shapes declared, whose integer and bool inputs (axes, shapes, indices) are
initializers, as they are in an exported model, and whose outputs carry the shapes and types onnx.reference gives;
onnx-ad's adjoint model of it runs under onnx.reference in float64, so the comparison has no float32 noise. The
operator is declared at the newest opset of the installed onnx, the one onnx.reference runs the chapters at.

onnx-ad reaches some operators through others before its rules apply: the recurrent operators become a Scan over
their equations, a few (LRN, GridSample, STFT, DeformConv) are lowered to primitive operators, and operators defined
by a function in the spec (the normalizations, the losses, Attention, ...) are replaced by that function's body. Where
it does, the check says so: it then checks the spec's composition, which is itself evidence about the spec.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .checks import (DIFFERS_DECLARED, NOTHING_COMPARED, REFUSED_ONNXAD, CheckResult, _Worst, _attr_text, _call_vjp,
                     _is_float, _is_float_format, _shapes_text, _shown_name, as_engine_sees, compare_with_engine)
from .evidence import record
from .onnxrun import run_onnx, stand_in_key, stand_in_ops
from .schema import op_info
from . import values

#: How onnx-ad reached the operator (the `how` of onnxad_gradient), in the words the tables use.
HOW = {"rule": "its rule for the operator", "recurrent": "its expansion into a Scan over the operator's equations",
       "lowered": "its lowering to primitive operators", "function": "the spec's function body, expanded"}


class NoOnnxAdGradient(Exception):
    """onnx-ad gave no gradient for the node; the message quotes onnx-ad's reason.

    `refused` tells the cases apart: False where onnx-ad has no reverse rule for the operator at all (a fact about
    its coverage), True where it has a way to differentiate the operator but refused this node (an attribute value,
    an input it cannot treat) or its adjoint model did not run under onnx.reference. A refusal never stands in for a
    comparison (proofkit.verdict)."""

    def __init__(self, message: str, *, refused: bool = True):
        super().__init__(message)
        self.refused = refused


def _is_floatlike(y) -> bool:
    """A float value: NumPy's float types and the float formats it does not call floating (float8, float6, float4,
    bfloat16; proofkit.checks._is_float_format, float6 included: ONNX has FLOAT6E2M3 and FLOAT6E3M2)."""
    return _is_float(y) or _is_float_format(y)


def onnxad_version() -> str:
    import onnx_ad
    return onnx_ad.__version__


def _model(op, inputs, outs, attrs, constants=(), reals: bool = False, optional: frozenset = frozenset()):
    """The one-node model onnx-ad differentiates: float inputs as graph inputs, the others, and the float inputs at
    the positions in `constants`, as initializers. With `reals`, an input of a float format NumPy does not call
    floating (float8, float6, float4, bfloat16) is a float64 graph input cast to its format in the model, and an
    output of such a type is cast to float64 (the model's output), as a graph that reads such a tensor as numbers
    does; onnx-ad then differentiates the node between the two casts. An input at a position in `optional` is
    declared with an optional type (OptionalGetElement's input), and an output whose schema type is optional
    (Optional's) is declared so."""
    import onnx.defs

    from .ortgrad import optional_outputs
    from onnx import TensorProto, helper, numpy_helper

    inputs = list(inputs)
    while inputs and inputs[-1] is None:
        inputs.pop()
    names = [f"x{i}" if x is not None else "" for i, x in enumerate(inputs)]
    graph_inputs, initializers = [], []
    node_inputs, casts, out_casts = list(names), [], []  # with reals: the casts around the node
    for i, (n, x) in enumerate(zip(names, inputs)):
        if x is None:
            continue
        if values.is_sequence(x) or i in optional:  # a graph input of its sequence or optional type (proofkit.values)
            graph_inputs.append(values.value_info(n, x, optional=i in optional))
            continue
        x = np.asarray(x)
        if reals and _is_float_format(x) and i not in constants:  # a float64 input, cast to the format
            graph_inputs.append(helper.make_tensor_value_info(n, TensorProto.DOUBLE, x.shape))
            casts.append(helper.make_node("Cast", [n], [f"{n}_r"], to=helper.np_dtype_to_tensor_dtype(x.dtype)))
            node_inputs[i] = f"{n}_r"
        elif _is_float(x) and i not in constants:
            graph_inputs.append(helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape))
        else:
            initializers.append(numpy_helper.from_array(x, n))
    wrapped = optional_outputs(op)
    out_info = [values.value_info(f"y{k}", y, optional=k in wrapped) if values.is_sequence(y) or k in wrapped else
                helper.make_tensor_value_info(f"y{k}", helper.np_dtype_to_tensor_dtype(y.dtype), y.shape)
                for k, y in enumerate(outs)]
    node_outputs = [f"y{k}" for k in range(len(outs))]
    for k, y in enumerate(outs):
        if reals and not values.is_sequence(y) and _is_float_format(y):  # the format's values, as float64
            node_outputs[k] = f"y{k}_r"
            out_casts.append(helper.make_node("Cast", [f"y{k}_r"], [f"y{k}"], to=TensorProto.DOUBLE))
            out_info[k] = helper.make_tensor_value_info(f"y{k}", TensorProto.DOUBLE, y.shape)
    node = helper.make_node(op, node_inputs, node_outputs, **(attrs or {}))
    graph = helper.make_graph(casts + [node] + out_casts, op, graph_inputs, out_info, initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", onnx.defs.onnx_opset_version())]), names


def _outputs(op, inputs, attrs, forward) -> list:
    """The node's outputs: onnx.reference's, or the chapter's `forward` where onnx.reference cannot run the node."""
    if forward is None:
        return run_onnx(op, inputs, attrs)
    return [np.asarray(y) for y in forward(list(inputs), **(attrs or {}))]


def how_reached(model, op) -> str:
    """Which of onnx-ad's paths reaches `op` in `model`: "recurrent", "lowered", "function" or "rule" (a key of HOW).
    Runs onnx-ad's own passes in the order `reverse` runs them and asks where the operator disappears."""
    from onnx_ad.expand import expand_functions
    from onnx_ad.lower import lower
    from onnx_ad.recurrent import expand_recurrent

    def present(m):
        return any(n.op_type == op for n in m.graph.node)

    for key, step in (("recurrent", expand_recurrent), ("lowered", lower), ("function", expand_functions)):
        model = step(model)
        if not present(model):
            return key
    return "rule"


def _interface_only(op: str, err: Exception, node_values) -> bool:
    """Whether onnx-ad's refusal of a one-node model is only its interface check (a graph input or output it
    differentiates must be a float tensor: `select` in onnx_ad/_build.py, "... is not of a floating-point type")
    meeting a sequence value of the node, for an operator onnx-ad has no reverse rule for (onnx_ad.rules.REVERSE, the
    registry its reverse pass consults): then the fact about onnx-ad is the missing rule, which a model with tensors
    at its ends and the sequence inside shows executed (onnx-ad stops at the first sequence operator it meets)."""
    from onnx_ad.rules import REVERSE

    return (isinstance(err, ValueError) and "is not of a floating-point type" in str(err)
            and any(values.is_sequence(v) and v is not None for v in node_values) and op not in REVERSE)


def onnxad_gradient(op, inputs, cotangents, attrs=None, *, with_how: bool = False, wrt: list[int] | None = None,
                    forward=None, constants: list[int] | None = None, runner: str = "onnx.reference",
                    reals: bool = False, optional_inputs=(), outs=None):
    """onnx-ad's adjoint of Σ_k ⟨output_k, cotangent_k⟩ for every input: an array (float64 when the input is), or None
    for an input that is not float or is omitted. With `with_how`, also returns how onnx-ad reached the operator
    (a key of HOW). `wrt` lists the positions of the inputs to differentiate (default: every float input); the
    others get None. `forward(inputs, **attrs)` gives the outputs (their shapes and types declare the model's outputs)
    where onnx.reference cannot run the node (DeformConv off two spatial axes); by default onnx.reference does.
    `constants` lists the positions of float inputs that the model holds as initializers, as an exported model holds
    Resize's roi: onnx-ad then treats them as constants (they get None). `runner="onnxruntime"` runs the adjoint model
    with ONNX Runtime (see _run_with_onnxruntime) where onnx.reference cannot run it (a Scan in reverse direction).
    With `reals`, the float formats NumPy does not call floating (float8, float6, float4, bfloat16) are read as real
    numbers: such an input is a float64 graph input cast to its format in the model, and onnx-ad is asked for it;
    such an output is cast to float64 and seeded there (see _model). `optional_inputs` names the inputs declared
    with an optional type (proofkit.ortgrad.optional_positions). `outs` are the node's outputs on these inputs where
    the caller has them already (they declare the model's outputs); by default they are computed as above.

    Raises NoOnnxAdGradient when onnx-ad has no rule for the operator (refused=False), refuses this node, or its
    adjoint model does not run under onnx.reference (refused=True)."""
    import onnx_ad

    inputs = list(inputs)
    outs = _outputs(op, inputs, attrs, forward) if outs is None else list(outs)
    constants = tuple(constants or ())
    from .ortgrad import optional_positions

    model, names = _model(op, inputs, outs, attrs, constants, reals,
                          frozenset(optional_positions(op, inputs, optional_inputs)))

    def real(x):
        return _is_float(x) or (reals and _is_float_format(x))

    # a cotangent on an output of a float type NumPy does not call floating (float8, float4, bfloat16 through
    # ml_dtypes) is passed on too: onnx-ad then says itself whether it takes that type
    seeded = [k for k, (y, g) in enumerate(zip(outs, cotangents)) if g is not None and _is_floatlike(y)]
    wanted = [n for i, (n, x) in enumerate(zip(names, inputs))
              if x is not None and real(x) and i not in constants and (wrt is None or i in wrt)]
    if not seeded or not wanted:
        grads = [None] * len(inputs)
        return (grads, "rule") if with_how else grads
    try:
        key = (model.SerializeToString(deterministic=True), op, tuple(wanted), tuple(seeded))
        how, adjoint = _adjoint(*key)
    except onnx_ad.UnsupportedOperator as e:
        text = " ".join(str(e).split())
        no_rule = text.startswith(f"no reverse rule for {op} ")
        raise NoOnnxAdGradient(f"onnx-ad {onnxad_version()} " + (f"has no reverse rule for {op}" if no_rule else
                                                                  f"refused the node: {text}"),
                               refused=not no_rule) from None
    except Exception as e:  # noqa: BLE001 - onnx-ad's own failure on this node, quoted
        said = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
        if _interface_only(op, e, [*inputs, *outs]):  # what onnx-ad lacks is the rule, not a float interface
            raise NoOnnxAdGradient(f"onnx-ad {onnxad_version()} has no reverse rule for {op} (onnx_ad.rules.REVERSE "
                                   f"holds none; on this node its interface check answers first: {said})",
                                   refused=False) from None
        raise NoOnnxAdGradient(f"onnx-ad {onnxad_version()} failed to build the adjoint model: {said}") from None
    feeds = {n: values.as_value(x) for i, (n, x) in enumerate(zip(names, inputs))
             if x is not None and (real(x) or values.is_sequence(x)) and i not in constants}
    if reals:  # the float formats are fed as float64 (cast to their format in the model)
        feeds = {n: (np.asarray(v).astype(np.float64) if _is_float_format(v) and not values.is_sequence(v) else v)
                 for n, v in feeds.items()}
    for k in seeded:  # one seed direction: a trailing axis of length 1 (onnx-ad's "onnx" layout)
        if values.is_sequence(outs[k]):  # a sequence output: a list of seeds, None entries as zeros
            feeds[f"adj_y{k}"] = [np.zeros(np.shape(e) + (1,), e.dtype) if g is None
                                  else np.asarray(g, e.dtype)[..., None] for g, e in zip(cotangents[k], outs[k])]
            continue
        seed_type = np.float64 if reals and _is_float_format(outs[k]) else outs[k].dtype  # the Cast's float64
        feeds[f"adj_y{k}"] = np.asarray(cotangents[k], seed_type)[..., None]
    wanted_out = [f"adj_{n}" for n in wanted]
    try:
        with np.errstate(all="ignore"):
            if runner == "onnxruntime":
                got = _run_with_onnxruntime(adjoint, wanted_out, feeds)
            else:
                got = _adjoint_evaluator(*key, stand_in_key()).run(wanted_out, feeds)
    except Exception as e:  # noqa: BLE001 - the adjoint model was built but the runner could not run it
        raise NoOnnxAdGradient(f"onnx-ad {onnxad_version()} built an adjoint model of {op} that "
                               f"{'ONNX Runtime' if runner == 'onnxruntime' else 'onnx.reference'} could not run: "
                               f"{type(e).__name__}: {' '.join(str(e).split())[:300]}") from None
    result = dict(zip(wanted, got))
    grads = [None if n not in result else [np.asarray(e)[..., 0] for e in result[n]] if isinstance(result[n], list)
             else np.asarray(result[n])[..., 0] for n in names]
    if reals:  # an adjoint in a float format, as a real number
        grads = [g if g is None or not _is_float_format(g) else g.astype(np.float64) for g in grads]
    grads += [None] * (len(inputs) - len(grads))
    return (grads, how) if with_how else grads


@lru_cache(maxsize=256)
def _adjoint(model_bytes: bytes, op: str, wanted: tuple, seeded: tuple):
    """(how onnx-ad reached op, onnx-ad's adjoint model) of the one-node model for the inputs `wanted` and the seeded
    outputs, built once per model and process: a check that samples several points of one shape asks for the same
    adjoint each time. The model holds every value that is not a graph input (integer inputs, constants), so equal
    bytes mean the same adjoint. A failure raises and is not kept."""
    import onnx
    import onnx_ad

    model = onnx.load_from_string(model_bytes)
    return how_reached(model, op), onnx_ad.reverse(model, inputs=list(wanted), outputs=[f"y{k}" for k in seeded],
                                                   prefix="adj_", layout="onnx")


@lru_cache(maxsize=256)
def _adjoint_evaluator(model_bytes: bytes, op: str, wanted: tuple, seeded: tuple, stand_ins: tuple):
    """onnx.reference's evaluator of the adjoint model (_adjoint), built once per model and set of stand-ins
    (`stand_ins`: each stand-in's operator and function identity, so that a stand-in registered later gets an
    evaluator of its own). An evaluator keeps no state between runs."""
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(_adjoint(model_bytes, op, wanted, seeded)[1], new_ops=stand_in_ops() or None)


def _run_with_onnxruntime(adjoint, wanted_out, feeds):
    """The adjoint model run by ONNX Runtime's CPU provider in float64, graph optimizations off (they are not part of
    onnx-ad's model). ONNX Runtime 1.19 reads models up to opset 21 and IR version 10: the model's default-domain opset
    is relabelled 21 when newer, which leaves its meaning unchanged only where the operators it uses did not change
    meaning after opset 21; the chapter that asks for this runner says why that holds for its operator."""
    import onnx
    import onnxruntime as ort

    from .ortgrad import IR_VERSION, OPSET, quiet_stderr, session_options

    model = onnx.ModelProto()
    model.CopyFrom(adjoint)
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx") and entry.version > OPSET:
            entry.version = OPSET
    model.ir_version = min(model.ir_version, IR_VERSION)
    options = session_options(4)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    with quiet_stderr():
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        needed = {i.name for i in session.get_inputs()}
        return session.run(wanted_out, {n: x for n, x in feeds.items() if n in needed})


def check_vjp_onnxad(op, vjp, inputs, attrs=None, *, seed=0, rtol=1e-9, atol=1e-12,
                     disagree: dict[str, str] | None = None, outputs: list[str] | None = None,
                     inputs_wrt: list[str] | None = None, forward=None,
                     constants: list[str] | None = None, runner: str = "onnx.reference",
                     reals: bool = False, optional_inputs=()) -> CheckResult:
    """Method 3 of ONNX's guide, executed: `vjp` against onnx-ad's adjoint model of the same node, run by
    onnx.reference in float64 with the same random cotangents as the ONNX Runtime check (same `seed`). Sequence
    inputs and outputs (lists of arrays, proofkit.values) are declared with their sequence types; onnx-ad 0.3.0
    refuses them, which is recorded as a refusal, never as a comparison.

    Each float input must agree within atol + rtol·max(max|gradient|, 1), unless it is named in `disagree` with the
    reason: then it must differ (the witness of a finding about onnx-ad, printed). Where onnx-ad has no rule for the
    operator, or refuses the node, that is recorded and shown with onnx-ad's reason, never as a pass.

    `outputs` names the outputs to seed (default: every float output). The others get a zero cotangent in `vjp` and
    no seed in onnx-ad's model, which is the same product; the table's notes say which were seeded. `inputs_wrt`
    names the inputs to ask onnx-ad for (default: every float input): where it refuses one input (ConvTranspose's
    weight), the others can still be compared; the notes say which were asked for. `forward` stands in for
    onnx.reference where it cannot run the node (see onnxad_gradient; the notes say so). `constants` names float
    inputs the model holds as initializers, as an exported model holds Resize's roi: onnx-ad is not asked for them,
    and the notes say so. `runner="onnxruntime"` runs onnx-ad's adjoint model with ONNX Runtime instead of
    onnx.reference, where onnx.reference cannot run it (a Scan in reverse direction: RNN, LinearAttention); the notes
    say so, and the chapter says why the model's opset, relabelled 21 for ONNX Runtime 1.19, keeps its meaning.

    With `reals`, the float formats NumPy does not call floating (float8, float6, float4, bfloat16) are read as real
    numbers, as check_vjp_fd(reals=True) reads them: an output of such a type gets a cotangent, drawn after the others
    and rounded to the output's format, the cotangents of check_vjp_ort(reals=True) with the same seed, and is cast
    to float64 in onnx-ad's model; an input of such a type is fed as float64, cast to its format in the model, and
    compared too (onnxad_gradient), with vjp's gradient rounded to the input's format, the type onnx-ad's adjoint
    comes back in through the cast.

    `optional_inputs` names the inputs the model declares with an optional type (OptionalGetElement's input), as
    check_vjp_ort(optional_inputs=) does; an output of optional type (Optional's) is declared so.
    """
    if runner not in ("onnx.reference", "onnxruntime"):
        raise ValueError(f"runner is onnx.reference or onnxruntime, not {runner!r}")
    info = op_info(op)
    disagree = dict(disagree or {})
    full = info.with_defaults(attrs)
    x = [None if v is None else values.as_value(v) for v in inputs]  # a sequence stays a list (proofkit.values)
    outs = _outputs(op, x, attrs, forward)

    def real(v):
        return _is_float(v) or (reals and _is_float_format(v))

    if not any(real(y) for y in outs):
        raise AssertionError(f"{op}: no output is float here, so there is no cotangent and nothing for onnx-ad to "
                             "differentiate; this check is for operators with a float output")
    rng = np.random.default_rng(seed)  # the cotangents of check_vjp_ort with the same seed, in float64
    cot = [values.draw_like(y, rng, np.float32) for y in outs]  # per element of a sequence output, as before
    if reals:  # the float formats draw after the others, rounded to the output's format
        cot = [np.asarray(rng.standard_normal(y.shape)).astype(y.dtype).astype(np.float64) if _is_float_format(y)
               else c for y, c in zip(outs, cot)]
    seeded_note = ""
    if outputs is not None:
        unknown = set(outputs) - {info.output_name(k) for k in range(len(outs))}
        if unknown:
            raise AssertionError(f"{op}: outputs {sorted(unknown)} are not outputs of this call")
        cut = [info.output_name(k) for k, g in enumerate(cot) if g is not None and info.output_name(k) not in outputs]
        cot = [g if g is None or info.output_name(k) in outputs else np.zeros_like(g) for k, g in enumerate(cot)]
        seeded_note = f"cotangent on {', '.join(outputs)} only ({', '.join(cut)} seeded with 0 in vjp, not in onnx-ad)"
    ad_cot = [g if outputs is None or info.output_name(k) in outputs else None for k, g in enumerate(cot)]
    wrt = None
    fixed = []
    if constants is not None:
        fixed = [i for i, v in enumerate(x) if real(v) and info.input_name(i) in constants]
        unknown = set(constants) - {info.input_name(i) for i in fixed}
        if unknown:
            raise AssertionError(f"{op}: {sorted(unknown)} are not float inputs of this call")
        seeded_note = "; ".join(([seeded_note] if seeded_note else [])
                                + [f"{', '.join(_shown_name(info, i) for i in fixed)} held constant (an initializer)"])
    if inputs_wrt is not None:
        wrt = [i for i, v in enumerate(x) if real(v) and info.input_name(i) in inputs_wrt]
        unknown = set(inputs_wrt) - {info.input_name(i) for i in wrt}
        if unknown:
            raise AssertionError(f"{op}: {sorted(unknown)} are not float inputs of this call")
        skipped = [_shown_name(info, i) for i, v in enumerate(x) if real(v) and i not in wrt and i not in fixed]
        seeded_note = "; ".join(([seeded_note] if seeded_note else [])
                                + [f"asked for {', '.join(inputs_wrt)} only (not {', '.join(skipped)})"])
    if forward is not None:
        seeded_note = "; ".join(([seeded_note] if seeded_note else [])
                                + ["output shapes from the chapter's forward, which onnx.reference cannot run here"])
    if runner == "onnxruntime":
        seeded_note = "; ".join(([seeded_note] if seeded_note else [])
                                + ["adjoint model run by ONNX Runtime (opset relabelled 21), not onnx.reference"])
    formats = sorted({str(v.dtype) for v in [*x, *outs] if v is not None and reals and _is_float_format(v)})
    where = (f"inputs {_shapes_text(x)}, attributes {_attr_text(attrs)}, float64 under "
             f"{'ONNX Runtime (opset relabelled 21)' if runner == 'onnxruntime' else 'onnx.reference'}"
             + (f"; {', '.join(formats)} read as reals" if formats else "")
             + (f"; {', '.join(sorted(optional_inputs))} declared optional" if optional_inputs else ""))
    fields = dict(inputs=_shapes_text(x), attrs=_attr_text(attrs))
    try:
        theirs, how = onnxad_gradient(op, x, ad_cot, attrs, with_how=True, wrt=wrt, forward=forward, constants=fixed,
                                      runner=runner, reals=reals, optional_inputs=optional_inputs, outs=outs)
    except NoOnnxAdGradient as e:
        for i, v in enumerate(x):
            if real(v) and i not in fixed and (wrt is None or i in wrt):
                record(op, info.input_name(i), "onnxad-refused" if e.refused else "onnxad-none", vjp, detail=str(e),
                       data={"case": where})
        if disagree:
            raise AssertionError(f"{op}: a disagreement with onnx-ad is declared, but it gave no gradient: {e}")
        return CheckResult("onnx-ad", op, [], summary=f"onnx-ad check of {op}: {e} ({where})",
                           notes="; ".join([str(e)] + ([seeded_note] if seeded_note else [])),
                           outcome=REFUSED_ONNXAD if e.refused else NOTHING_COMPARED, **fields)
    ours = _call_vjp(op, vjp, x, cot, full, reals=reals)
    checked, witnesses, worst = [], [], _Worst()
    for i, (g, t) in enumerate(zip(ours, theirs)):
        name, shown = info.input_name(i), _shown_name(info, i)
        if x[i] is None or not real(x[i]) or t is None:
            continue
        mine, t = as_engine_sees(g, t, x[i], reals)
        c = compare_with_engine(op, "onnx-ad", shown, mine, t, rtol=rtol, atol=atol, declared=disagree.get(name))
        if not c.agree:
            witnesses.append(f"{shown}: onnx-ad differs ({c.why}); {disagree[name]}")
            record(op, name, "onnxad-differs", vjp, detail=disagree[name], data={"what": c.what, "case": where})
            continue
        worst.add(c.err, c.tol)
        # vjp's None against onnx-ad's zeros agrees, but is no gradient: recorded apart, so that a verdict of
        # "non-differentiable" is not read as a gradient that vjp returned
        record(op, name, "onnxad" if g is not None else "onnxad-zero", vjp, detail=how)
        checked.append(shown)
    reached = "" if how == "rule" else f"through {HOW[how]}"
    notes = "; ".join(([reached] if reached else []) + ([seeded_note] if seeded_note else []) + witnesses)
    detail = where + f", tolerance {rtol:.0e}" + (f"; {notes}" if notes else "")
    if not checked:
        return CheckResult("onnx-ad", op, [], summary=f"onnx-ad check of {op}: no input agrees; {detail}",
                           outcome=DIFFERS_DECLARED if witnesses else NOTHING_COMPARED, notes=notes, **fields)
    return CheckResult("onnx-ad", op, checked, detail, error=worst.err, tol=worst.tol, notes=notes, **fields)
