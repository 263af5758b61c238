"""Command line: python -m proofkit {new,run,audit,tag-rules,grad}."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m proofkit", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    n = sub.add_parser("new", help="scaffold proofs/<Op>.ipynb from the ONNX schema and add it to _toc.yml")
    n.add_argument("op")
    n.add_argument("--force", action="store_true", help="overwrite an existing chapter")
    r = sub.add_parser("run", help="execute chapters in place in a fresh kernel, top to bottom")
    r.add_argument("notebooks", nargs="+", type=Path)
    a = sub.add_parser("audit", help="regenerate the generated pages (audit, index, proposed changes, families), "
                                     "book/data/verdicts.json and _toc.yml")
    a.add_argument("--json", action="store_true",
                   help="print the verdicts as JSON (book/data/verdicts.json) to stdout instead of writing files")
    t = sub.add_parser("tag-rules", help="tag `rule` the cells that define each chapter's vjp (proofkit.rules), "
                                         "and report what keeps a chapter's rule from loading as the one it checks")
    t.add_argument("notebooks", nargs="*", type=Path,
                   help="chapters to tag (default: every chapter with a differentiable input)")
    g = sub.add_parser("grad", help="differentiate a model with the chapters' rules (proofkit.reverse): the sum over "
                                    "its float outputs of output·cotangent, per graph input and initializer")
    g.add_argument("model", type=Path)
    g.add_argument("--inputs", type=Path, help="an .npz of graph inputs by name (seeded random inputs for those "
                                                "absent) and of cotangents named after outputs (ones otherwise)")
    g.add_argument("--out", type=Path, help="write the gradients to this .npz, one array per parameter by name")
    g.add_argument("--check", action="store_true", help="also compare with central finite differences of "
                                                        "onnx.reference along random directions")
    g.add_argument("--seed", type=int, default=0, help="seed of the inputs drawn (default 0)")
    args = p.parse_args(argv)

    if args.command == "grad":
        from .gradcmd import main as grad_main
        from .reverse import ReverseModeError

        try:
            return grad_main(args.model, args.inputs, args.out, args.check, args.seed)
        except ReverseModeError as e:
            print(f"{p.prog} grad: error: {e}", file=sys.stderr)
            return 2

    if args.command == "new":
        from .scaffold import new_chapter

        try:
            path = new_chapter(args.op, force=args.force)
        except (ValueError, FileExistsError) as e:  # an unknown operator, an existing chapter: a usage error
            print(f"{p.prog}: error: {e}", file=sys.stderr)  # one line, no traceback
            return 2
        print(f"wrote {path}; fill in each section, then: python -m proofkit run {path}")
    elif args.command == "run":
        from .audit import write_all
        from .runner import run_notebook

        failed = []
        for nb in args.notebooks:
            try:
                run_notebook(nb)
                print(f"ran {nb}")
            except Exception as e:  # report every chapter, then fail
                failed.append(nb)
                print(f"FAILED {nb}: {type(e).__name__}: {str(e).splitlines()[-1] if str(e) else ''}",
                      file=sys.stderr)
        for path in write_all():
            print(f"updated {path}")
        return 1 if failed else 0
    elif args.command == "tag-rules":
        from .audit import ROOT, stored_verdict
        from .rules import tag_rules
        from .verdict import DIFFERENTIABLE

        paths = args.notebooks or [
            nb for nb in sorted((ROOT / "proofs").glob("*.ipynb"))
            if any(r["role"] == "input" and r["verdict"] in DIFFERENTIABLE
                   for r in (stored_verdict(nb) or {}).get("rows", []))]
        bad = 0
        for nb in paths:
            cells, problems = tag_rules(nb)
            print(f"{nb}: rule cells {cells}" + "".join(f"\n  {m}" for m in problems))
            bad += bool(problems)
        return 1 if bad else 0
    elif args.command == "audit" and args.json:
        from .audit import verdicts_json

        sys.stdout.write(verdicts_json())
    elif args.command == "audit":
        from .audit import write_all

        changed = write_all()
        print("\n".join(f"updated {p}" for p in changed) or "generated pages are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
