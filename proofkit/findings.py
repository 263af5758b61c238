"""Departures from the spec that chapters found, each bound to a witness: of ONNX's reference implementation
(`onnx.reference`), of a schema's function body, and of ONNX Runtime's forward.

A chapter that finds `onnx.reference` departing from the spec calls `check_reference_departure` with a small witness
input and the spec's own math. The call runs both, asserts that they differ (so the cell fails the day
`onnx.reference` is fixed and the chapter must be updated), records the departure in the evidence store under the
kind "reference-departure" (the verdict ignores it: it is a fact about the reference, not about the operator's
gradient) and returns a `Finding`. The finding is stored in the executed notebook under `FINDING_MIME`, from which
the audit reads it back (proofkit.audit.stored_outputs) for the page that lists every departure with its witness.
`check_function_body_departure` does the same for the function body a schema gives an operator, and
`check_runtime_departure` for ONNX Runtime's own forward of the node (a wrong value, a refusal, or a process that
dies); the finding's `component` names which of the three departs.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass

import numpy as np

from . import evidence
from .checks import _as_list, _attr_value, _gap
from .onnxrun import run_onnx
from .schema import op_info
from .values import is_sequence

#: MIME type under which a finding is stored in the notebook.
FINDING_MIME = "application/vnd.proofkit.finding+json"
#: The evidence kind of a finding (recorded under the empty name, about no backward function).
KIND = "reference-departure"
#: Significant digits of the figures a finding shows.
DIGITS = 10
#: Entries of an input shown in the text of the witness.
SHOWN = 6
#: What departs from the spec: a finding's `component` (the first is the default and is not stored).
REFERENCE, BODY, RUNTIME = "onnx.reference", "the schema's function body", "ONNX Runtime"
COMPONENTS = (REFERENCE, BODY, RUNTIME)


def _figure(v, digits: int = DIGITS) -> float | str:
    """A value rounded to `digits` significant digits; a string for NaN and infinities (JSON has no such number)."""
    v = float(v)
    if not np.isfinite(v):
        return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
    return float(f"{v:.{digits}g}") + 0.0  # + 0.0: no -0.0


def _digits(a: float, b: float, gap: float) -> int:
    """Enough significant digits to tell a from b apart (at least DIGITS, at most 17)."""
    scale = max(abs(a), abs(b)) if np.isfinite(a) and np.isfinite(b) else 0.0
    if not (scale > 0 and 0 < gap < np.inf):
        return DIGITS
    return int(min(17, max(DIGITS, np.ceil(np.log10(scale / gap)) + 3)))


def _text(v) -> str:
    return v if isinstance(v, str) else repr(v)


def _array(x) -> str:
    """An array as text: type, shape and first entries, e.g. float64[2, 3] = [0.0, 1.0, ...]; a sequence (a list of
    arrays, proofkit.values) as seq(...) of its elements."""
    if is_sequence(x):
        return "seq(" + ", ".join(_array(e) for e in x) + ")"
    a = np.asarray(x)
    return f"{a.dtype}{list(a.shape)} = {_values(a)}"


def _values(x: np.ndarray) -> str:
    flat = x.reshape(-1)
    # NumPy's shortest text that reads back to the same value; a string quoted, so that '' and ' ' stay visible
    shown = [repr(v) if isinstance(v, (str, bytes)) else str(v) for v in flat[:SHOWN]]
    body = ", ".join(shown) + (", ..." if flat.size > SHOWN else "")
    return body if x.ndim == 0 else f"[{body}]"


def describe_inputs(op: str, inputs, attrs: dict | None = None) -> str:
    """The witness as text: each input's name, type, shape and first values; the attributes set."""
    info = op_info(op)
    parts = []
    for i, x in enumerate(inputs):
        name = info.input_name(i)
        if info.inputs[min(i, len(info.inputs) - 1)].variadic:
            name += f" #{i - len(info.inputs) + 1}"
        if x is None:
            parts.append(f"{name} omitted")
            continue
        parts.append(f"{name}: {_array(x)}")
    parts += [f"{k}={_attr_value(v)}" for k, v in sorted((attrs or {}).items()) if v is not None]
    return "; ".join(parts)


@dataclass(frozen=True)
class Finding:
    """A departure from the spec, with the witness that shows it (deterministic display): of onnx.reference unless
    `component` names another (a schema's function body, ONNX Runtime's forward)."""

    op: str
    title: str
    explanation: str
    inputs: str
    output: str  # the output the witness entry belongs to
    index: tuple | None  # the witness entry in that output (None when the reference fails or the shapes differ)
    reference: float | str  # the reference's value there, rounded (a string for an error or another shape)
    spec: float | str  # the spec's value there, rounded (its whole output as text when there is no entry)
    difference: float | str | None  # |reference - spec| there, rounded; None when the reference raised
    component: str = REFERENCE  # what departs: a member of COMPONENTS ("reference" above then means its value)
    element: int | None = None  # for a sequence output: the element the witness entry `index` belongs to

    def as_json(self) -> dict:
        data = {"op": self.op, "title": self.title, "explanation": self.explanation, "inputs": self.inputs,
                "output": self.output, "index": None if self.index is None else list(self.index),
                "reference": self.reference, "spec": self.spec, "difference": self.difference}
        data = data if self.element is None else {**data, "element": self.element}
        return data if self.component == REFERENCE else {**data, "component": self.component}

    def _comparison(self) -> str:
        return comparison(self.as_json())

    def __repr__(self) -> str:
        return (f"Departure of {self.component} from the spec ({self.op}): {self.title}; at {self.inputs}, "
                f"{self._comparison()}.")

    def _repr_html_(self) -> str:
        e = html.escape
        who = "<code>onnx.reference</code>" if self.component == REFERENCE else e(self.component)
        return ('<div class="proofkit-finding" style="border: 1px solid #c9a227; border-left-width: 4px; '
                'padding: 0.4em 0.8em; margin: 0.4em 0;">'
                f"<p><strong>Departure of {who} from the spec ({e(self.op)}):</strong> "
                f"{e(self.title)}</p><p>{e(self.explanation)}</p>"
                f"<p>Witness: <code>{e(self.inputs)}</code>; {e(self._comparison())}.</p></div>")

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": repr(self), "text/html": self._repr_html_(),
                FINDING_MIME: json.loads(json.dumps(self.as_json()))}


def comparison(finding: dict, text=_text, reference: str | None = None) -> str:
    """What the witness showed, from a finding's data: the departing component's value at the witness entry against
    the spec's, or, with no entry (it raised, or returned another shape), what it did against the spec's output.
    `text` formats each value (the audit's escapes it for Markdown); `reference` names the component (by default the
    finding's own)."""
    f = finding
    reference = reference or f.get("component", REFERENCE)
    if f["index"] is None:
        return f"{reference} {text(f['reference'])}, where the spec gives {text(f['output'])}: {text(f['spec'])}"
    at = "[" + ", ".join(map(str, f["index"])) + "]" if f["index"] else ""
    if f.get("element") is not None:  # a sequence output: its element, then the entry in that element
        at = f" element {f['element']}" + (f", entry {at}" if at else "")
    said = f"{reference} gives {text(f['output'] + at)} = {text(f['reference'])}, the spec {text(f['spec'])}"
    return said if f["difference"] == "unequal" else f"{said} (difference {text(f['difference'])})"


def _recorded(finding: Finding) -> Finding:
    evidence.record(finding.op, "", KIND, None, finding.title, finding.as_json())
    return finding


def _as_float(y: np.ndarray) -> np.ndarray:
    try:
        return np.asarray(y).astype(np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"check_reference_departure compares numeric outputs; got {np.asarray(y).dtype}") from err


def check_reference_departure(op: str, inputs, attrs: dict | None = None, *, spec, title: str, explanation: str,
                              min_difference: float, raises: type[BaseException] | None = None,
                              n_outputs: int | None = None) -> Finding:
    """Assert that onnx.reference departs from the spec at the witness `inputs`, record it and return the finding.

    spec(inputs, **attrs_with_defaults) computes the spec's outputs exactly or in float64 (one array, or a list in
    schema order). The assertion: some entry of some output differs by at least `min_difference` (NaN against a
    number counts as an infinite difference), or the shapes differ; or, with `raises=`, onnx.reference raises that
    exception where the spec computes a value. The witness entry shown is the largest difference.

    The cell must show the returned finding (as its last expression, or with display()): the stored output is what
    the audit reads.
    """
    if not min_difference > 0:
        raise ValueError("min_difference must be positive")
    info = op_info(op)
    inputs = list(inputs)
    full = info.with_defaults(attrs)
    want = [list(y) if is_sequence(y) else np.asarray(y) for y in _as_list(spec(inputs, **full))]  # a sequence kept
    shown = describe_inputs(op, inputs, attrs)
    if raises is not None:
        try:
            got = run_onnx(op, inputs, attrs, n_outputs=n_outputs)
        except raises as err:
            message = re.sub(r" at 0x[0-9a-fA-F]+", "", str(err).splitlines()[0] if str(err) else "")  # no addresses
            message = message if len(message) <= 120 else message[:117] + "..."
            return _recorded(Finding(op, title, explanation, shown, info.output_name(0), None,
                                     f"raises {type(err).__name__}" + (f": {message}" if message else ""),
                                     _array(want[0]), None))
        raise AssertionError(f"{op}: onnx.reference no longer raises {raises.__name__} at {shown}; it returned "
                             f"{[_values(np.asarray(y)) for y in got]}: the departure '{title}' is gone, update "
                             "the chapter")
    got = run_onnx(op, inputs, attrs, n_outputs=n_outputs if n_outputs is not None else len(want))
    if len(got) != len(want):
        raise ValueError(f"{op}: spec returned {len(want)} outputs, onnx.reference {len(got)}")
    if any(is_sequence(y) for y in [*got, *want]):
        witness = _sequence_departure(got, want, min_difference)
    else:
        witness = _departure(got, want, min_difference)
        witness = witness if isinstance(witness, str) else (*witness, None)  # a tensor output: no element
    if isinstance(witness, str):
        raise AssertionError(f"{op}: onnx.reference agrees with the spec at {shown} {witness}: the departure "
                             f"'{title}' is gone, update the chapter")
    k, index, value, spec_value, difference, element = witness
    return _recorded(Finding(op, title, explanation, shown, info.output_name(k), index, value, spec_value, difference,
                             element=element))


def _sequence_departure(got, want, min_difference: float | None):
    """_departure for outputs among which some are sequences (lists of arrays, proofkit.values), as the witness
    (k, index, got value, spec value, difference, element): an output whose structure differs (a sequence against a
    tensor, another length, an element of another shape) is shown whole, both sides as text (index and element None);
    otherwise the entries are compared leaf by leaf and the witness names the element of a sequence output (None for a
    tensor output) and the entry within it."""
    leaves, where = [], []  # (got leaf, spec leaf), (output position, element or None)
    for k, (r, w) in enumerate(zip(got, want)):
        if is_sequence(r) or is_sequence(w):
            if not (is_sequence(r) and is_sequence(w)) or len(r) != len(w) or any(
                    np.shape(a) != np.shape(b) for a, b in zip(r, w)):
                return k, None, _escaped(f"returns {_array(r)}"), _escaped(_array(w)), "shapes differ", None
            leaves += list(zip(r, w))
            where += [(k, j) for j in range(len(r))]
        else:
            leaves.append((r, w))
            where.append((k, None))
    witness = _departure([a for a, _ in leaves], [b for _, b in leaves], min_difference)
    if isinstance(witness, str):
        return witness
    leaf, index, value, spec_value, difference = witness
    k, element = where[leaf]
    return k, index, value, spec_value, difference, element


def _escaped(text: str) -> str:
    """Control characters (a NUL) as their escapes, so that the stored text and the audit page show them."""
    return re.sub(r"[\x00-\x1f\x7f]", lambda m: repr(m.group())[1:-1], text)


def _same(a, b) -> bool:
    """Equality of two entries, NaN counting as equal to NaN (as _gap counts it for check_reference_departure)."""
    with np.errstate(invalid="ignore"):
        if a == b:
            return True
        return a != a and b != b  # only NaN is unequal to itself


def _departure(got, want, min_difference: float | None):
    """Where outputs `got` depart from the spec's `want`, output by output, as the witness (k, index, got value, spec
    value, difference): the first output whose shape differs (index None, both arrays as text); else, with
    `min_difference` None, the first unequal entry (NaN equals NaN; both values as their repr, "unequal"); else the
    entry with the largest difference, when it is at least `min_difference` (values rounded to enough digits to tell
    them apart). When nothing departs, a string saying so, for the caller's "the departure is gone"."""
    same = np.frompyfunc(_same, 2, 1)
    best = None  # (gap, output position, index, got value, spec value)
    for k, (r, w) in enumerate(zip(got, want)):
        r, w = np.asarray(r), np.asarray(w)
        if r.shape != w.shape:
            return k, None, _escaped(f"returns {_array(r)}"), _escaped(_array(w)), "shapes differ"
        if not r.size:
            continue
        if min_difference is None:
            unequal = ~np.asarray(same(r.astype(object), w.astype(object)), dtype=bool).reshape(r.shape)
            if unequal.any():
                i = tuple(int(j) for j in np.argwhere(unequal)[0])
                got_v, want_v = (v.item() if isinstance(v, np.generic) else v for v in (r[i], w[i]))
                return k, i, repr(got_v), repr(want_v), "unequal"
            continue
        rf, wf = _as_float(r), _as_float(w)
        gap = _gap(rf, wf)
        i = np.unravel_index(int(np.argmax(gap)), gap.shape)
        if best is None or gap[i] > best[0]:
            best = (float(gap[i]), k, tuple(int(j) for j in i), rf[i], wf[i])
    if min_difference is None:
        return "every entry is equal"
    if best is None or not best[0] >= min_difference:
        return f"within {min_difference:g} (" + ("no entries" if best is None else
                                                  f"the largest difference is {best[0]:.3g}") + ")"
    gap, k, index, r, w = best
    digits = _digits(float(r), float(w), gap)
    return k, index, _figure(r, digits), _figure(w, digits), _figure(gap)


def check_reference_departure_exact(op: str, inputs, attrs: dict | None = None, *, spec, title: str,
                                    explanation: str, n_outputs: int | None = None) -> Finding:
    """check_reference_departure for outputs compared by equality, of any type, strings included (RegexFullMatch,
    StringNormalizer): assert that some entry of some output of onnx.reference differs from the spec's, or that the
    shapes differ, record the departure and return the finding. Entries are compared with ==, except that NaN equals
    NaN; a float difference that only a tolerance can judge belongs to check_reference_departure. The witness entry
    shown is the first unequal one, both values as their Python repr (a string's escapes, such as '\\x00', stay
    visible); the difference reads "unequal". Control characters in the witness's text, and in the arrays shown when
    the shapes differ, are escaped. The cell must show the returned finding, as for check_reference_departure."""
    info = op_info(op)
    inputs = list(inputs)
    want = [np.asarray(y) for y in _as_list(spec(inputs, **info.with_defaults(attrs)))]
    shown = _escaped(describe_inputs(op, inputs, attrs))
    got = run_onnx(op, inputs, attrs, n_outputs=n_outputs if n_outputs is not None else len(want))
    if len(got) != len(want):
        raise ValueError(f"{op}: spec returned {len(want)} outputs, onnx.reference {len(got)}")
    witness = _departure(got, want, None)
    if isinstance(witness, str):
        raise AssertionError(f"{op}: onnx.reference equals the spec at {shown}: the departure '{title}' is gone, "
                             "update the chapter")
    k, index, value, spec_value, difference = witness
    return _recorded(Finding(op, title, explanation, shown, info.output_name(k), index, value, spec_value, difference))


@dataclass(frozen=True, repr=False)  # the repr of Finding, which names the component
class BodyFinding(Finding):
    """A departure of the schema's function body from the spec's prose, found by running the body in onnx.reference:
    a Finding whose component is the function body."""

    component: str = BODY


def _body_model(op: str, inputs: list, attrs: dict):
    """The schema's function body (the newest version's) for a node of `op` with these inputs and attributes, as a
    model onnx.reference can run: a context-dependent body is generated for the inputs' types; every attribute of a
    body node that refers to an attribute of the operator (@name) takes the node's value or the schema's default,
    and is left out where neither exists (as ONNX expands a function)."""
    import onnx
    from onnx import helper

    schema = onnx.defs.get_schema(op)
    names = [op_info(op).input_name(i) for i in range(len(inputs))]
    node = helper.make_node(op, names, [f.name for f in schema.outputs], **attrs)
    types = [helper.make_tensor_type_proto(helper.np_dtype_to_tensor_dtype(np.asarray(x).dtype), np.shape(x))
             for x in inputs]
    if schema.has_context_dependent_function:
        body = onnx.FunctionProto()
        body.ParseFromString(schema.get_context_dependent_function(node.SerializeToString(),
                                                                   [t.SerializeToString() for t in types]))
    elif schema.has_function:
        body = schema.function_body
    else:
        raise ValueError(f"{op}: the schema (version {schema.since_version}) has no function body")
    defaults = {a.name: helper.get_attribute_value(a.default_value)
                for a in schema.attributes.values() if a.default_value.type}
    values = {**defaults, **attrs}
    nodes = []
    for n in body.node:
        copy = onnx.NodeProto()
        copy.CopyFrom(n)
        del copy.attribute[:]
        for a in n.attribute:
            if not a.ref_attr_name:
                copy.attribute.append(a)
            elif values.get(a.ref_attr_name) is not None:
                kind = a.type or int(schema.attributes[a.ref_attr_name].type)  # the operator's declared type
                copy.attribute.append(helper.make_attribute(a.name, values[a.ref_attr_name], attr_type=kind))
        nodes.append(copy)
    graph = helper.make_graph(nodes, f"{op}_body", [helper.make_value_info(x, t) for x, t in zip(body.input, types)],
                              [helper.make_empty_tensor_value_info(y) for y in body.output])
    opsets = list(body.opset_import) or [helper.make_opsetid("", schema.since_version)]
    return helper.make_model(graph, opset_imports=opsets), list(body.input)


def check_function_body_departure(op: str, inputs, attrs: dict | None = None, *, spec, title: str, explanation: str,
                                  min_difference: float, statistic=None, what: str | None = None) -> BodyFinding:
    """Assert that the function body ONNX's schema gives `op` departs from the spec's prose at the witness `inputs`,
    record it and return the finding (Bernoulli's body draws 1 with probability 1 - p).

    The body (generated for the inputs' types, with the node's attributes substituted; see _body_model) is run node
    by node by onnx.reference. Without `statistic`, spec(inputs, **attrs_with_defaults) returns the spec's outputs
    and they are compared entry by entry with the body's, as check_reference_departure compares them. With
    `statistic`, a function of the body's list of outputs (for a random operator: a frequency), spec returns the
    spec's value of that statistic, and `what` names it (e.g. "the fraction of ones in output"). The assertion: some
    compared entry differs by at least `min_difference`, or the shapes differ. A body that agrees with the spec fails
    the call (the departure is gone: update the chapter); an operator without a function body raises ValueError.

    The finding is stored as a Finding (the audit lists it with the departures of onnx.reference, naming what was
    compared as computed "from the function body"); the cell must show it, as for check_reference_departure.
    """
    if not min_difference > 0:
        raise ValueError("min_difference must be positive")
    inputs = list(inputs)
    if any(x is None for x in inputs):
        raise ValueError("check_function_body_departure runs the body on given inputs only: drop omitted ones")
    info = op_info(op)
    full = info.with_defaults(attrs)
    model, names = _body_model(op, inputs, {k: v for k, v in (attrs or {}).items() if v is not None})
    from onnx.reference import ReferenceEvaluator

    with np.errstate(all="ignore"):  # a body may divide by zero: its NaN or infinity is what is compared
        got = ReferenceEvaluator(model).run(None, {n: np.asarray(x) for n, x in zip(names, inputs)})
    if statistic is not None:
        got, want = [np.asarray(statistic(got), dtype=np.float64)], [np.asarray(spec(inputs, **full), np.float64)]
        labels = [what or f"the statistic of {info.output_name(0)}"]
    else:
        want = [np.asarray(y) for y in _as_list(spec(inputs, **full))]
        if len(got) != len(want):
            raise ValueError(f"{op}: spec returned {len(want)} outputs, the function body {len(got)}")
        labels = [info.output_name(k) for k in range(len(want))]
    shown = describe_inputs(op, inputs, attrs)
    witness = _departure(got, want, min_difference)
    if isinstance(witness, str):
        raise AssertionError(f"{op}: the function body agrees with the spec at {shown} {witness}: the departure "
                             f"'{title}' is gone, update the chapter")
    k, index, value, spec_value, difference = witness
    return _recorded(BodyFinding(op, title, explanation, shown, labels[k], index, value, spec_value, difference))



#: The child that runs ONNX Runtime's forward for check_runtime_departure(..., aborts=True): the one-node model of
#: ort_forward and its feeds arrive pickled on stdin (proofkit.ortgrad.forward_model), and the child runs them as
#: ort_forward does, with stderr left open (the last words of the process are the witness). A process that ONNX
#: Runtime kills cannot take the chapter's kernel with it; the child imports onnxruntime only (ortimport.child_command).
_CHILD = ("import pickle, sys\n"
          "import onnxruntime as ort\n"
          "model, feeds = pickle.load(sys.stdin.buffer)\n"
          "options = ort.SessionOptions()\n"
          "options.log_severity_level = 4\n"
          "ort.InferenceSession(model, options, providers=['CPUExecutionProvider']).run(None, feeds)\n")


def _last_words(stderr: str) -> str:
    """What a terminated process said about why, without paths or addresses: a failed C++ assertion's condition
    ("Assertion '_M_a <= _M_b' failed") or the C++ runtime's "terminate called ..." line; "" when it said neither."""
    if m := re.search(r"Assertion [`'](.+?)' failed", stderr):
        return f"Assertion '{m.group(1)}' failed"
    if m := re.search(r"terminate called [^\n]*", stderr):
        return m.group(0).strip()
    return ""


def _failure(message: str) -> str:
    """ONNX Runtime's refusal as a reader needs it: the message after a failed enforcement's condition ("... was
    false."), without a C++ qualifier or template binding left at its start ("static", "[with T = float]")."""
    message = message.split(" was false. ")[-1]
    message = re.sub(r"^(?:(?:static|virtual|const)\s+|\[with [^\]]*\]\s*)+", "", message.strip())
    return message


def _runtime() -> str:
    import onnxruntime

    return f"{RUNTIME} {onnxruntime.__version__}"


def check_runtime_departure(op: str, inputs, attrs: dict | None = None, *, spec, title: str, explanation: str,
                            min_difference: float | None = None, raises: bool = False, aborts: bool = False,
                            n_outputs: int | None = None, opset: int | None = None) -> Finding:
    """Assert that ONNX Runtime's own forward of the node (proofkit.ortgrad.ort_forward: CPU provider, the inputs fed
    with their own types, opset 21 unless `opset`) departs from the spec at the witness `inputs`, record it and return
    the finding (component "ONNX Runtime" and its version). What departs, one of:

    - a value: spec(inputs, **attrs_with_defaults) gives the spec's outputs; some entry differs by at least
      `min_difference`, or, with `min_difference=None`, is unequal (strings, integers; NaN equals NaN); or the shapes
      differ;
    - `raises=True`: ONNX Runtime refuses to load or run the node where the spec computes a value (its message shown);
    - `aborts=True`: ONNX Runtime terminates the process (run in a child process; its signal shown).

    The call fails when ONNX Runtime agrees with the spec there (the departure is gone: update the chapter). The cell
    must show the returned finding, as for check_reference_departure; the audit lists it with ONNX Runtime's findings.
    """
    if raises and aborts:
        raise ValueError("a witness either raises or aborts")
    if min_difference is not None and not min_difference > 0:
        raise ValueError("min_difference must be positive")
    from .ortgrad import OrtRunError, forward_model, ort_forward

    info = op_info(op)
    inputs = list(inputs)
    want = [np.asarray(y) for y in _as_list(spec(inputs, **info.with_defaults(attrs)))]
    shown = _escaped(describe_inputs(op, inputs, attrs))
    who = _runtime()

    def found(output, index, value, spec_value, difference):
        return _recorded(Finding(op, title, explanation, shown, output, index, value, spec_value, difference, who))

    if aborts:
        import pickle
        import signal
        import subprocess

        from .ortimport import child_command

        model = forward_model(op, inputs, attrs, n_outputs=n_outputs, keep_types=True, opset=opset)
        done = subprocess.run(child_command(_CHILD), input=pickle.dumps(model), capture_output=True, check=False)
        if done.returncode >= 0:
            raise AssertionError(f"{op}: {who} no longer terminates the process at {shown} (exit status "
                                 f"{done.returncode}): the departure '{title}' is gone, update the chapter")
        name = signal.Signals(-done.returncode).name
        said = _last_words((done.stderr + done.stdout).decode(errors="replace"))  # the kit may route 2 to 1
        return found(info.output_name(0), None, f"terminates the process ({name}" + (f": {said})" if said else ")"),
                     _escaped(_array(want[0])), None)
    try:
        got = ort_forward(op, inputs, attrs, n_outputs=n_outputs if n_outputs is not None else len(want),
                          keep_types=True, opset=opset)
    except OrtRunError as err:
        if not raises:
            raise
        message = _failure(str(err))
        message = message if len(message) <= 160 else message[:157] + "..."
        return found(info.output_name(0), None, f"fails: {message}", _escaped(_array(want[0])), None)
    if raises:
        raise AssertionError(f"{op}: {who} no longer fails at {shown}; it returned "
                             f"{[_values(np.asarray(y)) for y in got]}: the departure '{title}' is gone, update "
                             "the chapter")
    if len(got) != len(want):
        raise ValueError(f"{op}: spec returned {len(want)} outputs, {who} {len(got)}")
    witness = _departure(got, want, min_difference)
    if isinstance(witness, str):
        raise AssertionError(f"{op}: {who} agrees with the spec at {shown} ({witness}): the departure '{title}' is "
                             "gone, update the chapter")
    return found(info.output_name(witness[0]), *witness[1:])


__all__ = ["BODY", "COMPONENTS", "FINDING_MIME", "REFERENCE", "RUNTIME", "BodyFinding", "Finding",
           "check_function_body_departure", "check_reference_departure", "check_runtime_departure",
           "check_reference_departure_exact", "comparison", "describe_inputs"]
