"""The verdict of a chapter, stated at the top as a claim and bound to the checks at the bottom."""

from __future__ import annotations

import html
import json

from .checks import LEDGER
from .display import Table
from .schema import op_info

#: The book's four verdicts and the ONNX tag each maps to (book/method.md defines them).
VOCABULARY = {
    "differentiable": "Differentiable",
    "differentiable almost everywhere": "Differentiable",
    "zero almost everywhere": "NonDifferentiable",
    "non-differentiable": "NonDifferentiable",
}
DIFFERENTIABLE = ("differentiable", "differentiable almost everywhere")

#: MIME type under which the verdict is stored in the notebook, for the audit page.
VERDICT_MIME = "application/vnd.proofkit.verdict+json"


def row_anchor(op: str, name: str) -> str:
    """The id of a verdict row on its chapter's page, cite-able as proofs/Clip.html#verdict-clip-min."""
    return f"verdict-{op}-{name}".lower()


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
    def _bind(self) -> None:
        op = self.op
        called_diff = [f.name for f in self.info.inputs if self.verdicts[f.name][0] in DIFFERENTIABLE]
        for f in self.info.inputs:
            v = self.verdicts[f.name][0]
            facts = LEDGER.get((op, f.name), set())
            if v in DIFFERENTIABLE:
                if "none" in facts:
                    raise VerdictError(f"{op}: {f.name} is called {v}, but vjp returns None for it")
                if "fd" not in facts or not facts & {"torch", "symbolic"}:
                    raise VerdictError(f"{op}: {f.name} is called {v}, but it has not passed the finite-difference "
                                       "check and one of the PyTorch or symbolic checks in this chapter "
                                       f"(passed: {', '.join(sorted(facts)) or 'none'})")
            else:
                if facts & {"fd", "torch", "symbolic"}:
                    raise VerdictError(f"{op}: {f.name} is called {v}, but vjp returned a gradient for it")
                if not facts & {"none", "discrete"}:
                    raise VerdictError(f"{op}: {f.name} is called {v}; run a check that shows vjp returns None "
                                       "for it")
                if v == "zero almost everywhere" and "zero" not in facts:
                    raise VerdictError(f"{op}: {f.name} is called zero almost everywhere without the "
                                       "zero-derivative check")
        for f in self.info.outputs:
            v = self.verdicts[f.name][0]
            facts = LEDGER.get((op, f.name), set())
            if v in DIFFERENTIABLE:
                if not called_diff:
                    raise VerdictError(f"{op}: output {f.name} is called {v}, but no input is differentiable")
                if "fd" not in facts:
                    raise VerdictError(f"{op}: output {f.name} is called {v}, but no finite-difference check "
                                       "carried a cotangent through it")
            elif v == "zero almost everywhere":
                if "zero" not in facts:
                    raise VerdictError(f"{op}: output {f.name} is called zero almost everywhere without the "
                                       "zero-derivative check")
            elif called_diff and "discrete" not in facts:
                raise VerdictError(f"{op}: output {f.name} is called non-differentiable although "
                                   f"{', '.join(called_diff)} is differentiable, and no check saw a discrete value")

    def verdict(self) -> "Verdict":
        """Bind the claim to this kernel's checks; raises VerdictError if a check is missing or contradicts it."""
        self._bind()
        return Verdict(self)

    # -- display -------------------------------------------------------------------------------------------------
    def _table(self, full: bool) -> tuple[str, str]:
        head = ["", "name", "ONNX tag", "verdict", "agreement"] + (["reason"] if full else [])
        rows = [[r["role"], r["name"], r["tag"], r["verdict"], r["agreement"]] + ([r["reason"]] if full else [])
                for r in self.rows()]
        # only the bound verdict carries the row anchors a review cites (#verdict-clip-min); ids are unique
        ids = [row_anchor(self.op, r["name"]) for r in self.rows()] if full else None
        table = Table(head, rows, css_class="proofkit-verdict", row_ids=ids)
        return repr(table), table._repr_html_()

    def _arguments(self) -> tuple[str, str]:
        if not self.disagreements:
            return "", ""
        text = "\n".join(f"Disagreement on {n}: {a}" for n, a in self.disagreements.items())
        html_ = "".join(f"<p><strong>Disagreement on <code>{html.escape(n)}</code>:</strong> {html.escape(a)}</p>"
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
        return {"op": c.op, "version": c.info.version, "rows": c.rows()}

    def _repr_mimebundle_(self, include=None, exclude=None):
        c = self.claim
        text, table = c._table(full=True)
        args_text, args_html = c._arguments()
        return {"text/plain": f"{c.op}-{c.info.version}: verdict bound to the checks\n{text}{args_text}",
                "text/html": table + args_html,
                VERDICT_MIME: json.loads(json.dumps(self.as_json()))}
