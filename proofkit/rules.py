"""A chapter's backward rule, loaded from its notebook without running its checks.

A chapter tags with ``rule`` (``RULE_TAG``) the code cells that define its ``vjp``: the cell of ``def vjp`` and every
earlier cell defining a name ``vjp`` uses, transitively (helper functions, constants, tables). `load_vjp(op)` runs the
chapter's imports cell and its tagged cells, in order, in a fresh namespace, and returns ``vjp`` (cached per process).
A tagged cell defines; it prints nothing, displays nothing and runs no check.

`plan_rule_cells` finds those cells from the code alone (which names each top-level statement binds and reads, with
`symtable`), `rule_problems` states what keeps a chapter's tags from giving the function its checks ran on, and
`tag_rules` (``python -m proofkit tag-rules``) writes the tags. Only the standard library is used here: the loaded
chapter imports what it needs itself.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
import symtable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The cell tag that marks a chapter's rule: the cells `load_vjp` runs after the imports cell.
RULE_TAG = "rule"
#: A top-level `def vjp(...)`, as the contract test spells the one backward interface.
VJP_DEF = re.compile(r"^def vjp\(", re.M)
#: Calls a rule cell must not make: they print, display, or run a check (whose table the cell would show).
FORBIDDEN_CALL = re.compile(r"^(print|display|show|measured|plot_\w+|check_\w+|witness_\w+|verdict)$")
_BUILTINS = set(dir(builtins)) | {"__name__", "__file__", "display", "get_ipython"}


class RuleLoadError(Exception):
    """A chapter's rule cannot be loaded: no tagged cell, no vjp, or a tagged cell failed (the message names the
    chapter)."""


# --- reading a chapter ------------------------------------------------------------------------------------------


def _source(cell) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def code_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def is_tagged(cell: dict) -> bool:
    return RULE_TAG in cell.get("metadata", {}).get("tags", [])


def chapter_path(op: str, root: Path = ROOT) -> Path:
    return Path(root) / "proofs" / f"{op}.ipynb"


# --- what a top-level statement binds and reads -----------------------------------------------------------------


@dataclass
class Statement:
    binds: set[str] = field(default_factory=set)  # names it (re)binds at module level
    mutates: set[str] = field(default_factory=set)  # names whose value it changes in place (x[k] = ..., x.a = ...)
    reads: set[str] = field(default_factory=set)  # module-level names read when it runs
    lazy: set[str] = field(default_factory=set)  # module-level names read when a function it defines is called
    calls: set[str] = field(default_factory=set)  # the functions and methods it calls when it runs


def _nested_globals(table: symtable.SymbolTable) -> set[str]:
    out = set()
    for child in table.get_children():
        for sym in child.get_symbols():
            if sym.is_referenced() and sym.is_global():  # a free name is an enclosing function's, not the module's
                out.add(sym.get_name())
        out |= _nested_globals(child)
    return out


def _targets(node) -> tuple[set[str], set[str]]:
    """(names bound, names mutated) by an assignment target."""
    if isinstance(node, ast.Name):
        return {node.id}, set()
    if isinstance(node, (ast.Tuple, ast.List)):
        b, m = set(), set()
        for e in node.elts:
            b2, m2 = _targets(e)
            b, m = b | b2, m | m2
        return b, m
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    if isinstance(node, (ast.Subscript, ast.Attribute)):
        base = node.value
        while isinstance(base, (ast.Subscript, ast.Attribute)):
            base = base.value
        return set(), {base.id} if isinstance(base, ast.Name) else set()
    return set(), set()


def _walk_module_level(node):
    """The nodes that run when the statement runs: not the bodies of the functions it defines."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo.extend(n.decorator_list + n.args.defaults + [d for d in n.args.kw_defaults if d is not None])
        elif not isinstance(n, ast.Lambda):
            todo.extend(ast.iter_child_nodes(n))


def statement(node: ast.stmt) -> Statement:
    src = ast.unparse(node)
    table = symtable.symtable(src, "<cell>", "exec")
    st = Statement()
    for sym in table.get_symbols():
        name = sym.get_name()
        if sym.is_assigned() or sym.is_imported() or sym.is_namespace():
            st.binds.add(name)
        if sym.is_referenced():
            st.reads.add(name)
    nested = _nested_globals(table)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        st.lazy = nested  # decorators and defaults are read now: they are in the module table
    else:
        st.reads |= nested  # a comprehension, a class body, a lambda: counted as read now (the safe side)
    for n in _walk_module_level(node):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            for t in n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]:
                st.mutates |= _targets(t)[1]
        elif isinstance(n, ast.Call):
            f = n.func
            st.calls.add(f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "")
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        st.reads.add(node.target.id)
    return st


@lru_cache(maxsize=4096)
def cell_statements(src: str) -> tuple[Statement, ...]:
    """The cell's top-level statements; IPython magics and shell lines are not statements of a rule cell."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return ()
    return tuple(statement(node) for node in tree.body)


@dataclass
class Cell:
    index: int  # among the chapter's code cells
    source: str
    statements: tuple[Statement, ...]

    @property
    def binds(self) -> set[str]:
        return set().union(*(s.binds for s in self.statements))

    @property
    def mutates(self) -> set[str]:
        return set().union(*(s.mutates for s in self.statements))

    @property
    def reads(self) -> set[str]:
        """Module-level names the cell reads from before it (not bound by an earlier statement of its own)."""
        out, bound = set(), set()
        for s in self.statements:
            out |= s.reads - bound
            bound |= s.binds
        return out

    def lazy_of(self, name: str) -> set[str]:
        return set().union(*(s.lazy for s in self.statements if name in s.binds))

    @property
    def forbidden_calls(self) -> set[str]:
        return {c for s in self.statements for c in s.calls if FORBIDDEN_CALL.match(c)}

    @property
    def displays(self) -> bool:
        """Ends with an expression, which a notebook displays."""
        try:
            body = ast.parse(self.source).body
        except SyntaxError:
            return False
        return bool(body) and isinstance(body[-1], ast.Expr) and not isinstance(body[-1].value, ast.Constant)


def cells_of(sources: list[str]) -> list[Cell]:
    return [Cell(k, s, cell_statements(s)) for k, s in enumerate(sources)]


def vjp_cell(sources: list[str]) -> int | None:
    found = [k for k, s in enumerate(sources) if VJP_DEF.search(s)]
    return found[-1] if found else None


# --- which cells the rule needs ---------------------------------------------------------------------------------


@dataclass
class Plan:
    cells: list[int]  # code cells to tag, in order (the imports cell, code cell 0, is run anyway)
    names: set[str]  # the names vjp needs, transitively, bound by those cells or the imports cell
    unresolved: set[str]  # names needed but bound by no cell up to the vjp cell (nor builtins)
    why: dict[int, str] = field(default_factory=dict)  # for each cell, the first needed name it binds or changes


def plan_rule_cells(sources: list[str]) -> Plan:
    """The code cells `vjp` needs: the cell defining it and every earlier cell binding (or changing in place) a name
    it uses, transitively; a tagged cell is run whole, so every name it reads is needed too."""
    cells = cells_of(sources)
    v = vjp_cell(sources)
    if v is None:
        return Plan([], set(), set())
    tagged, names, unresolved, why = set(), set(), set(), {}
    todo, seen = [("vjp", v + 1)], set()  # (a name, the cell before which it must be bound)

    def tag(c: Cell, name: str):
        if c.index not in tagged and c.index != 0:
            tagged.add(c.index)
            why[c.index] = name
            todo.extend((r, c.index) for r in c.reads)  # read as the cell runs: bound by an earlier cell

    while todo:
        name, before = todo.pop()
        if (name, before) in seen:
            continue
        seen.add((name, before))
        names.add(name)
        binders = [c for c in cells[:before] if name in c.binds]
        if not binders:  # a builtin, or bound by the reading cell's own statement first (a loop variable)
            if name not in _BUILTINS and not (before <= v and name in cells[before].binds):
                unresolved.add(name)
            continue
        last = binders[-1]
        tag(last, name)
        todo.extend((r, v + 1) for r in last.lazy_of(name))  # read when vjp is called
        for c in cells[last.index + 1: before]:  # a table filled in place after its assignment
            if name in c.mutates:
                tag(c, name)
    return Plan(sorted(tagged), names - unresolved, unresolved, why)


def call_time_names(sources: list[str]) -> set[str]:
    """The names vjp reads when it is called: those its body reads, and transitively those read by the bodies of the
    functions among them (helpers, constants, tables). A later cell that rebinds one of them changes the function
    the checks run on; a name only read while the rule's cells run (a loop variable filling a table) does not."""
    cells = cells_of(sources)
    v = vjp_cell(sources)
    if v is None:
        return set()
    names, todo = set(), ["vjp"]
    while todo:
        name = todo.pop()
        if name in names:
            continue
        names.add(name)
        binders = [c for c in cells[: v + 1] if name in c.binds]
        if binders:
            todo.extend(binders[-1].lazy_of(name))
    return names


def rule_problems(sources: list[str], tagged: list[int], outputs: list[bool] | None = None) -> list[str]:
    """What keeps the tagged cells from giving the very function the chapter checks, from the code alone: a needed
    cell left untagged or an unneeded one tagged, a tagged cell that prints, displays or runs a check (`outputs`:
    whether each code cell has stored outputs), a name bound too late, or a later untagged cell that rebinds or
    changes vjp or a name it reads when called (the checks would then run on another function than the loaded one).
    """
    cells = cells_of(sources)
    v = vjp_cell(sources)
    if v is None:
        return ["no top-level `def vjp(`"]
    plan = plan_rule_cells(sources)
    problems = []
    if v not in tagged:
        problems.append(f"the cell defining vjp (code cell {v}) is not tagged {RULE_TAG!r}")
    for k in plan.cells:
        if k not in tagged and k != v:
            problems.append(f"code cell {k} binds {plan.why[k]!r}, which vjp needs, and is not tagged {RULE_TAG!r}")
    for k in tagged:
        if k not in plan.cells:
            problems.append(f"code cell {k} is tagged {RULE_TAG!r} but vjp needs nothing it binds")
        if cells[k].forbidden_calls:
            problems.append(f"tagged code cell {k} calls {sorted(cells[k].forbidden_calls)}: a rule cell only defines "
                            f"(split off the definitions vjp needs, {plan.why.get(k)!r} first)")
        if cells[k].displays:
            problems.append(f"tagged code cell {k} ends with an expression, which the notebook displays")
        if outputs is not None and outputs[k]:
            problems.append(f"tagged code cell {k} has stored outputs: a rule cell prints and displays nothing")
    if plan.unresolved:
        problems.append(f"vjp needs {sorted(plan.unresolved)}, bound by no cell up to its definition")
    live = call_time_names(sources)
    for c in cells[min(tagged, default=v):]:
        hit = (c.binds | c.mutates) & live
        if c.index not in tagged and hit:
            problems.append(f"untagged code cell {c.index}, after the rule's cells, rebinds or changes {sorted(hit)}, "
                            "which vjp reads when called: the checks would run on another function than the loaded one")
    return problems


# --- loading ----------------------------------------------------------------------------------------------------


def load_rule_namespace(path: Path) -> dict:
    """The namespace of the chapter's imports cell and `rule` cells, run in order (no checks, no displays)."""
    path = Path(path)
    op = path.stem
    if not path.exists():
        raise RuleLoadError(f"{op}: no chapter {path}")
    code = code_cells(json.loads(path.read_text()))
    tagged = [k for k, c in enumerate(code) if is_tagged(c)]
    if not tagged:
        raise RuleLoadError(f"{op}: the chapter {path.name} has no cell tagged {RULE_TAG!r}: tag the cells that "
                            f"define vjp (python -m proofkit tag-rules proofs/{path.name})")
    ns: dict = {"__name__": f"proofkit.rules.{op}"}
    for k in [0] + [k for k in tagged if k != 0]:
        try:
            exec(compile(_source(code[k]), f"<{op}.ipynb, code cell {k}>", "exec"), ns)
        except Exception as e:
            what = "imports cell" if k == 0 else f"tagged code cell {k}"
            raise RuleLoadError(f"{op}: the {what} of {path.name} failed: {type(e).__name__}: {e}") from e
    return ns


@lru_cache(maxsize=None)
def _load(path: Path):
    ns = load_rule_namespace(path)
    if not callable(ns.get("vjp")):
        raise RuleLoadError(f"{path.stem}: the cells of {path.name} tagged {RULE_TAG!r} define no vjp")
    return ns["vjp"]


def load_vjp(op: str, root: Path = ROOT):
    """The chapter's `vjp`, from its imports cell and its cells tagged `rule`, without running its checks; cached per
    process (per chapter file). Raises RuleLoadError naming the chapter when it has no tagged cell, when they define
    no vjp, or when one of them fails."""
    return _load(chapter_path(op, root).resolve())


# --- tagging ----------------------------------------------------------------------------------------------------


def tag_rules(path: Path) -> tuple[list[int], list[str]]:
    """Tag `rule` exactly the code cells `plan_rule_cells` finds (and untag the others) in the chapter at `path`;
    the file is rewritten only if a tag changed, and only the cells' metadata: outputs stay byte for byte. Returns
    (the tagged code cells, the problems left: a cell that must be split, a name bound too late)."""
    path = Path(path)
    text = path.read_text()
    nb = json.loads(text)
    code = code_cells(nb)
    sources = [_source(c) for c in code]
    plan = plan_rule_cells(sources)
    changed = False
    for k, c in enumerate(code):
        tags = c.setdefault("metadata", {}).get("tags", [])
        want = k in plan.cells
        if want != (RULE_TAG in tags):
            c["metadata"]["tags"] = [t for t in tags if t != RULE_TAG] + ([RULE_TAG] if want else [])
            if not c["metadata"]["tags"]:
                del c["metadata"]["tags"]
            changed = True
    if changed:
        path.write_text(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n")  # as nbformat writes
    return plan.cells, rule_problems(sources, plan.cells, [bool(c.get("outputs")) for c in code])
