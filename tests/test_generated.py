"""Generated pages (audit, family pages, table of contents) are fresh, and the CLI builds chapters that fit them."""

import json
import shutil

import nbformat
import pytest
import yaml

from proofkit import op_info
from proofkit.__main__ import main
from proofkit.audit import ROOT, generated_files, render_audit
from proofkit.contract import HEADINGS, OPTIONAL_HEADINGS
from proofkit.runner import run_notebook
from proofkit.scaffold import new_chapter
from chapters import headings, load


def test_generated_pages_are_fresh():
    stale = [str(p.relative_to(ROOT)) for p, text in generated_files().items()
             if not p.exists() or p.read_text() != text]
    assert not stale, f"run `python -m proofkit audit`; stale: {stale}"


def test_audit_lists_every_operator_input_and_output():
    text = render_audit({})
    assert "| operators with a chapter | 0 of 201 |" in text
    n = sum(len(op_info(op).formals) for op in __import__("proofkit").list_ops())
    assert f"| pending | {n} |" in text
    assert "| Clip | 13 | input | `input` | Differentiable | pending | pending |" in text


def test_new_scaffolds_a_chapter_and_registers_it(tmp_path):
    (tmp_path / "proofs").mkdir()
    path = new_chapter("LeakyRelu", root=tmp_path)
    nb = load(path)
    assert headings(nb, 1) == ["LeakyRelu"]
    assert headings(nb, 2) == list(HEADINGS[:-1]) + list(OPTIONAL_HEADINGS) + [HEADINGS[-1]]
    cells = "".join("".join(c["source"]) for c in nb["cells"])
    assert "signature('LeakyRelu')" in cells and "'X': ('differentiable'" in cells
    for v2 in ("vjp=vjp", "check_vjp_ort", "check_conventions('LeakyRelu', vjp, SPECIAL", "CLAIM.verdict(vjp)"):
        assert v2 in cells, v2
    toc = yaml.safe_load((tmp_path / "_toc.yml").read_text())
    part = next(p for p in toc["parts"] if p["caption"] == "Activations")
    assert {"file": "proofs/LeakyRelu"} in part["chapters"][0]["sections"]
    with pytest.raises(FileExistsError):
        new_chapter("LeakyRelu", root=tmp_path)
    with pytest.raises(ValueError, match="Did you mean LeakyRelu"):
        new_chapter("Leakyrelu", root=tmp_path)


def test_an_unfilled_scaffold_fails_when_run(tmp_path):
    (tmp_path / "proofs").mkdir()
    path = new_chapter("Neg", root=tmp_path)
    with pytest.raises(Exception, match="NotImplementedError"):
        run_notebook(path)
    nb = load(path)
    errors = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c["outputs"] if o["output_type"] == "error"]
    assert errors and errors[0]["ename"] == "NotImplementedError"


def test_run_executes_in_place_top_to_bottom(tmp_path):
    path = tmp_path / "t.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 6 * 7"), nbformat.v4.new_code_cell("x")])
    nbformat.write(nb, path)
    run_notebook(path)
    cells = json.loads(path.read_text())["cells"]
    assert [c["execution_count"] for c in cells] == [1, 2]
    assert "".join(cells[1]["outputs"][0]["data"]["text/plain"]) == "42"


def test_cli_reports_unknown_operators(capsys):
    with pytest.raises(ValueError, match="Did you mean Softmax"):
        main(["new", "SoftMax"])


def test_the_disagreements_page_quotes_each_argument_and_lists_proposals():
    from proofkit.audit import render_disagreements
    verdicts = {"Mod": {"op": "Mod", "rows": [
        {"role": "input", "name": "B", "tag": "NonDifferentiable", "verdict": "differentiable almost everywhere",
         "agreement": "disagrees", "reason": "r", "argument": "the divisor is an input <like any other>"}]},
        "Range": {"op": "Range", "rows": [
            {"role": "input", "name": "limit", "tag": "Unknown", "verdict": "zero almost everywhere",
             "agreement": "proposed", "reason": "moves | the length only", "argument": ""}]}}
    text = render_disagreements(verdicts)
    assert "1 contradicts ONNX's tag and 1 has no tag" in text
    assert "<blockquote>the divisor is an input &lt;like any other&gt;</blockquote>" in text
    assert 'href="../proofs/Mod.html#verdict-mod-b"' in text
    assert "| zero almost everywhere | NonDifferentiable | moves &#124; the length only |" in text
