"""proofkit.rules: a chapter's vjp loaded from its cells tagged `rule`, without its checks; the tags found from code."""

import json

import nbformat
import pytest

from proofkit.rules import (RULE_TAG, RuleLoadError, load_vjp, plan_rule_cells, rule_problems, tag_rules)
from proofkit.scaffold import notebook

IMPORTS = "import numpy as np"
HELPER = "SCALE = 2.0\n\n\ndef double(g):\n    return SCALE * g"
VJP = "def vjp(inputs, cotangents, **attrs):\n    return [double(np.asarray(cotangents[0]))]"
CHECK = "raise AssertionError('a check ran')"  # a cell the loader must never run


def chapter(tmp_path, op, cells, tagged=()):
    """proofs/<op>.ipynb under tmp_path, with the given code cells; `tagged`: the indices tagged `rule`."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(src, metadata={"tags": [RULE_TAG]} if k in tagged else {})
        for k, src in enumerate(cells)])
    (tmp_path / "proofs").mkdir(exist_ok=True)
    path = tmp_path / "proofs" / f"{op}.ipynb"
    nbformat.write(nb, path)
    return path


def test_loads_vjp_from_the_imports_and_tagged_cells_only(tmp_path):
    chapter(tmp_path, "Neg", [IMPORTS, HELPER, CHECK, VJP, CHECK], tagged=(1, 3))
    vjp = load_vjp("Neg", tmp_path)
    assert vjp([None], [[1.0, 3.0]])[0].tolist() == [2.0, 6.0]
    assert load_vjp("Neg", tmp_path) is vjp  # cached per process


def test_an_untagged_chapter_is_named_in_the_error(tmp_path):
    chapter(tmp_path, "Abs", [IMPORTS, HELPER, VJP])
    with pytest.raises(RuleLoadError, match=r"Abs: .*no cell tagged 'rule'"):
        load_vjp("Abs", tmp_path)


def test_tagged_cells_that_define_no_vjp_are_an_error(tmp_path):
    chapter(tmp_path, "Exp", [IMPORTS, HELPER, VJP], tagged=(1,))
    with pytest.raises(RuleLoadError, match=r"Exp: .*define no vjp"):
        load_vjp("Exp", tmp_path)


def test_a_failing_tagged_cell_is_named_with_its_chapter(tmp_path):
    chapter(tmp_path, "Log", [IMPORTS, "SCALE = undefined_name", VJP], tagged=(1, 2))
    with pytest.raises(RuleLoadError, match=r"Log: the tagged code cell 1 of Log.ipynb failed: NameError"):
        load_vjp("Log", tmp_path)


def test_a_missing_chapter_is_an_error(tmp_path):
    with pytest.raises(RuleLoadError, match="Sqrt: no chapter"):
        load_vjp("Sqrt", tmp_path)


def test_the_plan_follows_helpers_transitively_and_leaves_checks_out():
    cells = [IMPORTS, "EPS = 1e-3", "def helper(x):\n    return x + EPS", "check_forward('Neg', f, [X])",
             "LOOKUP = {}\nfor k in range(3):\n    LOOKUP[k] = helper(k)", "print(LOOKUP)",
             "def vjp(inputs, cotangents, **attrs):\n    return [LOOKUP[0] * cotangents[0]]", "check_vjp_fd('Neg', vjp, X)"]
    plan = plan_rule_cells(cells)
    assert plan.cells == [1, 2, 4, 6]
    assert rule_problems(cells, plan.cells) == []


def test_a_table_filled_in_place_after_its_assignment_is_part_of_the_rule():
    cells = [IMPORTS, "TABLE = {}", "TABLE['a'] = 1.0",
             "def vjp(inputs, cotangents, **attrs):\n    return [TABLE['a'] * cotangents[0]]"]
    assert plan_rule_cells(cells).cells == [1, 2, 3]


def test_problems_name_what_keeps_the_loaded_rule_from_being_the_checked_one():
    cells = [IMPORTS, "def helper(x):\n    return x", "def vjp(inputs, cotangents, **attrs):\n    return [helper(1)]",
             "def helper(x):\n    return 2 * x", "check_vjp_fd('Neg', vjp, X)"]
    problems = rule_problems(cells, [1, 2])
    assert any("untagged code cell 3" in p and "helper" in p for p in problems), problems
    assert any("code cell 1 binds 'helper'" in p for p in rule_problems(cells[:3], [2]))
    # a tagged cell that redefines nothing vjp needs, and one that runs a check and displays
    noisy = [IMPORTS, "X = 1\ncheck_forward('Neg', f, [X])\nX", "def vjp(inputs, cotangents, **attrs):\n    return [X]"]
    problems = rule_problems(noisy, [1, 2], outputs=[False, True, False])
    assert any("calls ['check_forward']" in p for p in problems)
    assert any("ends with an expression" in p for p in problems)
    assert any("has stored outputs" in p for p in problems)
    assert any("needs nothing it binds" in p for p in rule_problems(cells[:3] + ["Y = 3"], [1, 2, 3]))
    assert any("bound by no cell" in p for p in rule_problems([IMPORTS, "def vjp(i, c, **a):\n    return [Z]"], [1]))


def test_tagging_changes_only_the_tags(tmp_path):
    path = chapter(tmp_path, "Neg", [IMPORTS, HELPER, "print(1)", VJP])
    nb = json.loads(path.read_text())
    nb["cells"][2]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}]
    path.write_text(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n")
    cells, problems = tag_rules(path)
    assert (cells, problems) == ([1, 3], [])
    after = json.loads(path.read_text())
    for c in after["cells"]:
        c["metadata"].pop("tags", None)
    for c in nb["cells"]:
        c["metadata"].pop("tags", None)
    assert after == nb
    assert tag_rules(path) == ([1, 3], [])  # idempotent
    assert load_vjp("Neg", tmp_path)([None], [2.0])[0] == 4.0


def test_the_scaffold_tags_its_vjp_stub():
    code = [c for c in notebook("LeakyRelu").cells if c.cell_type == "code"]
    tagged = [c for c in code if RULE_TAG in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and tagged[0].source.startswith("def vjp(inputs, cotangents, **attrs):")
