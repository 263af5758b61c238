"""Seeded random inputs that keep away from kinks, ties and domain edges when a chapter asks.

Every sampler takes a `seed` and returns float64 arrays, so a chapter's stored outputs are the same on every run.
"""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

Avoid = float | Callable[[np.ndarray], np.ndarray]


def _distance(x: np.ndarray, avoid: Iterable[Avoid]) -> np.ndarray:
    d = np.full(x.shape, np.inf)
    for a in avoid:
        d = np.minimum(d, np.abs(a(x)) if callable(a) else np.abs(x - a))
    return d


def uniform(shape, low=-2.0, high=2.0, *, seed: int, avoid: Iterable[Avoid] = (), margin: float = 1e-2):
    """Uniform draws on [low, high) at least `margin` away from every point in `avoid`.

    An entry of `avoid` is a number (a kink such as 0) or a function giving each entry's distance to the nearest bad
    point (for example `lambda x: x - np.round(x)` keeps away from the integers).
    """
    rng = np.random.default_rng(seed)
    avoid = list(avoid)
    x = rng.uniform(low, high, size=shape)
    for _ in range(1000):
        bad = _distance(x, avoid) < margin
        if not bad.any():
            return x
        x[bad] = rng.uniform(low, high, size=int(bad.sum()))
    raise ValueError(f"could not draw {shape} values in [{low}, {high}) at least {margin} away from {avoid}")


def normal(shape, *, seed: int, scale: float = 1.0):
    """Standard normal draws times `scale`."""
    return np.random.default_rng(seed).standard_normal(shape) * scale


def apart_from(x: np.ndarray, others: Iterable[np.ndarray], *, margin: float = 1e-2, seed: int):
    """`x` with entries moved so that each is at least `margin` from the broadcast entries of `others`.

    Used to keep an input away from a tie with another input (Clip's input against min and max, Max's arguments).
    """
    rng = np.random.default_rng(seed)
    x = np.array(x, dtype=float, copy=True)
    others = [np.broadcast_to(o, x.shape) for o in others]
    for _ in range(1000):
        bad = np.zeros(x.shape, dtype=bool)
        for o in others:
            bad |= np.abs(x - o) < margin
        if not bad.any():
            return x
        x[bad] += rng.choice([-1.0, 1.0], size=int(bad.sum())) * rng.uniform(margin, 4 * margin, size=int(bad.sum()))
    raise ValueError("could not move the entries apart")


def distinct(shape, *, seed: int, gap: float = 1e-2, low=-2.0, high=2.0):
    """Draws whose entries are pairwise at least `gap` apart (no ties for max, sort, top-k)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if n * gap >= high - low:
        raise ValueError("range too small for that many distinct values")
    for _ in range(1000):
        v = rng.uniform(low, high, size=n)
        s = np.sort(v)
        if n < 2 or np.min(np.diff(s)) >= gap:
            return v.reshape(shape)
    raise ValueError("could not draw distinct values")
