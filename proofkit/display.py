"""Deterministic displays for chapters: the signature table and rounded arrays."""

from __future__ import annotations

import html
import re

import numpy as np

from .schema import op_info


# the inline markup of prose the kit renders: `$math$` and `code` (prose_html here, markdown_prose in the audit)
INLINE_MARKUP = re.compile(r"\$([^$\n]+)\$|`([^`\n]+)`")


def prose_html(text: str) -> str:
    """Escape `text` for HTML, typesetting its `$...$` spans as inline math (MathJax renders `span.math`) and its
    backquoted spans as code."""
    out, last = [], 0
    for m in INLINE_MARKUP.finditer(text):
        out.append(html.escape(text[last:m.start()]))
        if m.group(1) is not None:
            out.append(f'<span class="math notranslate nohighlight">\\({html.escape(m.group(1))}\\)</span>')
        else:
            out.append(f"<code>{html.escape(m.group(2))}</code>")
        last = m.end()
    return "".join(out) + html.escape(text[last:])


class Rich:
    """A table cell with its own HTML (a link, a list on demand); its plain text is what nbval compares."""

    def __init__(self, text: str, html_: str):
        self.text, self.html = text, html_

    def __str__(self):
        return self.text


#: The brackets around a measured figure in plain text, and the class of its HTML span. The repository's sanitize file
#: (nbval-sanitize.cfg, wired into pytest's configuration) replaces both forms before nbval compares stored outputs.
MEASURED_OPEN, MEASURED_CLOSE, MEASURED_CLASS = "⟦", "⟧", "pk-measured"
MEASURED_TITLE = "measured on the processor that ran this page; not compared across processors"
#: The plain-text width a table gives a measured cell, whatever its figure, so no column moves with it.
MEASURED_WIDTH = 9


class Measured(Rich):
    """A figure that depends on the processor's floating-point path: an error, a tolerance computed from data, a
    residual, or which of two documented behaviours a runtime showed here.

    numpy, PyTorch and ONNX Runtime dispatch their kernels by instruction set (AVX-512, AVX2, SSE, NEON), and the paths
    differ in the last bits of a result, sometimes by more (an accumulation order, a saturating integer kernel). No
    rounding of such a figure is stable across processors: a figure next to a rounding boundary flips on the next
    machine. So the reader sees the figure as measured, and nbval does not compare it: in plain text it is written
    between ⟦ and ⟧, in HTML inside a span of class pk-measured, and the sanitize file replaces both. What the figure
    supports is an assertion in the code that computed it (the check's `err <= tol`), which every run re-tests."""

    def __init__(self, value, fmt: str = ".0e"):
        if isinstance(value, str):
            shown = value
        elif value == 0:
            shown = "0"
        elif not np.isfinite(value):
            shown = str(float(value))
        else:
            shown = format(float(value), fmt)
        super().__init__(f"{MEASURED_OPEN}{shown}{MEASURED_CLOSE}",
                         f'<span class="{MEASURED_CLASS}" title="{MEASURED_TITLE}">{html.escape(shown)}</span>')

    def __repr__(self):
        return self.text

    def __format__(self, spec):
        return format(self.text, spec)

    def _repr_html_(self):
        return self.html


def measured(value, fmt: str = ".0e") -> Measured:
    """A processor-dependent figure as the reader sees it and nbval does not compare it (see Measured)."""
    return Measured(value, fmt)


AGREEMENT_CLASSES = {"agrees": "pk-agrees", "disagrees": "pk-disagrees", "proposed": "pk-proposed"}


class Table:
    """A small table that renders as HTML in the book and as aligned text in nbval's comparison.

    On a phone the book's script labels every cell with its column's name, so the stylesheet can stack rows (the
    label is not repeated in every cell of the stored HTML); an "agreement" column's cells carry a class by value, so
    disagreements stand out."""

    def __init__(self, head, rows, caption="", *, css_class="proofkit-table", row_ids=None):
        self.head, self.caption = list(head), caption
        self.cells = [list(r) for r in rows]
        self.rows = [list(map(str, r)) for r in rows]
        self.css_class, self.row_ids = css_class, row_ids  # row_ids: an HTML id per row, for links into the table

    def __repr__(self):
        # a measured cell counts as MEASURED_WIDTH wide, so a column's width never depends on a measured figure
        widths = [max(MEASURED_WIDTH if isinstance(c, Measured) else len(str(c)) for c in col)
                  for col in zip(self.head, *self.cells)]
        lines = [self.head, ["-" * w for w in widths], *self.rows]
        body = "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in lines)
        return (self.caption + "\n" if self.caption else "") + body

    def _td(self, head: str, cell) -> str:
        content = cell.html if isinstance(cell, Rich) else html.escape(str(cell))
        css = AGREEMENT_CLASSES.get(str(cell)) if head == "agreement" else None
        cls = f' class="{css}"' if css else ""
        return f'<td{cls}>{content}</td>'

    def _repr_html_(self):
        th = "".join(f"<th>{html.escape(h)}</th>" for h in self.head)
        ids = self.row_ids or [None] * len(self.cells)
        trs = "".join((f'<tr id="{html.escape(i)}">' if i else "<tr>")
                      + "".join(self._td(h, c) for h, c in zip(self.head, r)) + "</tr>" for r, i in zip(self.cells, ids))
        cap = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        return (f'<table class="{self.css_class}">{cap}<thead><tr>{th}</tr></thead><tbody>{trs}</tbody>'
                "</table>")


#: ONNX's float element types (the verdict asks the schema whether an input or output admits one)
FLOAT_TYPES = ("float16", "float", "double", "bfloat16")
# element types named by group in the signature table; the full list stays one click away
TYPE_GROUPS = [
    ("float types", FLOAT_TYPES),
    ("float8 types", ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz")),
    ("signed integers", ("int8", "int16", "int32", "int64")),
    ("unsigned integers", ("uint8", "uint16", "uint32", "uint64")),
    ("complex types", ("complex64", "complex128")),
]


def _short_types(elems: list[str]) -> str:
    """'float types, signed integers, bool' for a long list; a list of three or fewer is shown as it is."""
    if len(elems) <= 3:
        return ", ".join(elems)
    rest, parts = list(elems), []
    for label, group in TYPE_GROUPS:
        if all(t in rest for t in group):
            parts.append(label)
            rest = [t for t in rest if t not in group]
    return ", ".join(parts + rest)


def _types_cell(type_str: str, types):
    """'T: float, double' for a constraint over tensors; grouped by container (seq, optional) when it has several.
    A long list is shortened by group ('T: float types, signed integers'), with the full list on demand."""
    if len(types) == 1 and types[0] == type_str:
        return type_str  # a fixed type such as tensor(int64)
    groups: dict[str, list[str]] = {}
    for t in types:
        head, _, elem = t.rpartition("tensor(")
        groups.setdefault(head + "tensor" + ")" * head.count("("), []).append(elem.rstrip(")"))
    if list(groups) == ["tensor"]:
        full, short = ", ".join(groups["tensor"]), _short_types(groups["tensor"])
    else:
        full = "; ".join(f"{kind} of {', '.join(elems)}" for kind, elems in groups.items())
        kinds: dict[str, list[str]] = {}  # containers over the same element types share one entry
        for kind, elems in groups.items():
            kinds.setdefault(_short_types(elems), []).append(kind)
        short = "; ".join(f"{', '.join(ks)} of {elems}" for elems, ks in kinds.items())
    if short == full:
        return f"{type_str}: {full}"
    return Rich(f"{type_str}: {short}",
                f'<details class="pk-types"><summary>{html.escape(type_str)}: {html.escape(short)}</summary>'
                f"{html.escape(full)}</details>")


def signature(op: str) -> Table:
    """The op's inputs and outputs with their types and ONNX differentiability tags, from the installed schema."""
    info = op_info(op)
    rows = [[f.role, f.name, f.arity, _types_cell(f.type_str, f.types), f.tag] for f in info.formals]
    return Table(["", "name", "arity", "types", "ONNX tag"], rows, caption=f"{op}, opset {info.version}")


def attributes(op: str) -> Table:
    """The op's attributes with their ONNX defaults."""
    info = op_info(op)
    rows = [[a.name, a.type.lower(), "required" if a.required else repr(a.default)] for a in info.attributes]
    return Table(["attribute", "type", "default"], rows or [["(none)", "", ""]], caption=f"{op} attributes")


def show(x, decimals: int = 6):
    """An array rounded for printing, so stored outputs are identical on every platform (no -0.0)."""
    a = np.asarray(x, dtype=float)
    with np.errstate(all="ignore"):  # rounding huge values would overflow; they print in exponent form anyway
        return np.where(np.abs(a) < 1e15, np.round(a, decimals), a) + 0.0
