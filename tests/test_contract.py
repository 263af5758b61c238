"""Contract tests over every chapter under proofs/ (nbval separately re-executes each one and compares outputs)."""

import re

import pytest
import yaml

from proofkit import op_info
from proofkit.audit import stored_verdict
from proofkit.contract import HEADINGS, HEADINGS_NO_GRADIENT, OPTIONAL_HEADINGS
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
    has_gradient = any(r["role"] == "input" and r["verdict"] in DIFFERENTIABLE for r in verdict["rows"])
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
    assert source(last).strip() == "CLAIM.verdict()", "the verdict is the chapter's last cell"


@chapter
def test_defines_the_one_backward_interface(path):
    cells = [source(c) for c in load(path)["cells"] if c["cell_type"] == "code"]
    # attributes may be spelled out with their ONNX defaults before **attrs: vjp(inputs, cotangents, axis=-1, **attrs)
    pattern = r"^def vjp\(inputs, cotangents(, \w+=[^,()]+)*, \*\*attrs\):"
    defs = [s for s in cells if re.search(pattern, s, re.M)]
    assert len(defs) == 1, "exactly one top-level `def vjp(inputs, cotangents, **attrs):`"
