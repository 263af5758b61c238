"""Generated pages (audit, family pages, table of contents) are fresh, and the CLI builds chapters that fit them."""

import json
import shutil

import nbformat
import pytest
import yaml

from proofkit import op_info
from proofkit.__main__ import main
from proofkit.audit import ROOT, VERDICTS_SCHEMA, collect, generated_files, render_audit
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
    assert text.index("Disagreements with ONNX's tags") < text.index("## Elementwise math")


def test_published_verdicts_follow_their_schema_and_the_chapters(capsys):
    jsonschema = pytest.importorskip("jsonschema")
    doc = json.loads((ROOT / "book" / "data" / "verdicts.json").read_text())
    jsonschema.validate(doc, VERDICTS_SCHEMA)
    verdicts = collect()
    assert {r["op"] for r in doc["rows"]} == set(verdicts)
    for r in doc["rows"]:
        stored = next(x for x in verdicts[r["op"]]["rows"] if x["name"] == r["name"])
        assert (r["onnx_tag"], r["verdict"], r["agreement"]) == (stored["tag"], stored["verdict"], stored["agreement"])
    clip_min = next(r for r in doc["rows"] if (r["op"], r["name"]) == ("Clip", "min"))
    assert clip_min["agreement"] == "disagrees" and clip_min["proposed_tag"] == "Differentiable"
    assert clip_min["chapter"] == "proofs/Clip.html#verdict-clip-min" and clip_min["conventions"]
    assert main(["audit", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == doc


def test_a_wrong_row_fails_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    doc = json.loads((ROOT / "book" / "data" / "verdicts.json").read_text())
    doc["rows"][0]["verdict"] = "differentiable-ish"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, VERDICTS_SCHEMA)


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
    family = next(c for p in toc["parts"] for c in p["chapters"] if c["file"] == "book/families/activations")
    assert {"file": "proofs/LeakyRelu"} in family["sections"]
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


def test_cli_reports_unknown_operators_as_a_usage_error_without_a_traceback(capsys):
    assert main(["new", "SoftMax"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Did you mean Softmax" in err
    assert err.startswith("python -m proofkit: error: 'SoftMax' is not an operator")


def test_cli_refuses_to_overwrite_a_chapter_in_one_line(capsys):
    assert main(["new", "Relu"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "exists; pass --force to overwrite it" in err


def test_the_disagreements_page_quotes_each_argument_and_lists_proposals():
    from proofkit.audit import render_disagreements
    verdicts = {"Mod": {"op": "Mod", "rows": [
        {"role": "input", "name": "B", "tag": "NonDifferentiable", "verdict": "differentiable almost everywhere",
         "agreement": "disagrees", "reason": "r", "argument": "the divisor is an input <like any other>"}]},
        "Range": {"op": "Range", "rows": [
            {"role": "input", "name": "limit", "tag": "Unknown", "verdict": "zero almost everywhere",
             "agreement": "proposed", "reason": "moves | the length only", "argument": ""}]}}
    text = render_disagreements(verdicts, {
        "Erf": [{"op": "Erf", "title": "float32 for float64", "explanation": "e", "inputs": "x = 0.5", "output": "Y",
                 "index": [0], "reference": "0.52", "spec": "0.5205", "difference": "5e-8"}],
        "Mean": [{"op": "Mean", "title": "in place", "explanation": "e", "inputs": "x", "output": "mean",
                  "index": None, "reference": "raises ValueError", "spec": "float64[2] = [1.0, 2.0]",
                  "difference": None}]})
    assert "1 contradicts ONNX's differentiability tag and 1 has no tag" in text and "found 2 departures" in text
    assert "The divisor is an input &lt;like any other>." in text  # escaped as Markdown, not raw HTML
    assert 'href="../proofs/Mod.html#verdict-mod-b"' in text
    assert "(Unknown → NonDifferentiable). Moves &#124; the length only." in text
    assert "| input | " in text and "| Unknown | **NonDifferentiable** | zero almost everywhere |" in text
    assert "### Erf: float32 for float64" in text
    assert "`onnx.reference` gives Y\\[0] = 0.52, the spec 0.5205 (difference 5e-8)." in text
    # a witness without an entry (the reference raised) says what the reference did, and no difference
    assert "`onnx.reference` raises ValueError, where the spec gives mean: float64\\[2] = \\[1.0, 2.0]." in text
    assert "difference None" not in text


def test_the_engines_page_groups_findings_by_engine_and_operator_with_a_coverage_table():
    from proofkit.audit import render_engines
    verdicts = {"Max": {"op": "Max", "rows": [
        {"role": "input", "name": "data_0", "tag": "Differentiable", "verdict": "differentiable almost everywhere",
         "agreement": "agrees", "reason": "r", "argument": "",
         "engines": {"ONNX Runtime": ["agrees"], "onnx-ad": ["agrees", "differs at a special point"]}}],
        "engine_findings": [{"engine": "onnx-ad", "input": "data_0", "kind": "convention at a special point",
                             "reason": "the first input takes a tie", "case": "tie",
                             "values": {"vjp": "0.5", "engine": "1.0"}}]},
        "Tan": {"op": "Tan", "rows": [
            {"role": "input", "name": "input", "tag": "Differentiable", "verdict": "differentiable",
             "agreement": "agrees", "reason": "r", "argument": "",
             "engines": {"ONNX Runtime": ["no gradient"], "onnx-ad": ["refuses"]}}],
            "engine_findings": [{"engine": "onnx-ad", "input": "input", "kind": "refusal", "reason": "no | reason",
                                 "case": "inputs (3,)"}]}}
    text = render_engines(verdicts)
    assert "| ONNX Runtime | 2 | 1 | 0 | 0 | 0 | 1 |" in text and "| onnx-ad | 2 | 0 | 0 | 1 | 1 | 0 |" in text
    assert "## ONNX Runtime\n\nNo difference or refusal found." in text
    assert "### Max (onnx-ad)" in text and "### Tan (onnx-ad)" in text
    assert ('- **convention at a special point**, input <a href="../proofs/Max.html#verdict-max-data_0"><code>data_0'
            '</code></a>: The first input takes a tie. Case: tie; vjp gives 0.5; onnx-ad gives 1.0.') in text
    assert "No &#124; reason." in text  # escaped for a Markdown table-free paragraph as well


def test_arguments_keep_their_math_and_code():
    from proofkit.audit import markdown_prose
    assert markdown_prose("slope $x_i * 2$ of `a_b` for a*b_c") == "slope $x_i * 2$ of `a_b` for a\\*b\\_c"


def test_an_outputs_checks_include_those_of_the_differentiable_inputs_it_depends_on():
    from proofkit.audit import row_evidence
    rows = [{"role": "input", "name": "X", "verdict": "differentiable", "evidence": ["hand rule", "kink witness at X = 0"]},
            {"role": "input", "name": "k", "verdict": "non-differentiable", "evidence": ["discrete type"]},
            {"role": "output", "name": "Y", "verdict": "differentiable", "evidence": ["finite differences"]}]
    assert row_evidence(rows, rows[2]) == ["finite differences", "hand rule"]
    assert row_evidence(rows, rows[0]) == ["hand rule", "kink witness at X = 0"]


def test_an_operator_whose_outer_values_carry_its_gradient_is_on_the_engines_page_with_anchors_that_resolve():
    from proofkit.audit import render_engines
    from proofkit.verdict import row_anchor
    verdicts = {"If": {"op": "If", "rows": [
        {"role": "input", "name": "cond", "tag": "Unknown", "verdict": "non-differentiable", "agreement": "proposed",
         "reason": "r", "argument": ""},
        {"role": "output", "name": "outputs", "tag": "Unknown", "verdict": "differentiable", "agreement": "proposed",
         "reason": "r", "argument": ""}],
        "outer_engines": {"ONNX Runtime": ["no gradient"], "onnx-ad": ["agrees"]},
        "engine_findings": [{"engine": "onnx-ad", "input": "outer values", "kind": "refusal", "reason": "no rule",
                             "case": "c"}]},
        "Abs": {"op": "Abs", "rows": [  # no differentiable input and no outer values: not on the page
            {"role": "input", "name": "X", "tag": "Differentiable", "verdict": "non-differentiable",
             "agreement": "disagrees", "reason": "r", "argument": ""}], "engine_findings": []}}
    text = render_engines(verdicts)
    assert "| ONNX Runtime | 1 | 0 | 0 | 0 | 0 | 1 |" in text and "| onnx-ad | 1 | 1 | 0 | 0 | 0 | 0 |" in text
    assert "{doc}`If <../proofs/If>` | no gradient | " in text and "{doc}`Abs" not in text
    assert 'href="../proofs/If.html#verdict-if-outer-values"' in text and "outer values\"" not in text
    assert row_anchor("If", "outer values") == "verdict-if-outer-values"
    assert row_anchor("Clip", "min") == "verdict-clip-min"  # a name without spaces: unchanged
