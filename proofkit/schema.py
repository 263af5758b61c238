"""The ONNX side of a proof: the operator's latest default-domain schema and its tags."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import lru_cache

import onnx
import onnx.defs
import onnx.helper
from onnx.defs import OpSchema

#: ONNX's three differentiability categories, by the name used throughout the book.
TAG_NAMES = {
    OpSchema.DifferentiationCategory.Unknown: "Unknown",
    OpSchema.DifferentiationCategory.Differentiable: "Differentiable",
    OpSchema.DifferentiationCategory.NonDifferentiable: "NonDifferentiable",
}


class UnknownOperatorError(ValueError):
    """Raised for a name that is not an operator of the default ONNX domain."""


@dataclass(frozen=True)
class Formal:
    """One formal input or output of an operator."""

    name: str
    role: str  # "input" or "output"
    position: int
    optional: bool
    variadic: bool
    type_str: str
    types: tuple[str, ...]
    tag: str  # "Differentiable", "NonDifferentiable" or "Unknown"

    @property
    def arity(self) -> str:
        if self.variadic:
            return "variadic"
        return "optional" if self.optional else "single"


@dataclass(frozen=True)
class Attribute:
    name: str
    type: str
    required: bool
    default: object  # None when ONNX gives no default


@dataclass(frozen=True)
class OpInfo:
    """What the installed onnx says about one operator (latest version of the default domain)."""

    name: str
    version: int
    inputs: tuple[Formal, ...]
    outputs: tuple[Formal, ...]
    attributes: tuple[Attribute, ...]
    min_input: int
    max_input: int
    min_output: int
    max_output: int
    doc: str

    @property
    def formals(self) -> tuple[Formal, ...]:
        return self.inputs + self.outputs

    def formal(self, name: str) -> Formal:
        for f in self.formals:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no input or output named {name!r}; "
                       f"it has {', '.join(f.name for f in self.formals)}")

    def input_name(self, position: int) -> str:
        """Formal name of the input at a flattened position (variadic inputs share one name)."""
        return _name_at(self.inputs, position, self.name, "input")

    def output_name(self, position: int) -> str:
        return _name_at(self.outputs, position, self.name, "output")

    def defaults(self) -> dict:
        """Attributes that have an ONNX default, with that default."""
        return {a.name: a.default for a in self.attributes if a.default is not None}

    def with_defaults(self, attrs: dict | None) -> dict:
        """The node's attributes with ONNX's defaults filled in, as `vjp` receives them."""
        attrs = dict(attrs or {})
        unknown = sorted(set(attrs) - {a.name for a in self.attributes})
        if unknown:
            raise ValueError(f"{self.name} has no attribute {', '.join(map(repr, unknown))}; "
                             f"its attributes are {', '.join(a.name for a in self.attributes) or 'none'}")
        full = self.defaults()
        full.update({k: v for k, v in attrs.items() if v is not None})
        return full

    def check_arity(self, n_inputs: int) -> None:
        if not self.min_input <= n_inputs <= self.max_input:
            names = ", ".join(f.name + ("?" if f.optional else "...") * (f.optional or f.variadic)
                              for f in self.inputs)
            bound = (f"{self.min_input}" if self.min_input == self.max_input
                     else f"{self.min_input} to {'any number' if self.max_input > 1000 else self.max_input}")
            raise ValueError(f"{self.name}-{self.version} takes {bound} inputs ({names}); got {n_inputs}")


def _name_at(formals, position, op, role):
    if position < len(formals):
        return formals[position].name
    if formals and formals[-1].variadic:
        return formals[-1].name
    raise IndexError(f"{op} has no {role} at position {position}")


def _formal(p, role, position) -> Formal:
    opt = p.option
    return Formal(
        name=p.name,
        role=role,
        position=position,
        optional=opt == OpSchema.FormalParameterOption.Optional,
        variadic=opt == OpSchema.FormalParameterOption.Variadic,
        type_str=p.type_str,
        types=tuple(sorted(p.types)),
        tag=TAG_NAMES[p.differentiation_category],
    )


def _attribute(a) -> Attribute:
    default = None
    if a.default_value is not None and a.default_value.name:
        default = onnx.helper.get_attribute_value(a.default_value)
        if isinstance(default, bytes):
            default = default.decode()
    return Attribute(name=a.name, type=a.type.name, required=a.required, default=default)


@lru_cache(maxsize=None)
def list_ops() -> tuple[str, ...]:
    """Every non-deprecated operator of the default ONNX domain in the installed onnx, sorted."""
    return tuple(sorted({s.name for s in onnx.defs.get_all_schemas() if s.domain == "" and not s.deprecated}))


def _close_names(name: str) -> list[str]:
    ops = list_ops()
    same_case = [o for o in ops if o.lower() == name.lower()]
    return same_case + [o for o in difflib.get_close_matches(name, ops, n=5, cutoff=0.6) if o not in same_case]


@lru_cache(maxsize=None)
def op_info(name: str) -> OpInfo:
    """The latest default-domain schema of `name`, or UnknownOperatorError listing close names."""
    if name not in list_ops():
        close = _close_names(name)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UnknownOperatorError(f"{name!r} is not an operator of the default ONNX domain "
                                   f"(onnx {onnx.__version__}).{hint}")
    s = onnx.defs.get_schema(name)
    return OpInfo(
        name=name,
        version=s.since_version,
        inputs=tuple(_formal(p, "input", i) for i, p in enumerate(s.inputs)),
        outputs=tuple(_formal(p, "output", i) for i, p in enumerate(s.outputs)),
        attributes=tuple(_attribute(a) for _, a in sorted(s.attributes.items())),
        min_input=s.min_input,
        max_input=s.max_input,
        min_output=s.min_output,
        max_output=s.max_output,
        doc=s.doc or "",
    )
