"""The verdict of a chapter, stated at the top as a claim and bound to the checks at the bottom."""

from __future__ import annotations

import html
import json

import numpy as np

from . import evidence
from .evidence import OUTER
from .display import FLOAT_TYPES, Rich, Table, prose_html
from .onnxrun import run_onnx
from .schema import op_info
from . import values

#: The book's four verdicts and the ONNX tag each maps to (book/method.md defines them).
VOCABULARY = {
    "differentiable": "Differentiable",
    "differentiable almost everywhere": "Differentiable",
    "zero almost everywhere": "NonDifferentiable",
    "non-differentiable": "NonDifferentiable",
}
DIFFERENTIABLE = ("differentiable", "differentiable almost everywhere")
NEGATIVE = ("zero almost everywhere", "non-differentiable")
#: Records that witness a point of the null set (proofkit.witness).
WITNESSES = {"kink", "jump", "unbounded"}
#: What each required kind of evidence is called in an error.
REQUIRED = {"fd": "the finite-difference check (check_vjp_fd)",
            "rule": "a hand-written rule proved equal to Jᵀḡ and tied to vjp (check_vjp_symbolic)",
            "ort": "an ONNX Runtime check (check_vjp_ort) that compared a gradient or found that ONNX Runtime has "
                   "none for this input (a node it refused to differentiate or run compares nothing)",
            "onnxad": "an onnx-ad check (check_vjp_onnxad) of this input: a comparison, or onnx-ad's recorded refusal"}

#: MIME type under which the verdict is stored in the notebook, for the audit page.
VERDICT_MIME = "application/vnd.proofkit.verdict+json"


def _admits_float(types) -> bool:
    """A type list that holds a float tensor, alone or in a sequence or optional."""
    elements = [f"tensor({e})" for e in FLOAT_TYPES]
    return any(t.endswith(e) or f"{e})" in t for t in types for e in elements)


def row_anchor(op: str, name: str) -> str:
    """The id of a verdict row on its chapter's page, cite-able as proofs/Clip.html#verdict-clip-min; a name with
    spaces (proofkit.outer's "outer values") gives hyphens, as an HTML id and a URL fragment need."""
    return "-".join(f"verdict-{op}-{name}".lower().split())


EVIDENCE_TEXT = {
    "forward": "model = onnx.reference", "fd": "finite differences of onnx.reference",
    "rule": "hand rule = Jᵀḡ (SymPy)", "torch": "PyTorch autograd", "ort": "ONNX Runtime's gradient agrees",
    "ort-none": "ONNX Runtime has no gradient", "ort-differs": "ONNX Runtime differs (declared)",
    "ort-refused": "ONNX Runtime refused a node (nothing compared)",
    "onnxad": "onnx-ad's gradient agrees", "onnxad-zero": "onnx-ad's gradient is zero where vjp returns None",
    "onnxad-none": "onnx-ad has no rule", "onnxad-differs": "onnx-ad differs (declared)",
    "onnxad-refused": "onnx-ad refused a node (nothing compared)",
    "zero": "zero derivative (finite differences)", "convention": "special points asserted",
    "none": "vjp returns None", "discrete-type": "discrete type", "outputs-discrete": "every output discrete",
    "selects": "only its shape and type are read",
}


#: How a None of vjp is shown for an input that also got a gradient, where every None came on a call whose outputs
#: were all of integer, bool or string types (QuantizeLinear with an integer output type).
NONE_ON_DISCRETE_OUTPUTS = "vjp returns None where every output is discrete"


def _none_only_on_discrete_outputs(op: str, name: str, vjp=None) -> bool:
    """Every None that vjp returned for this float input came on a call whose outputs were all discrete (integer,
    bool or string types; proofkit.checks._record_none marks them): no cotangent reaches any input there, so such a
    None is no evidence against a gradient on calls with a float output."""
    nones = [r for r in evidence.recorded(op) if r.name == name and r.kind == "none"
             and (vjp is None or r.fn is None or r.fn is vjp)]
    return bool(nones) and all(isinstance(r.data, dict) and r.data.get("outputs") == "discrete" for r in nones)


def evidence_summary(op: str, name: str) -> list[str]:
    """What the checks recorded for one input or output, in words (witnesses with their point), in a fixed order."""
    recs = [r for r in evidence.recorded(op) if r.name == name]
    out = [EVIDENCE_TEXT[k] for k in EVIDENCE_TEXT if any(r.kind == k for r in recs)]
    if any(r.kind in ("fd", "rule") for r in recs) and _none_only_on_discrete_outputs(op, name):
        # an input that got a gradient on float outputs and None only where every output was discrete: shown so
        out = [NONE_ON_DISCRETE_OUTPUTS if t == EVIDENCE_TEXT["none"] else t for t in out]
    seen = set()
    for r in recs:
        if r.kind in WITNESSES and (r.kind, r.detail) not in seen:
            seen.add((r.kind, r.detail))
            out.append(f"{r.kind} witness at {r.detail}")
    return out


#: The engines whose gradients the chapters execute, with the evidence kinds that name each outcome (proofkit.ortgrad,
#: proofkit.onnxad). "no gradient" is ONNX Runtime's missing builder (or missing gradient for an input), "no rule"
#: onnx-ad's; both are facts about the engine's coverage, a refusal is a fact about one node.
ENGINES = {"ONNX Runtime": {"ort": "agrees", "ort-differs": "differs", "ort-refused": "refuses",
                            "ort-none": "no gradient"},
           "onnx-ad": {"onnxad": "agrees", "onnxad-zero": "agrees", "onnxad-differs": "differs", "onnxad-refused": "refuses",
                       "onnxad-none": "no rule"}}
#: Evidence kinds of a declared difference at a special point (proofkit.conventions), per engine.
CONVENTION_KINDS = {"ONNX Runtime": "ort-convention", "onnx-ad": "onnxad-convention"}


def engine_outcomes(op: str, name: str) -> dict[str, list[str]]:
    """What each engine's checks showed for one input: agrees, differs (at a random point of a check), differs at a
    special point (declared in the convention table), refuses, no gradient (ONNX Runtime) or no rule (onnx-ad)."""
    recs = {r.kind for r in evidence.recorded(op) if r.name == name}
    out = {}
    for engine, kinds in ENGINES.items():
        seen = [word for kind, word in kinds.items() if kind in recs]
        conventions = [r for r in evidence.recorded(op) if r.name == name and r.kind == CONVENTION_KINDS[engine]]
        if any(isinstance(r.data, dict) and r.data.get("what") == "wrong value" for r in conventions):
            seen.insert(min(1, len(seen)), "differs")  # a declared defect shown at a special point
        if any(not (isinstance(r.data, dict) and r.data.get("what")) for r in conventions):
            seen.insert(len([w for w in seen if w in ("agrees", "differs")]), "differs at a special point")
        seen = list(dict.fromkeys(seen))
        if seen:
            out[engine] = seen
    return out


def engine_findings(op: str) -> list[dict]:
    """Every difference from an engine and every refusal the chapter recorded, once per engine, input, kind and
    reason (a loop over cases records the same finding many times; the first case is its witness)."""
    found, seen = [], set()
    kinds = {k: (engine, word) for engine, m in ENGINES.items() for k, word in m.items()}
    kinds.update({k: (engine, "convention") for engine, k in CONVENTION_KINDS.items()})
    for r in evidence.recorded(op):
        if r.kind not in kinds or kinds[r.kind][1] not in ("differs", "refuses", "convention"):
            continue
        engine, word = kinds[r.kind]
        data = r.data if isinstance(r.data, dict) else {}
        kind = {"differs": data.get("what", "wrong value"), "refuses": "refusal",
                "convention": data.get("what", "convention at a special point")}[word]
        key = (engine, r.name, kind, r.detail)
        if key in seen:
            continue
        seen.add(key)
        found.append({"engine": engine, "input": r.name, "kind": kind, "reason": r.detail,
                      "case": data.get("case", ""), **({"values": data["values"]} if "values" in data else {})})
    return found


class VerdictError(AssertionError):
    """A verdict that the chapter's checks do not support, or that hides a disagreement with ONNX."""


def agreement(tag: str, verdict: str) -> str:
    if tag == "Unknown":
        return "proposed"
    return "agrees" if VOCABULARY[verdict] == tag else "disagrees"


class Claim:
    """The chapter's verdict per input and output, with a one-line reason each.

    verdicts: formal name -> (verdict, reason) for every input and output of the op.
    disagreements: formal name -> the argument, for every entry whose verdict contradicts ONNX's tag.

    Constructing a Claim already checks the names, the vocabulary and the declared disagreements against the schema;
    `verdict()` then binds it to the checks recorded in this kernel.
    """

    def __init__(self, op: str, verdicts: dict[str, tuple[str, str]], disagreements: dict[str, str] | None = None):
        self.op = op
        self.info = op_info(op)
        self.verdicts = dict(verdicts)
        self.disagreements = dict(disagreements or {})
        names = [f.name for f in self.info.formals]
        missing = [n for n in names if n not in self.verdicts]
        extra = [n for n in self.verdicts if n not in names]
        if missing or extra:
            raise VerdictError(f"{op}: the verdict must cover exactly {', '.join(names)}"
                               + (f"; missing {', '.join(missing)}" if missing else "")
                               + (f"; unknown {', '.join(extra)}" if extra else ""))
        for name, (v, reason) in self.verdicts.items():
            if v not in VOCABULARY:
                raise VerdictError(f"{op}: {name}: {v!r} is not a verdict; use one of {', '.join(VOCABULARY)}")
            if not reason.strip():
                raise VerdictError(f"{op}: {name}: a verdict needs a one-line reason")
        for name in self.disagreements:
            if name not in self.verdicts:
                raise VerdictError(f"{op}: a disagreement is declared for {name}, which is not an input or output")
        for f in self.info.formals:
            status = agreement(f.tag, self.verdicts[f.name][0])
            if status == "disagrees" and f.name not in self.disagreements:
                raise VerdictError(f"{op}: {f.name} is called {self.verdicts[f.name][0]} but ONNX tags it {f.tag}; "
                                   "declare the disagreement with its argument, or change the verdict")
            if status != "disagrees" and f.name in self.disagreements:
                raise VerdictError(f"{op}: a disagreement is declared for {f.name}, but ONNX now tags it {f.tag}, "
                                   f"which {'agrees with' if status == 'agrees' else 'leaves open'} the verdict "
                                   f"{self.verdicts[f.name][0]!r}; update the chapter")

    def rows(self) -> list[dict]:
        out = []
        for f in self.info.formals:
            v, reason = self.verdicts[f.name]
            out.append({"role": f.role, "name": f.name, "tag": f.tag, "verdict": v,
                        "agreement": agreement(f.tag, v), "reason": reason,
                        "argument": self.disagreements.get(f.name, "")})
        return out

    # -- binding -------------------------------------------------------------------------------------------------
    def _bind(self, vjp) -> None:
        op = self.op
        if not callable(vjp):
            raise VerdictError(f"{op}: bind the verdict to the chapter's backward function: CLAIM.verdict(vjp)")
        others = [f for f in evidence.functions(op) if f is not vjp]
        if others:
            names = ", ".join(getattr(f, "__qualname__", repr(f)) for f in others)
            raise VerdictError(f"{op}: evidence in this chapter was recorded for another backward function ({names}) "
                               "than the vjp the verdict is bound to; every check must run on the vjp presented")
        called = {f.name: self.verdicts[f.name][0] for f in self.info.formals}
        diff_inputs = [f.name for f in self.info.inputs if called[f.name] in DIFFERENTIABLE]
        for f in self.info.inputs:
            v, facts = called[f.name], evidence.facts(op, f.name, vjp)
            witnesses = facts & WITNESSES
            if v in DIFFERENTIABLE:
                if "none" in facts and not _none_only_on_discrete_outputs(op, f.name, vjp):
                    raise VerdictError(f"{op}: {f.name} is called {v}, but vjp returns None for it")
                missing = [k for k in ("fd", "rule") if k not in facts]
                if not facts & {"ort", "ort-none", "ort-differs"}:
                    missing.append("ort")
                if not facts & {"onnxad", "onnxad-none", "onnxad-differs", "onnxad-refused", "onnxad-zero"}:
                    missing.append("onnxad")
                if missing:
                    raise VerdictError(f"{op}: {f.name} is called {v}, but it lacks "
                                       + ", ".join(REQUIRED[k] for k in missing)
                                       + f" for this vjp (recorded: {', '.join(sorted(facts)) or 'nothing'})")
            if v == "differentiable" and witnesses:
                raise VerdictError(f"{op}: {f.name} is called differentiable, but a {sorted(witnesses)[0]} witness "
                                   f"was recorded ({self._witness_at(f.name)}): call it differentiable almost "
                                   "everywhere")
            if v in ("differentiable almost everywhere", "zero almost everywhere"):
                if not witnesses:
                    raise VerdictError(f"{op}: {f.name} is called {v}, but no witness of the null set was recorded "
                                       "(witness_kink, witness_jump or witness_unbounded at a named point)")
                if "convention" not in facts:
                    raise VerdictError(f"{op}: {f.name} is called {v}, but vjp's values at the special points were "
                                       "not asserted (check_conventions)")
            if v == "zero almost everywhere":
                if "zero" not in facts:
                    raise VerdictError(f"{op}: {f.name} is called zero almost everywhere without the "
                                       "zero-derivative check")
                if not facts & {"jump", "unbounded"}:
                    # a discontinuity: a jump, or a difference quotient that grows without bound beside a point where
                    # the derivative is otherwise 0 (OneHot's float index under onnx.reference: hot only exactly at 1)
                    raise VerdictError(f"{op}: {f.name} is called zero almost everywhere without a jump witness (or a "
                                       "witness of an unbounded difference quotient at a discontinuity)")
            if v in NEGATIVE:
                if facts & {"fd", "torch", "rule", "ort", "onnxad"}:
                    raise VerdictError(f"{op}: {f.name} is called {v}, but vjp returned a gradient for it")
                if not facts & {"none", "discrete-type"}:
                    raise VerdictError(f"{op}: {f.name} is called {v}; run a check that shows vjp returns None "
                                       "for it")
            if v == "non-differentiable" and not facts & {"discrete-type", "outputs-discrete", "selects"}:
                raise VerdictError(f"{op}: {f.name} is called non-differentiable, but no check saw it discrete "
                                   "(an integer, bool or string type), saw every output discrete, or saw that only "
                                   "its shape and type are read (witness_selects); a float input that is none of "
                                   "these is differentiable or zero almost everywhere")
            if v == "non-differentiable" and self._float_to_float(f) and "float-path" not in facts:
                # the schema lets a float value of this input meet a float output: a verdict that no checked call
                # exercised on that path rests on the author's choice of cases (BitCast checked with integer `to`)
                raise VerdictError(f"{op}: {f.name} is called non-differentiable, and the schema admits a float value "
                                   "of it with a float output, but no checked call gave vjp that path; check a call "
                                   "with a float output (then witness_selects, or call it differentiable or zero "
                                   "almost everywhere)")
            if v == "non-differentiable" and "float-path" in facts and "selects" not in facts:
                # an integer-typed instance, or a call whose outputs were all discrete, says nothing about a float
                # value of this input that reached a float output
                raise VerdictError(f"{op}: {f.name} is called non-differentiable, but a float value of it met a "
                                   "float output in a checked call; show that only its shape and type are read "
                                   "(witness_selects), or call it differentiable or zero almost everywhere")
        weakest = ("differentiable almost everywhere" if any(called[n] != "differentiable" for n in diff_inputs)
                   else "differentiable")
        for f in self.info.outputs:
            v, facts = called[f.name], evidence.facts(op, f.name, vjp)
            if v in DIFFERENTIABLE:
                if not diff_inputs:
                    # an output may still be differentiable through the values a graph attribute reads from the
                    # outer scope (If: cond is boolean), with the evidence a differentiable input needs (proofkit.outer)
                    from .outer import outer_missing
                    if not any(r.name == OUTER for r in evidence.recorded(op)):
                        raise VerdictError(f"{op}: output {f.name} is called {v}, but no input is differentiable")
                    lacking = outer_missing(op, vjp)
                    if lacking:
                        raise VerdictError(f"{op}: output {f.name} is called {v} through the outer values its graphs "
                                           f"read, but they lack {', '.join(REQUIRED.get(k, k) for k in lacking)} "
                                           "for this vjp (proofkit.outer)")
                if "fd" not in facts:
                    raise VerdictError(f"{op}: output {f.name} is called {v}, but no finite-difference check "
                                       "carried a cotangent through it")
                if v != weakest:
                    raise VerdictError(f"{op}: output {f.name} is called {v}, but as a function of "
                                       f"{', '.join(diff_inputs)} it is {weakest}")
            elif v == "zero almost everywhere":
                if "zero" not in facts:
                    raise VerdictError(f"{op}: output {f.name} is called zero almost everywhere without the "
                                       "zero-derivative check")
            elif "discrete-type" not in facts and not all(called[i.name] == "non-differentiable"
                                                          for i in self.info.inputs):
                raise VerdictError(f"{op}: output {f.name} is called non-differentiable, but no check saw it take a "
                                   "discrete type, and it depends on an input that is not non-differentiable")
        self._check_integer_inputs(vjp)

    def _float_to_float(self, formal) -> bool:
        """Whether the schema admits a float value of this input together with a float value of some output."""
        return _admits_float(formal.types) and any(_admits_float(o.types) for o in self.info.outputs)

    def _witness_at(self, name) -> str:
        recs = [r for r in evidence.recorded(self.op) if r.name == name and r.kind in WITNESSES]
        return "; ".join(f"{r.kind} at {r.detail}" for r in recs[:2])

    def _check_integer_inputs(self, vjp) -> None:
        """Integer-typed inputs get None from vjp, always: vjp is called at the first finite-difference check's point
        with every float input whose type constraint admits an integer type cast to that type."""
        rec = evidence.first(self.op, "fd", vjp)
        if rec is None:
            return
        inputs, attrs = rec.data
        cast, changed = [], False
        for i, x in enumerate(inputs):
            f = self.info.inputs[min(i, len(self.info.inputs) - 1)]
            ints = [t for t in ("tensor(int64)", "tensor(int32)") if t in f.types]
            if x is not None and ints and np.issubdtype(np.asarray(x).dtype, np.floating):
                # non-negative integers: valid for every integer variant (Pow has no negative integer exponents)
                cast.append(np.abs(np.round(np.asarray(x) * 3)).astype(ints[0][7:-1]))
                changed = True
            else:
                cast.append(x)
        if not changed:
            return
        try:
            outs = run_onnx(self.op, cast, attrs)
        except Exception:  # noqa: BLE001 - the integer variant is not valid for these attributes: nothing to check
            return
        cot = [values.ones_like(y) for y in outs]  # ones on every float output, and float element of a sequence
        grads = list(vjp(list(cast), cot, **self.info.with_defaults(attrs)))
        for i, (g, x) in enumerate(zip(grads, cast)):
            if x is not None and not values.is_float(x) and g is not None:
                raise VerdictError(f"{self.op}: vjp returns a gradient for input {self.info.input_name(i)} of "
                                   f"integer type {values.element_dtype(x)}; integer inputs get None")

    def verdict(self, vjp=None) -> "Verdict":
        """Bind the claim to this kernel's checks of `vjp`; raises VerdictError if the evidence does not support it."""
        self._bind(vjp)
        return Verdict(self)

    # -- display -------------------------------------------------------------------------------------------------
    def _table(self, full: bool) -> tuple[str, str]:
        head = ["", "name", "ONNX tag", "verdict", "agreement"] + (["reason"] if full else [])
        rows = [[r["role"], r["name"], r["tag"], r["verdict"], r["agreement"]]
                + ([Rich(r["reason"], prose_html(r["reason"]))] if full else []) for r in self.rows()]
        # only the bound verdict carries the row anchors a review cites (#verdict-clip-min); ids are unique
        ids = [row_anchor(self.op, r["name"]) for r in self.rows()] if full else None
        table = Table(head, rows, css_class="proofkit-verdict", row_ids=ids)
        return repr(table), table._repr_html_()

    def _arguments(self) -> tuple[str, str]:
        if not self.disagreements:
            return "", ""
        text = "\n".join(f"Disagreement on {n}: {a}" for n, a in self.disagreements.items())
        html_ = "".join(f"<p><strong>Disagreement on <code>{html.escape(n)}</code>:</strong> {prose_html(a)}</p>"
                        for n, a in self.disagreements.items())
        return "\n\n" + text, html_

    def _repr_mimebundle_(self, include=None, exclude=None):
        text, table = self._table(full=False)
        return {"text/plain": f"{self.op}-{self.info.version}, claimed (bound to the checks in the Verdict section)\n"
                              + text,
                "text/html": table}


class Verdict:
    """A claim that has been bound to the checks. Renders the verdict table; stores it for the audit page."""

    def __init__(self, claim: Claim):
        self.claim = claim

    def as_json(self) -> dict:
        c = self.claim
        rows = c.rows()
        for r in rows:
            r["evidence"] = evidence_summary(c.op, r["name"])
            if r["role"] == "input" and (engines := engine_outcomes(c.op, r["name"])):
                r["engines"] = engines
        out = {"op": c.op, "version": c.info.version, "rows": rows, "engine_findings": engine_findings(c.op)}
        if engines := engine_outcomes(c.op, OUTER):  # the outer values a graph reads have no row of their own (If)
            out["outer_engines"] = engines
        return out

    def _outer_html(self, stored: dict) -> str:
        """The anchor the engines page links an outer-values finding to, with what each engine showed for them."""
        if "outer_engines" not in stored:
            return ""
        shown = "; ".join(f"{html.escape(e)}: {html.escape(', '.join(w))}" for e, w in stored["outer_engines"].items())
        return (f'<p id="{row_anchor(self.claim.op, OUTER)}"><strong>Outer values</strong> (read by the node\'s '
                f"graphs, no row of their own; proofkit.outer): {shown}.</p>")

    def _repr_mimebundle_(self, include=None, exclude=None):
        c = self.claim
        text, table = c._table(full=True)
        args_text, args_html = c._arguments()
        stored = json.loads(json.dumps(self.as_json()))
        return {"text/plain": f"{c.op}-{c.info.version}: verdict bound to the checks\n{text}{args_text}",
                "text/html": table + args_html + self._outer_html(stored),
                VERDICT_MIME: stored}
