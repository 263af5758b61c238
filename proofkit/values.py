"""The structure of a value an ONNX operator takes or gives: a tensor, a sequence or an optional.

The book's `vjp(inputs, cotangents, **attrs)` interface (book/method, "Sequences, optionals and graphs") and every
check read values in one form:

- a tensor is a NumPy array (its cotangent and its gradient are arrays of its shape, or None);
- a sequence is a Python list of arrays, one per element, possibly empty (its cotangent and its gradient are lists of
  the same length, with None for an element that carries none; None for the whole gradient of a sequence that
  carries none);
- an optional is its value (a tensor or a sequence, as above) or None when it is empty.

onnx.reference takes and returns sequences as Python lists; this module tells the kinds apart (a list is a sequence
when each of its elements is an array, a SymPy matrix or a torch tensor: a nested list of numbers stays a tensor),
flattens a value into its tensors ("leaves") and rebuilds it, and does the arithmetic the checks need (random draws,
steps, inner products) leaf by leaf, so that on a tensor it is exactly the arithmetic the checks always did. It is
the lowest layer of the kit: it imports NumPy only (and onnx inside `value_info`).
"""

from __future__ import annotations

import numpy as np


def is_sequence(v) -> bool:
    """A Python list of arrays (NumPy, SymPy matrices, torch tensors), the empty list included; None entries are
    allowed (a cotangent or a gradient with no entry for an element)."""
    return isinstance(v, list) and all(e is None or isinstance(e, np.ndarray) or _matrix_like(e) for e in v)


def _matrix_like(e) -> bool:
    # a SymPy matrix or a torch tensor: an object with a shape that is not a NumPy scalar or a plain number
    return hasattr(e, "shape") and not isinstance(e, (np.generic, int, float, complex, bool))


def kind(v) -> str:
    """"none" (an omitted input or an empty optional), "sequence" or "tensor"."""
    return "none" if v is None else "sequence" if is_sequence(v) else "tensor"


def leaves(v) -> list:
    """The tensors of a value in order: none for None, the elements of a sequence, the tensor itself."""
    return [] if v is None else list(v) if is_sequence(v) else [v]


def flatten(values) -> tuple[list, list]:
    """The tensors of a list of values (inputs, outputs, cotangents), in order, and the structure `unflatten` needs
    to rebuild them: one entry per value, None (no tensor), "tensor" or the length of a sequence."""
    flat, spec = [], []
    for v in values:
        k = kind(v)
        spec.append(None if k == "none" else len(v) if k == "sequence" else "tensor")
        flat += leaves(v)
    return flat, spec


def unflatten(spec, flat) -> list:
    """The values `flatten` took apart, rebuilt from `flat` (same order, any leaf type)."""
    held = sum(1 if s == "tensor" else s for s in spec if s is not None)
    if held != len(flat):
        raise ValueError(f"{len(flat)} tensors for a structure that holds {held}")
    out, i = [], 0
    for s in spec:
        if s is None:
            out.append(None)
        elif s == "tensor":
            out.append(flat[i])
            i += 1
        else:
            out.append(list(flat[i:i + s]))
            i += s
    return out


def as_value(y):
    """A runtime's output as the kit holds it: a list of arrays for a sequence, an array for a tensor, None kept."""
    if y is None:
        return None
    if is_sequence(y):
        return [np.asarray(e) for e in y]
    return np.asarray(y)


def _is_float_array(x) -> bool:
    return x is not None and np.issubdtype(np.asarray(x).dtype, np.floating)


def is_float(v) -> bool:
    """A float tensor, or a sequence with a float element (an empty sequence shows no element type: not float)."""
    if is_sequence(v):
        return any(_is_float_array(e) for e in v)
    return _is_float_array(v)


def draw_like(v, rng, dtype=None):
    """A standard normal draw shaped like the float parts of `v` (a cotangent, a direction): an array for a float
    tensor (the draw the checks always made), None for a tensor of another type or None; for a sequence a list with
    a draw per float element and None per other element, None if no element is float (the empty list for an empty
    sequence). With `dtype` (float32 for the engine checks), each draw is rounded through that type and returned as
    float64."""
    def one(shape):
        d = rng.standard_normal(shape)
        return d if dtype is None else np.asarray(d, dtype).astype(np.float64)

    if is_sequence(v):  # arrays, rank 0 included (a draw of shape () is a Python float)
        out = [np.asarray(one(np.shape(e))) if _is_float_array(e) else None for e in v]
        return out if (not v or any(o is not None for o in out)) else None
    return one(np.shape(v)) if _is_float_array(v) else None


def _zip(a, b, what: str):
    """Pairs of leaves of two values of the same structure (None pairs with anything as None)."""
    if is_sequence(a) or is_sequence(b):
        if not (is_sequence(a) and is_sequence(b)) or len(a) != len(b):
            raise ValueError(f"{what}: a {describe(a)} against a {describe(b)}")
        return list(zip(a, b))
    return [(a, b)]


def add_scaled(x, eps: float, u):
    """x + eps·u leaf by leaf (u None, or None at an element: that element unchanged); on a tensor x + eps*u."""
    if u is None:
        return x
    if not is_sequence(x):
        return x + eps * u
    return [e if d is None else np.asarray(e + eps * d) for e, d in _zip(x, u, "a step")]  # rank 0 stays an array


def sub(a, b):
    """a − b leaf by leaf, for two values of the same structure."""
    if not is_sequence(a):
        return a - b
    return [np.asarray(p - q) for p, q in _zip(a, b, "a difference")]  # rank 0 stays an array


def dot(a, b) -> float:
    """Σ over paired leaves of sum(a·b), a leaf None on either side counting 0; on tensors float(np.sum(a*b))."""
    if a is None or b is None:
        return 0.0
    if not is_sequence(a) and not is_sequence(b):
        return float(np.sum(np.asarray(a) * b))
    return float(sum(float(np.sum(np.asarray(p) * q)) for p, q in _zip(a, b, "an inner product")
                     if p is not None and q is not None))


def flat(g, like) -> np.ndarray:
    """A gradient `g` of a value `like` as one float64 vector over the leaves of `like`, None (whole, or an element)
    as zeros; for comparisons of a gradient with another."""
    parts = leaves(like)
    if g is None:
        got = [None] * len(parts)
    elif is_sequence(like):
        got = list(g)
    else:
        got = [g]
    return np.concatenate([np.zeros(np.shape(x)).ravel() if e is None else np.asarray(e, np.float64).ravel()
                           for e, x in zip(got, parts)] or [np.zeros(0)])


def mismatch(g, x) -> str:
    """Why gradient `g` cannot be the gradient of value `x` (structure, length, an element's shape), or ""."""
    if g is None:
        return ""
    if is_sequence(x):
        if not isinstance(g, list):
            return f"is not a list (the input is a sequence of {len(x)})"
        if len(g) != len(x):
            return f"is a list of {len(g)} (the input is a sequence of {len(x)})"
        for j, (e, xe) in enumerate(zip(g, x)):
            if e is not None and not _is_float_array(xe):
                return f"gives a gradient for element {j}, whose type {np.asarray(xe).dtype} is discrete"
            if e is not None and np.shape(e) != np.shape(xe):
                return f"has shape {np.shape(e)} at element {j}, the element has shape {np.shape(xe)}"
        return ""
    if isinstance(g, list) and is_sequence(g):
        return "is a list, the input is a tensor"
    if np.shape(g) != np.shape(x):
        return f"has shape {np.shape(g)}, the input has shape {np.shape(x)}"
    return ""


def cast(v, dtype):
    """The float leaves of `v` cast to `dtype` (float32 for ONNX Runtime), the others as they are."""
    if is_sequence(v):
        return [np.asarray(e, dtype) if _is_float_array(e) else np.asarray(e) for e in v]
    return np.asarray(v, dtype) if _is_float_array(v) else np.asarray(v)


def element_dtype(v):
    """The element type of a tensor or of a sequence's tensors (None for an empty sequence or None)."""
    parts = leaves(v)
    return np.asarray(parts[0]).dtype if parts else None


def describe(v) -> str:
    """A value's kind and shapes in words: "tensor (2, 3)", "sequence of 2 [(2,), (3,)]", "empty optional"."""
    if v is None:
        return "None"
    if is_sequence(v):
        return f"sequence of {len(v)} [{', '.join(str(np.shape(e)) for e in v)}]"
    try:
        return f"tensor {np.shape(v)}"
    except ValueError:  # a ragged list that is not a sequence of arrays
        return f"list of {len(v)} entries"


def fixed_element_type(types) -> str | None:
    """The one tensor element type a schema's type list allows, inside sequences and optionals too ("float" for
    ["seq(tensor(float))"]), or None when it allows several or none (proofkit.schema.Formal.types): the type an empty
    sequence is declared with where the schema fixes it."""
    import re

    found = {m.group(1) for t in types for m in [re.fullmatch(r"(?:optional\()?(?:seq\()?tensor\((\w+)\)\)*", t)] if m}
    return found.pop() if len(found) == 1 else None


def _tensor_type(elem) -> int:
    """An element type as ONNX's TensorProto enum: from a NumPy dtype, a type name ("float") or the enum itself."""
    from onnx import TensorProto, helper

    if isinstance(elem, (int, np.integer)) and not isinstance(elem, bool):
        return int(elem)
    if isinstance(elem, str) and elem.upper() in TensorProto.DataType.keys():  # ONNX's name first: "float" is float32
        return TensorProto.DataType.Value(elem.upper())
    return helper.np_dtype_to_tensor_dtype(np.dtype(elem))


def value_info(name: str, v, *, optional: bool = False, shape: bool = True, elem_type=None):
    """The ONNX ValueInfoProto of a value: a tensor type, a sequence type (`seq(tensor(T))`, T from its elements;
    an empty sequence shows none: T is `elem_type` when given, else undefined), wrapped in `optional(...)` when
    `optional`. The shape is declared for a tensor when `shape`; a sequence's elements are left unshaped.
    `elem_type` (a NumPy dtype, an ONNX type name such as "float", or TensorProto's enum) must agree with the
    value's own element type when it shows one."""
    from onnx import helper

    if v is None:
        raise ValueError(f"{name}: an empty optional or omitted value has no type to declare from its value")
    dtype = element_dtype(v)
    elem = 0 if dtype is None else helper.np_dtype_to_tensor_dtype(dtype)  # an empty sequence: element type undefined
    if elem_type is not None:
        given = _tensor_type(elem_type)
        if dtype is not None and given != elem:
            raise ValueError(f"{name}: elem_type {elem_type!r} is not the value's element type {dtype}")
        elem = given
    if is_sequence(v):
        tp = helper.make_sequence_type_proto(helper.make_tensor_type_proto(elem, None))
    else:
        tp = helper.make_tensor_type_proto(elem, np.shape(v) if shape else None)
    if optional:
        tp = helper.make_optional_type_proto(tp)
    return helper.make_value_info(name, tp)


def type_text(tp) -> str:
    """An ONNX TypeProto in the schema's words, with a tensor's shape: "tensor(double)[3]", "seq(tensor(float))",
    "optional(tensor(int64)[2, ?])" (for an attribute such as Optional's `type`, shown in a table)."""
    from onnx import TensorProto

    which = tp.WhichOneof("value")
    if which == "tensor_type":
        t = tp.tensor_type
        text = f"tensor({TensorProto.DataType.Name(t.elem_type).lower()})"
        if t.HasField("shape"):
            dims = [str(d.dim_value) if d.HasField("dim_value") else d.dim_param or "?" for d in t.shape.dim]
            text += "[" + ", ".join(dims) + "]"
        return text
    if which == "sequence_type":
        return f"seq({type_text(tp.sequence_type.elem_type)})"
    if which == "optional_type":
        return f"optional({type_text(tp.optional_type.elem_type)})"
    return which or "undefined"


def ones_like(v):
    """Ones shaped like the float parts of `v` (a tensor, or each float element of a sequence), None elsewhere, as
    `draw_like` shapes its draws."""
    if is_sequence(v):
        out = [np.ones(np.shape(e)) if _is_float_array(e) else None for e in v]
        return out if (not v or any(o is not None for o in out)) else None
    return np.ones(np.shape(v)) if _is_float_array(v) else None
