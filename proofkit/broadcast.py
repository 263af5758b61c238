"""Multidirectional (NumPy-style) broadcasting, backwards."""

from __future__ import annotations

import numpy as np


def sum_to_shape(g, shape) -> np.ndarray:
    """Sum a cotangent of the broadcast shape back to an input's `shape`.

    Broadcasting copies an input along the axes it lacks (prepended) and along its axes of length 1, so by the chain
    rule the input's gradient is the sum of the cotangent over exactly those axes (proofs/Add derives it).
    """
    g = np.asarray(g)
    shape = tuple(shape)
    lead = g.ndim - len(shape)
    if lead < 0:
        raise ValueError(f"cannot sum a cotangent of shape {g.shape} to the larger rank of {shape}")
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    out = g.sum(axis=axes, keepdims=True) if axes else g
    out = out.reshape(out.shape[lead:])
    if out.shape != shape:
        raise ValueError(f"a cotangent of shape {g.shape} does not broadcast from {shape}")
    return out
