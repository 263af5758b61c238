"""Plots for elementwise chapters: the function and its derivative on one figure."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.figure import Figure


class Plot:
    """A figure that displays as a PNG in any kernel, whatever matplotlib backend is active.

    The text form names the figure, so nbval compares something stable (it skips the PNG itself).
    """

    def __init__(self, figure: Figure, title: str):
        self.figure, self.title = figure, title

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", metadata={"Software": None})
        return buf.getvalue()

    def __repr__(self) -> str:
        return f"<plot: {self.title}>"


def plot_elementwise(f, df, low, high, *, title, kinks=(), edges=(), steps=False, domain=None, ylim=None, n=1201):
    """Plot f and f' over [low, high] with kinks (dotted lines, open circles on f') and domain edges (solid red lines).

    `f` and `df` are vectorised NumPy functions (lambdified from the chapter's SymPy expressions, or onnx.reference).
    With `steps=True` the function is piecewise constant: jumps are drawn as gaps, not as vertical segments.
    `domain=(a, b)` draws nothing outside [a, b] (use ±np.inf for an open side); `ylim=(lo, hi)` cuts the y-axis where
    a derivative is unbounded. Returns a Plot, which the notebook shows as a PNG; its `.figure` is the Figure.
    """
    x = np.linspace(low, high, n)
    near = np.zeros_like(x, dtype=bool)
    for k in list(kinks) + list(edges):
        near |= np.abs(x - k) < (high - low) / n
    if domain is not None:
        near |= (x < domain[0]) | (x > domain[1])
    with np.errstate(all="ignore"):  # f and f' may be evaluated outside the domain; those points are not drawn
        y, dy = np.asarray(f(x), dtype=float), np.asarray(df(x), dtype=float) * np.ones_like(x)
    if steps or edges or domain is not None:
        y = np.where(near, np.nan, y)
    dy = np.where(near, np.nan, dy)
    fig = Figure(figsize=(6.4, 3.6), dpi=100)  # not pyplot: no backend, nothing left open
    ax = fig.subplots()
    ax.plot(x, y, color="C0", lw=2, label="f(x)")
    ax.plot(x, dy, color="C1", lw=1.5, ls="--", label="f'(x)")
    for k in kinks:
        ax.axvline(k, color="0.4", ls=":", lw=1)
        left, right = df(np.array([k - 1e-9])), df(np.array([k + 1e-9]))
        for side in (left, right):
            ax.plot([k], [float(np.asarray(side).ravel()[0])], "o", mfc="white", mec="C1", zorder=3)
    for e in edges:
        ax.axvline(e, color="C3", lw=1)
    if kinks:
        ax.plot([], [], ":", color="0.4", label="non-differentiable point")
    if edges:
        ax.plot([], [], color="C3", label="domain edge")
    ax.axhline(0, color="0.8", lw=0.8, zorder=0)
    ax.set_xlim(low, high)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_xlabel("x")
    ax.set_title(title)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    return Plot(fig, title)
