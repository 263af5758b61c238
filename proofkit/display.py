"""Deterministic displays for chapters: the signature table and rounded arrays."""

from __future__ import annotations

import html

import numpy as np

from .schema import op_info


class Table:
    """A small table that renders as HTML in the book and as aligned text in nbval's comparison."""

    def __init__(self, head, rows, caption=""):
        self.head, self.rows, self.caption = list(head), [list(map(str, r)) for r in rows], caption

    def __repr__(self):
        widths = [max(len(x) for x in col) for col in zip(self.head, *self.rows)]
        lines = [self.head, ["-" * w for w in widths], *self.rows]
        body = "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in lines)
        return (self.caption + "\n" if self.caption else "") + body

    def _repr_html_(self):
        th = "".join(f"<th>{html.escape(h)}</th>" for h in self.head)
        trs = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in self.rows)
        cap = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        return f'<table class="proofkit-table">{cap}<thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>'


def signature(op: str) -> Table:
    """The op's inputs and outputs with their types and ONNX differentiability tags, from the installed schema."""
    info = op_info(op)
    rows = [[f.role, f.name, f.arity, f"{f.type_str}: {', '.join(t.replace('tensor(', '').rstrip(')') for t in f.types)}"
             if f.type_str != f.types[0] else f.type_str, f.tag] for f in info.formals]
    return Table(["", "name", "arity", "types", "ONNX tag"], rows, caption=f"{op}, opset {info.version}")


def attributes(op: str) -> Table:
    """The op's attributes with their ONNX defaults."""
    info = op_info(op)
    rows = [[a.name, a.type.lower(), "required" if a.required else repr(a.default)] for a in info.attributes]
    return Table(["attribute", "type", "default"], rows or [["(none)", "", ""]], caption=f"{op} attributes")


def show(x, decimals: int = 6):
    """An array rounded for printing, so stored outputs are identical on every platform (no -0.0)."""
    a = np.round(np.asarray(x, dtype=float), decimals) + 0.0
    return a
