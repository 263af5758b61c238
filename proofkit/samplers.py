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
    """Draws whose entries are pairwise at least `gap` apart (no ties for max, sort, top-k).

    Built, not rejected: n sorted uniform draws on [low, high − (n−1)·gap] spread by k·gap, then shuffled, so it works
    for any size that fits in the range.
    """
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    span = (high - low) - (n - 1) * gap
    if span <= 0:
        raise ValueError(f"{n} values at least {gap} apart do not fit in [{low}, {high})")
    v = np.sort(rng.uniform(low, low + span, size=n)) + gap * np.arange(n)
    return rng.permutation(v).reshape(shape)


def distinct_inputs(shapes, *, seed: int, gap: float = 1e-2, low=-2.0, high=2.0) -> list[np.ndarray]:
    """Several inputs (of broadcastable shapes) whose entries are all pairwise `gap` apart, across inputs too, so that
    no broadcast position holds a tie (Max, Min)."""
    sizes = [int(np.prod(s)) for s in shapes]
    flat = distinct((sum(sizes),), seed=seed, gap=gap, low=low, high=high)
    return [part.reshape(s) for part, s in zip(np.split(flat, np.cumsum(sizes)[:-1]), shapes)]


def distance_to(values) -> Callable[[np.ndarray], np.ndarray]:
    """For `uniform(..., avoid=[distance_to(B)])`: each entry's distance to the nearest entry of `values`, so a draw
    keeps away from ties with another input whatever the broadcasting (Greater, Equal)."""
    flat = np.ravel(values)
    return lambda v: np.min(np.abs(np.asarray(v)[..., None] - flat), axis=-1)


def ties(shape, dtype=np.float64, *, seed: int) -> np.ndarray:
    """Values from {0, 0.5, ..., 2.5} (the integers 0 to 5 for an integer dtype): small grids with many exact ties,
    valid for unsigned types too, for ops whose output changes at a tie (comparisons)."""
    v = np.random.default_rng(seed).integers(0, 6, size=shape)
    dtype = np.dtype(dtype)
    return (v if dtype.kind in "iub" else v / 2).astype(dtype)


def booleans(shape, *, seed: int) -> np.ndarray:
    """Seeded random bools, about half True (logical ops, Where's condition)."""
    return normal(shape, seed=seed) > 0


def integers(shape, dtype, *, seed: int) -> np.ndarray:
    """Seeded integers over the whole range of an integer `dtype`, both ends included (bitwise ops)."""
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def integer_edges(dtype) -> np.ndarray:
    """The values where integer arithmetic wraps or a bit pattern changes meaning: min, -1, 0, 1, max for a signed
    type; 0, 1, the top bit alone, max for an unsigned one."""
    info = np.iinfo(dtype)
    if info.min < 0:
        return np.array([info.min, -1, 0, 1, info.max], dtype=dtype)
    return np.array([0, 1, 2 ** (info.bits - 1), info.max], dtype=dtype)


def near(points, shape, *, seed: int, low: float = 1e-3, high: float = 1e-2) -> np.ndarray:
    """Entries within `low` to `high` of the given special points (kinks, poles, domain edges), on both sides.

    Entry k sits at points[k mod n] ± d with d uniform in [low, high), the sign alternating (right, left, right, ...
    per point), so every point is approached from both sides once there are at least 2n entries. Pass a one-sided
    list of points (e.g. 1e-2 above an edge) where only one side is in the domain.
    """
    rng = np.random.default_rng(seed)
    pts = np.ravel(np.asarray(points, dtype=float))
    n = int(np.prod(shape))
    k = np.arange(n)
    sign = np.where((k // len(pts)) % 2 == 0, 1.0, -1.0)
    return (pts[k % len(pts)] + sign * rng.uniform(low, high, size=n)).reshape(shape)
