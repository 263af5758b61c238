"""Contract tests over every chapter under proofs/ (nbval separately re-executes each one and compares outputs)."""

import re

import pytest
import yaml

from proofkit import op_info
from proofkit.audit import stored_verdict
from proofkit.contract import HEADINGS, HEADINGS_NO_GRADIENT, OPTIONAL_HEADINGS
from proofkit.provenance import rule_dependencies
from proofkit.rules import RULE_TAG, load_vjp, rule_problems, vjp_cell
from proofkit.verdict import DIFFERENTIABLE
from chapters import NOTEBOOKS, ROOT, headings, load, source

ids = [p.stem for p in NOTEBOOKS]
chapter = pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)


def toc_files(node) -> list[str]:
    if isinstance(node, dict):
        return ([node["file"]] if "file" in node else []) + [f for v in node.values() for f in toc_files(v)]
    if isinstance(node, list):
        return [f for v in node for f in toc_files(v)]
    return []


def test_there_are_chapters():
    assert len(NOTEBOOKS) >= 8


@chapter
def test_file_name_is_an_onnx_operator(path):
    op_info(path.stem)


@chapter
def test_chapter_is_in_the_table_of_contents(path):
    assert f"proofs/{path.stem}" in toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text()))


@chapter
def test_executed_top_to_bottom_with_outputs_and_no_errors(path):
    code = [c for c in load(path)["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1)), \
        "run `python -m proofkit run` on the chapter: cells must be executed once each, in order, in a fresh kernel"
    for c in code:
        for out in c["outputs"]:
            assert out["output_type"] != "error", f"stored error: {out.get('ename')}: {out.get('evalue')}"
            assert not (out["output_type"] == "stream" and out["name"] == "stderr"), \
                f"stored stderr output: {''.join(out['text'])[:200]}"
    assert sum(bool(c["outputs"]) for c in code) >= len(code) // 2, "most cells should show what they compute"


@chapter
def test_headings_follow_the_contract(path):
    nb = load(path)
    assert headings(nb, 1) == [path.stem], "the only H1 is the operator's name"
    verdict = stored_verdict(path)
    # an output called differentiable has a gradient to give, to an input or to the outer values a graph reads (If)
    has_gradient = any(r["verdict"] in DIFFERENTIABLE for r in verdict["rows"])
    required = HEADINGS if has_gradient else HEADINGS_NO_GRADIENT
    found = [h for h in headings(nb, 2) if h in required + OPTIONAL_HEADINGS]
    assert [h for h in found if h in required] == list(required), f"H2 headings must include, in order: {required}"
    for h in OPTIONAL_HEADINGS:
        if h in found:
            assert found.index(h) == len(found) - 2, f"'{h}' comes right before the Verdict"


@chapter
def test_stored_verdict_covers_every_input_and_output_with_current_tags(path):
    verdict = stored_verdict(path)
    assert verdict is not None, "the chapter must end with CLAIM.verdict()"
    info = op_info(path.stem)
    assert verdict["op"] == path.stem and verdict["version"] == info.version
    assert [(r["role"], r["name"], r["tag"]) for r in verdict["rows"]] == \
        [(f.role, f.name, f.tag) for f in info.formals]
    last = [c for c in load(path)["cells"] if c["cell_type"] == "code"][-1]
    assert source(last).strip() == "CLAIM.verdict(vjp)", \
        "the verdict is the chapter's last cell, bound to the chapter's backward function: CLAIM.verdict(vjp)"


@chapter
def test_defines_the_one_backward_interface(path):
    cells = [source(c) for c in load(path)["cells"] if c["cell_type"] == "code"]
    # attributes may be spelled out with their ONNX defaults before **attrs: vjp(inputs, cotangents, axis=-1, **attrs)
    pattern = r"^def vjp\(inputs, cotangents(, \w+=[^,()]+)*, \*\*attrs\):"
    defs = [s for s in cells if re.search(pattern, s, re.M)]
    assert len(defs) == 1, "exactly one top-level `def vjp(inputs, cotangents, **attrs):`"


def _code(path) -> list[str]:
    return [source(c) for c in load(path)["cells"] if c["cell_type"] == "code"]


def _rows(path) -> list[dict]:
    return stored_verdict(path)["rows"]


def _outer_only(path) -> bool:
    """An output called differentiable with no differentiable input: its gradient goes to the outer values the node's
    graphs read (If), whose evidence (proofkit.outer) stands where a differentiable input's would."""
    rows = _rows(path)
    return (not any(r["role"] == "input" and r["verdict"] in DIFFERENTIABLE for r in rows)
            and any(r["role"] == "output" and r["verdict"] in DIFFERENTIABLE for r in rows))


@chapter
def test_the_rule_is_written_by_hand_not_derived_from_the_model(path):
    """The rule passed to check_vjp_symbolic (or check_vjp_symbolic_outer) must not depend, through any assignment in
    the chapter, on diff, jacobian or Derivative: otherwise the symbolic check compares SymPy's derivative with
    itself."""
    deps, derived = rule_dependencies(_code(path))
    assert not derived, (f"the rule depends on {', '.join(sorted(derived))}, which is computed by differentiating; "
                         "type the rule a reader would write on paper and let check_vjp_symbolic prove it")


@chapter
def test_every_differentiable_input_has_a_hand_rule_tied_to_vjp_and_the_onnx_runtime_check(path):
    code = "\n".join(_code(path))
    if _outer_only(path):  # the outer values stand for the inputs: their rule, and both engines on them
        assert re.search(r"check_vjp_symbolic_outer\([^§]*?vjp=vjp", code), \
            "check_vjp_symbolic_outer(..., vjp=vjp) ties vjp's outer gradients to the rule"
        for engine in ("ort", "onnxad"):
            assert re.search(rf"check_vjp_engine_outer\([^§]*?[\"']{engine}[\"']", code), \
                f"the engine {engine!r} is executed on the outer values (check_vjp_engine_outer), not cited"
        return
    if not any(r["role"] == "input" and r["verdict"] in DIFFERENTIABLE for r in _rows(path)):
        pytest.skip("no differentiable input")
    assert re.search(r"check_vjp_symbolic\([^§]*?vjp=vjp", code), "check_vjp_symbolic(..., vjp=vjp) ties vjp to the rule"
    assert "check_vjp_ort(" in code, "ONNX Runtime's gradient is executed (check_vjp_ort), not cited"
    assert "check_vjp_onnxad(" in code, "onnx-ad's derivative model is executed (check_vjp_onnxad): Method 3"


@chapter
def test_every_differentiable_input_shows_what_each_engine_did(path):
    """The stored verdict carries, for each differentiable input, the outcome of both engines' checks: the engines
    page and verdicts.json are read from it."""
    rows = [r for r in _rows(path) if r["role"] == "input" and r["verdict"] in DIFFERENTIABLE]
    if _outer_only(path):
        assert set(stored_verdict(path).get("outer_engines", {})) == {"ONNX Runtime", "onnx-ad"}, \
            "the verdict stores what both engines did on the outer values (check_vjp_engine_outer)"
        return
    if not rows:
        pytest.skip("no differentiable input")
    for r in rows:
        assert set(r.get("engines", {})) == {"ONNX Runtime", "onnx-ad"}, (r["name"], r.get("engines"))


@chapter
def test_a_null_set_has_its_special_points_asserted(path):
    rows = _rows(path)
    if not any(r["verdict"] in ("differentiable almost everywhere", "zero almost everywhere") for r in rows):
        pytest.skip("no null set")
    code = "\n".join(_code(path))
    assert re.search(r"^SPECIAL\s*=", code, re.M), "the table of special points is assigned to SPECIAL"
    assert re.search(r"check_conventions\(\s*[\"']\w+[\"'],\s*vjp,\s*SPECIAL", code), \
        "check_conventions(op, vjp, SPECIAL, ...) asserts vjp there and compares PyTorch and ONNX Runtime"
    assert re.search(r"witness_(kink|jump|unbounded)\(", code), "a witness names a point of the null set"


@chapter
def test_no_chapter_writes_to_the_evidence(path):
    code = "\n".join(_code(path))
    for forbidden in ("_RECORDS", "evidence.record", "evidence._reset", "LEDGER", "reset_ledger"):
        assert forbidden not in code, f"a chapter does not touch the kit's evidence store ({forbidden})"


@chapter
def test_boilerplate_is_collapsed_so_the_verdict_is_on_the_first_screen(path):
    nb = load(path)
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    hidden = [c for c in code if "hide-input" in c.get("metadata", {}).get("tags", [])]
    claim = [c for c in code if re.search(r"^CLAIM = Claim\(", source(c), re.M)]
    assert code[0] in hidden, "the imports cell is collapsed (tag hide-input)"
    assert claim and claim[0] in hidden, "the CLAIM literal is collapsed (tag hide-input)"
    for call in ("signature", "attributes"):
        cells = [c for c in code if source(c).strip() in (f'{call}("{path.stem}")', f"{call}('{path.stem}')")]
        assert cells, f"{call}({path.stem!r}) has a cell of its own"
        assert cells[0] in hidden, f"the {call} call is collapsed (tag hide-input)"
        assert nb["cells"].index(cells[0]) > nb["cells"].index(claim[0]), \
            f"the verdict at a glance comes before the {call} table"


@chapter
def test_the_rule_loads_from_its_tagged_cells_and_is_the_function_the_chapter_checks(path):
    """The kit loads vjp from the imports cell and the cells tagged `rule` (proofkit.rules.load_vjp). Statically: the
    tagged cells are exactly those vjp needs, they only define, and no later untagged cell rebinds or changes vjp or a
    name it reads when called, so the function loaded is the one the chapter's checks ran on. Then the load itself."""
    if not any(r["role"] == "input" and r["verdict"] in DIFFERENTIABLE for r in _rows(path)) and not _outer_only(path):
        pytest.skip("no differentiable input")
    code = [c for c in load(path)["cells"] if c["cell_type"] == "code"]
    sources = [source(c) for c in code]
    tagged = [k for k, c in enumerate(code) if RULE_TAG in c.get("metadata", {}).get("tags", [])]
    problems = rule_problems(sources, tagged, [bool(c["outputs"]) for c in code])
    assert not problems, ("run `python -m proofkit tag-rules` on the chapter:\n" + "\n".join(problems))
    vjp = load_vjp(path.stem, ROOT)
    assert vjp.__code__.co_filename == f"<{path.stem}.ipynb, code cell {vjp_cell(sources)}>", \
        "the loaded vjp is the `def vjp` of the chapter's cell"
