"""Deterministic displays for chapters: the signature table and rounded arrays."""

from __future__ import annotations

import html

import numpy as np

from .schema import op_info


class Table:
    """A small table that renders as HTML in the book and as aligned text in nbval's comparison."""

    def __init__(self, head, rows, caption="", *, css_class="proofkit-table", row_ids=None):
        self.head, self.rows, self.caption = list(head), [list(map(str, r)) for r in rows], caption
        self.css_class, self.row_ids = css_class, row_ids  # row_ids: an HTML id per row, for links into the table

    def __repr__(self):
        widths = [max(len(x) for x in col) for col in zip(self.head, *self.rows)]
        lines = [self.head, ["-" * w for w in widths], *self.rows]
        body = "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in lines)
        return (self.caption + "\n" if self.caption else "") + body

    def _repr_html_(self):
        th = "".join(f"<th>{html.escape(h)}</th>" for h in self.head)
        ids = self.row_ids or [None] * len(self.rows)
        trs = "".join((f'<tr id="{html.escape(i)}">' if i else "<tr>")
                      + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r, i in zip(self.rows, ids))
        cap = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        return (f'<table class="{self.css_class}">{cap}<thead><tr>{th}</tr></thead><tbody>{trs}</tbody>'
                "</table>")


def _types_text(type_str: str, types) -> str:
    """'T: float, double' for a constraint over tensors; grouped by container (seq, optional) when it has several."""
    if len(types) == 1 and types[0] == type_str:
        return type_str  # a fixed type such as tensor(int64)
    groups: dict[str, list[str]] = {}
    for t in types:
        head, _, elem = t.rpartition("tensor(")
        groups.setdefault(head + "tensor" + ")" * head.count("("), []).append(elem.rstrip(")"))
    if list(groups) == ["tensor"]:
        return f"{type_str}: {', '.join(groups['tensor'])}"
    return f"{type_str}: " + "; ".join(f"{kind} of {', '.join(elems)}" for kind, elems in groups.items())


def signature(op: str) -> Table:
    """The op's inputs and outputs with their types and ONNX differentiability tags, from the installed schema."""
    info = op_info(op)
    rows = [[f.role, f.name, f.arity, _types_text(f.type_str, f.types), f.tag] for f in info.formals]
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
