"""Check 3 (Method 2 of ONNX's guide): a hand-written backward rule, proved equal to Jᵀḡ on a SymPy instance, and the
chapter's NumPy `vjp` tied to that same rule at sampled points of every piece of the domain.

The rule must be what a reader writes on paper (ḡ/√(1−x²), ḡ·(1 − tanh²x)), typed as a SymPy expression. A rule
obtained by differentiating the model would make the proof compare SymPy with itself; the contract tests reject a
chapter whose rule depends on `diff` or `jacobian`, and this check rejects a rule holding unevaluated derivatives.
"""

from __future__ import annotations

from functools import lru_cache

import mpmath
import numpy as np
import sympy as sp

from .checks import CheckResult, _Worst, _attr_text, _call_vjp, _max_err, _shown_name
from .evidence import record
from .onnxrun import run_onnx
from .schema import op_info
from .values import flat as value_flat, is_sequence

#: Magnitudes a positive symbol takes in the tie: two within 1e-3 to 1e-2 of its piece's boundary, then ordinary
#: ones (a piece such as x = 1 − p keeps x inside (−1, 1) for p < 2).
NEAR = (1e-3, 7e-3)


def _flat(x) -> list:
    if is_sequence(x):  # a sequence: a list of matrices (arrays), its elements' entries in order
        return [e for part in x for e in _flat(part)]
    if isinstance(x, sp.MatrixBase):
        return list(x)
    return list(np.asarray(x, dtype=object).ravel())


def _shape(x) -> tuple:
    if is_sequence(x):
        return tuple(_shape(e) for e in x)
    return tuple(x.shape) if isinstance(x, sp.MatrixBase) else np.asarray(x, dtype=object).shape


def _sample(sym, k: int, rng):
    if sym.is_positive or sym.is_nonnegative:
        return NEAR[k] if k < len(NEAR) else float(rng.uniform(0.1, 1.9))
    if sym.is_integer:
        return int(rng.integers(-3, 4))
    return float(rng.standard_normal() * 1.5)


def seed_lambdify_numpy() -> bool:
    """Build SymPy's NumPy namespace for `sp.lambdify` (the one a chapter's model gets by default) without importing
    NumPy's lazily loaded submodules. Returns whether it built it.

    SymPy builds that namespace once per process by running `import numpy; from numpy import *; from numpy.linalg
    import *`. Under NumPy 2 the star import imports every submodule NumPy otherwise loads on first use (numpy.f2py,
    numpy.testing, numpy.polynomial, numpy.ctypeslib, numpy.char ...; about 30 ms, numpy.f2py the most) only to bind
    their names, which the code `lambdify` prints does not read: it calls NumPy's functions by name, and binds any
    name it prints that the namespace lacks (its printer's module_imports). This binds the same names to the same
    objects, except the submodules NumPy has not loaded when the kit is imported, then SymPy's translations, as
    SymPy's own builder does. A namespace SymPy builds another way, or has already built, is left alone."""
    import importlib

    sympy_lambdify = importlib.import_module("sympy.utilities.lambdify")  # the module, which sympy.utilities shadows

    namespace, default, translations, commands = sympy_lambdify.MODULES["numpy"]
    if commands != ("import numpy; from numpy import *; from numpy.linalg import *",) or namespace != default:
        return False
    built = {"numpy": np}
    built.update((name, getattr(np, name)) for name in np.__all__ if name in vars(np))
    built.update((name, getattr(np.linalg, name)) for name in np.linalg.__all__)
    built.update((sympy_name, built[name]) for sympy_name, name in translations.items())
    namespace.update(built)
    return True


@lru_cache(maxsize=512)
def _mpmath_function(exprs: tuple, symbols: tuple):
    """The expressions as one mpmath function of the symbols (sp.lambdify), or None where SymPy cannot print one."""
    try:
        # docstring_limit=-1: the generated function's docstring would print every expression, which costs as much
        # as compiling it
        return sp.lambdify(symbols, list(exprs), modules="mpmath", docstring_limit=-1)
    except Exception:  # noqa: BLE001 - an expression the mpmath printer does not know: the general path evaluates it
        return None


def _compiled_numeric(exprs: tuple, values: dict):
    """The expressions' values at the point, computed by their mpmath function at 30 digits, compiled once per array
    of expressions: an instance's rule is evaluated at every sampled point of every piece. None (the general path of
    _numeric, each expression substituted and evaluated by SymPy) where an entry is not a SymPy expression (a bool,
    a condition, a plain number), a symbol has no numeric value at the point, or the function fails there."""
    if not exprs or not all(isinstance(e, sp.Expr) for e in exprs):
        return None
    symbols = tuple(sorted(set().union(*(e.free_symbols for e in exprs)), key=str))
    args = []
    for sym in symbols:
        v = values.get(sym)
        if not isinstance(v, sp.Number) or not v.is_finite:
            return None
        args.append(mpmath.mpf(sp.Float(v, 40)._mpf_))
    f = _mpmath_function(exprs, symbols)
    if f is None:
        return None
    try:
        with mpmath.workdps(30):
            got = f(*args)
        return [complex(v) for v in got]
    except Exception:  # noqa: BLE001 - e.g. a pole at the point: the general path says what the value is there
        return None


def _direct_numeric(entries, values: dict):
    """The entries' values where each is a symbol whose value at the point is a SymPy float or integer, or a plain
    float or integer (an instance's inputs and cotangents): those values as float64, which is what the compiled and
    the general path give for them; None for anything else."""
    out = np.empty(len(entries))
    for k, e in enumerate(entries):
        v = values.get(e) if isinstance(e, sp.Symbol) else e
        if isinstance(v, (sp.Float, sp.Integer)) and v.is_finite:
            out[k] = float(v)
        elif isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
            out[k] = float(v)
        else:
            return None
    return out


def _numeric(expr_array, values: dict):
    """Evaluate an array of SymPy expressions (or numbers, or bools) at `values`, keeping bools as bools."""
    if expr_array is None:
        return None
    if is_sequence(expr_array):  # a sequence: a list of arrays, evaluated element by element
        return [_numeric(e, values) for e in expr_array]
    if isinstance(expr_array, np.ndarray) and expr_array.dtype != object:
        return expr_array
    if isinstance(expr_array, sp.MatrixBase):
        expr_array = np.array(expr_array.tolist(), dtype=object)
    arr = np.asarray(expr_array, dtype=object)
    direct = _direct_numeric(arr.ravel(), values)
    if direct is not None:
        return direct.reshape(arr.shape)
    out = _compiled_numeric(tuple(arr.ravel()), values)
    if out is not None:
        return _real(out, arr.shape)
    out = []
    for e in arr.ravel():
        v = sp.sympify(e).xreplace(values) if isinstance(e, sp.Basic) else e
        if v is sp.true or v is sp.false or isinstance(v, (bool, np.bool_)):
            out.append(bool(v))
        else:
            out.append(complex(sp.N(v, 30)) if isinstance(v, sp.Basic) else v)
    if out and all(isinstance(v, bool) for v in out):
        return np.array(out, dtype=bool).reshape(arr.shape)
    return _real(out, arr.shape)


def _real(values: list, shape) -> np.ndarray:
    """Computed values (complex numbers) as a float64 array of `shape`; AssertionError where one is not real."""
    vals = np.array(values, dtype=complex)
    if np.any(np.abs(vals.imag) > 1e-12 * np.maximum(1.0, np.abs(vals.real))):
        raise AssertionError("a sampled point leaves the real domain of the instance")
    return vals.real.astype(np.float64).reshape(shape)


def vanishes(d):
    """0 where the expression `d` is identically zero, else what is left of it: exact canonical forms tried cheapest
    first (the expression as it is, expanded, as one cancelled fraction), then sp.simplify. Each step rewrites `d`
    into an equal expression, so a 0 from any of them is a proof; only an expression none reduces to 0 reaches the
    slow, general simplify, which also gives the residue shown in the error."""
    if d == 0:
        return sp.Integer(0)
    for canonical in (sp.expand, lambda e: sp.cancel(sp.together(e))):
        try:
            if canonical(d) == 0:
                return sp.Integer(0)
        except sp.PolynomialError:  # not a rational function of its generators: leave it to simplify
            pass
    return sp.simplify(d)


def jt_terms(outputs: dict, cotangents: dict) -> list:
    """The terms of Jᵀḡ: each output entry with its cotangent and its free symbols, found once for every input entry
    (sequences as _flat reads them)."""
    return [(g, y, y.free_symbols if isinstance(y, sp.Basic) else set())
            for o, ys in outputs.items() for g, y in zip(_flat(cotangents[o]), _flat(ys))]


def jt_entry(terms: list, x):
    """(Jᵀḡ) for the input entry `x`: the sum of ḡ·∂y/∂x over the output entries y that hold x (an entry free of x has
    ∂y/∂x = 0)."""
    return sp.Add(*[g * sp.diff(y, x) for g, y, free in terms if x in free])


#: Expressions that bind a symbol of their own (a derivative's variable, a sum's index): a replacement must not reach it
_BINDING = (sp.Derivative, sp.Subs, sp.Integral, sp.Sum, sp.Product, sp.Lambda)


def on_piece(expr, piece: dict):
    """`expr` on one piece of the domain: the piece's symbols replaced by their values. A piece that maps symbols to
    values free of those symbols is one simultaneous replacement, made with xreplace, which for such a map gives what
    subs gives (each node rebuilt, so evaluated, with the new values) at a fraction of its cost on a large instance:
    subs tries each key against every subexpression. Any other piece (a key that is not a symbol, a value holding a
    key, whose order subs defines) and an expression that binds symbols go through subs."""
    if not piece:
        return expr
    keys = set(piece)
    values = {k: sp.sympify(v) for k, v in piece.items()}
    if (all(isinstance(k, sp.Symbol) for k in keys) and not any(v.free_symbols & keys for v in values.values())
            and not expr.has(*_BINDING)):
        return expr.xreplace(values)
    return expr.subs(piece)


#: The identities rule = Jᵀḡ proved in this process (see _identity). A proof is a function of its SymPy expressions
#: only, so a cell run again (the teeth's wrong-rule mutant runs every cell after vjp again, with the same rule and a
#: scaled vjp) needs it once; the tie of vjp to the rule, which is what such a run tests, is always run.
_PROVED: set = set()


def _identity(op, name, inputs, outputs, cotangents, rule, pieces) -> tuple:
    """What decides one input's proof, as a hashable key: the operator, the input's symbols and its rule, every
    output's expressions with its cotangent, and the pieces (SymPy expressions hash by structure)."""
    def entries(x):
        return tuple(_flat(x))
    return (op, name, entries(inputs[name]), entries(rule),
            tuple((o, entries(outputs[o]), entries(cotangents.get(o))) for o in sorted(outputs)),
            tuple(tuple(sorted(p.items(), key=lambda item: str(item[0]))) for p in pieces))


def check_closed_form(op: str, rule: dict) -> None:
    """A rule is a closed form written by hand: AssertionError if an entry holds an unevaluated derivative."""
    for name, r in rule.items():
        if any(isinstance(e, sp.Basic) and e.has(sp.Derivative, sp.Subs) for e in _flat(r)):
            raise AssertionError(f"{op}: the rule for {name} holds an unevaluated derivative; a rule is a closed "
                                 "form written by hand, not a derivative of the model")


def check_vjp_symbolic(op, inputs: dict, outputs: dict, cotangents: dict, rule: dict, *, vjp,
                       call: list | None = None, attrs: dict | None = None, pieces: list[dict] | None = None,
                       samples: int = 3, seed: int = 0, rtol: float = 1e-9, atol: float = 1e-12,
                       reals: bool = False) -> CheckResult:
    """Prove the hand-written `rule` equals Jᵀ·ḡ on the instance, then tie `vjp` to it numerically.

    inputs: formal input name -> array of symbols; outputs: formal output name -> array of expressions in them;
    cotangents: output name -> array of cotangent symbols (same shape as the output); rule: input name -> array of
    expressions (same number of entries as the input). Where the op is piecewise, `pieces` lists substitutions, one
    per open piece of the domain (e.g. {x: p} and {x: -p} with p positive); the identity must hold on every piece.

    The tie: on every piece, `samples` points are drawn (positive symbols at 1e-3 and 7e-3, that is next to the
    piece's boundary, then at ordinary magnitudes; real symbols standard normal), the instance's inputs are evaluated
    there and passed to `vjp`, and its gradients must equal the rule's values within atol + rtol·|rule|. `call` gives
    the op's inputs in schema order as arrays of expressions, numbers or None (needed where the instance's inputs do
    not map one to one onto the op's, e.g. a variadic input, an integer `shape` input, an omitted one); by default it
    is the `inputs` arrays in schema order. A variadic output that the node has several of (Loop's, Scan's) is one
    entry of `outputs` and `cotangents`: the outputs' entries in order, output 0's first. `attrs` are the
    attributes the instance stands for. With `reals`, the
    float formats NumPy does not call floating (float8, float6, float4, bfloat16) are read as real numbers in the tie,
    as check_vjp_fd(reals=True) reads them: `vjp` may return a gradient for an input of such a type (a float6 zero
    point given in `call`).

    Sequences (proofkit.values) are modelled on Python lists of SymPy matrices: a sequence input, output, cotangent
    or rule is a list with one matrix per element, in `inputs`, `outputs`, `cotangents`, `rule` and `call`. Jᵀḡ is
    taken over the elements' entries flattened in order (element 0's entries first), which is the order the rule's
    list is read in; vjp's gradient for a sequence is a list (None for an element, or for the whole, reads as zeros).
    """
    info = op_info(op)
    for name in list(inputs) + list(rule):
        if info.formal(name).role != "input":
            raise KeyError(f"{op}: {name} is not an input")
    for name in list(outputs) + list(cotangents):
        if info.formal(name).role != "output":
            raise KeyError(f"{op}: {name} is not an output")
    check_closed_form(op, rule)
    pieces = pieces or [{}]
    checked = []
    terms = None  # jt_terms, found when the first identity is to be proved
    for name, r in rule.items():
        if len(_flat(r)) != len(_flat(inputs[name])):
            raise AssertionError(f"{op}: the rule for {name} has shape {_shape(r)}, the input {_shape(inputs[name])}")
        identity = _identity(op, name, inputs, outputs, cotangents, r, pieces)
        if identity in _PROVED:  # this very identity was proved in this process (a cell run again): the tie remains
            checked.append(name)
            continue
        terms = jt_terms(outputs, cotangents) if terms is None else terms
        for k, (xk, rk) in enumerate(zip(_flat(inputs[name]), _flat(r))):
            jt = jt_entry(terms, xk)
            for piece in pieces:
                d = vanishes(on_piece(rk - jt, piece))
                if d != 0:
                    where = f" on the piece {piece}" if piece else ""
                    raise AssertionError(f"{op}: the rule for {name}[{k}] differs from Jᵀḡ{where} by {d}")
        _PROVED.add(identity)
        checked.append(name)

    # --- the tie: vjp against the proved rule, at sampled points of every piece -------------------------------
    if call is None:
        call = [inputs.get(f.name) for f in info.inputs]
        while call and call[-1] is None:
            call.pop()
    full = info.with_defaults(attrs)
    rng = np.random.default_rng(seed)
    symbols = set()
    for arr in list(call) + list(cotangents.values()) + list(rule.values()):
        for e in ([] if arr is None else _flat(arr)):
            if isinstance(e, sp.Basic):
                symbols |= e.free_symbols
    n_points, any_positive, worst = 0, False, _Worst()
    for piece in pieces:
        free = set(symbols)
        for s, v in piece.items():
            free.discard(s)
            if isinstance(v, sp.Basic):
                free |= v.free_symbols
        free -= set(piece)
        for k in range(samples):
            base = {s: sp.sympify(_sample(s, k, rng)) for s in sorted(free, key=str)}
            any_positive |= any(s.is_positive or s.is_nonnegative for s in free)
            values = {s: sp.sympify(v).xreplace(base) for s, v in piece.items()}
            values.update(base)
            xs = [_numeric(a, values) for a in call]
            outs = run_onnx(op, xs, attrs)
            cot, taken = [], {}
            for kk, y in enumerate(outs):
                g = cotangents.get(info.output_name(kk))
                shared = [j for j in range(len(outs)) if info.output_name(j) == info.output_name(kk)]
                if g is not None and len(shared) > 1 and not is_sequence(y):
                    # a variadic output (Loop's, Scan's): its cotangent's entries in the order of the outputs
                    start = taken.get(info.output_name(kk), 0)
                    taken[info.output_name(kk)] = start + int(np.size(y))
                    g = np.array(_flat(g), dtype=object)[start:start + int(np.size(y))]
                if g is not None and is_sequence(y):  # a sequence output: a cotangent list, element by element
                    cot.append([None if ge is None else _numeric(ge, values).reshape(np.shape(ye))
                                for ge, ye in zip(g, y)])
                    continue
                cot.append(None if g is None else _numeric(g, values).reshape(y.shape))
            grads = _call_vjp(op, vjp, xs, cot, full, reals=reals)
            for name in checked:
                positions = [i for i in range(len(xs)) if info.input_name(i) == name and xs[i] is not None]
                got = [value_flat(grads[i], xs[i]) if is_sequence(xs[i]) else
                       np.zeros(np.shape(xs[i])) if grads[i] is None else np.asarray(grads[i], np.float64)
                       for i in positions]
                got = np.concatenate([g.ravel() for g in got]) if got else np.zeros(0)
                want = _numeric(np.array(_flat(rule[name]), dtype=object), values).ravel()
                err = _max_err(got, want)
                finite = np.abs(want[np.isfinite(want)])
                tol = atol + rtol * (float(np.max(finite)) if finite.size else 0.0)
                if not err <= tol:
                    shown = {str(s): (bool(v) if v in (sp.true, sp.false) else float(v)) for s, v in values.items()
                             if v in (sp.true, sp.false) or v.is_number}
                    raise AssertionError(f"{op}: vjp's gradient for {name} differs from the proved rule by {err:.3e} "
                                         f"(tolerance {tol:.1e}) at {shown}: vjp gives {got}, the rule {want}")
                worst.add(err, tol)
            n_points += 1
    for name in checked:
        record(op, name, "rule", vjp)
    where = (f" on each of {len(pieces)} open pieces of the domain" if len(pieces) > 1
             else " on the given piece of the domain" if pieces[0] else "")
    near = f", positive magnitudes from {NEAR[0]:g}" if any_positive else ""
    return CheckResult("symbolic", op, checked,
                       f"the rule equals Jᵀḡ on the SymPy instance{where}, and vjp equals the rule at {n_points} "
                       f"sampled points ({samples} per piece{near})", inputs="SymPy instance",
                       attrs=_attr_text(attrs), error=worst.err, tol=worst.tol,
                       notes=f"rule = Jᵀḡ{where.replace(' of the domain', '')}; vjp = rule at {n_points} points{near}")
