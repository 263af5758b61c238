"""Where a chapter's backward rule comes from: the variables the `rule=` argument of check_vjp_symbolic (or of
check_vjp_symbolic_outer) depends on, traced through the chapter's assignments and function definitions, must not use
differentiation.

A rule obtained by differentiating the model (`g * sp.diff(f, x)`, `df.subs(...)` with `df = f.diff(x)`, a row of
`jacobian(...)`) makes the symbolic check compare SymPy's derivative with itself; it proves nothing a reader wrote.
"""

from __future__ import annotations

import ast

#: The checks whose `rule=` (or fifth positional argument) is a rule typed by hand: for formal inputs, and for the
#: outer values a node's graphs read (proofkit.outer).
SYMBOLIC_CHECKS = {"check_vjp_symbolic", "check_vjp_symbolic_outer"}

#: Calls that differentiate.
DIFFERENTIATION = {"diff", "jacobian", "Derivative", "derivative", "gradient", "hessian", "idiff", "limit"}


def _names(node) -> set[str]:
    """Names a node reads, without those bound inside it by a lambda or a comprehension (they are local there)."""
    local = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Lambda):
            local |= {a.arg for a in n.args.args + n.args.kwonlyargs}
        elif isinstance(n, ast.comprehension):
            local |= set(_targets(n.target))
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - local


def _differentiates(node) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in DIFFERENTIATION:
                return True
    return False


def _targets(t) -> list[str]:
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for e in t.elts for n in _targets(e)]
    if isinstance(t, (ast.Subscript, ast.Attribute)):  # x[k] = ..., obj.attr = ...: the container depends on it
        return _targets(t.value)
    if isinstance(t, ast.Starred):
        return _targets(t.value)
    return []


def rule_dependencies(sources: list[str]) -> tuple[set[str], set[str]]:
    """(names the rules depend on, names among them whose definition differentiates), over all code cells."""
    deps: dict[str, set[str]] = {}
    diff: set[str] = set()
    roots: set[str] = set()

    def add(name, node):
        deps.setdefault(name, set()).update(_names(node) - {name})
        if _differentiates(node):
            diff.add(name)

    for src in sources:
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    for name in _targets(t):
                        add(name, node.value)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                for name in _targets(node.target):
                    add(name, node.value)
            elif isinstance(node, (ast.FunctionDef, ast.Lambda)) and isinstance(node, ast.FunctionDef):
                add(node.name, node)
            elif isinstance(node, ast.For):  # a comprehension's variables are local to it: not tracked
                for name in _targets(node.target):
                    add(name, node.iter)
            elif isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Name) and f.id in SYMBOLIC_CHECKS:
                    for kw in node.keywords:
                        if kw.arg == "rule":
                            roots |= _names(kw.value)
                    if len(node.args) >= 5:
                        roots |= _names(node.args[4])
    seen, stack = set(), list(roots)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(deps.get(n, ()))
    return seen, seen & diff
