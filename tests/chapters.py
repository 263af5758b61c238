"""Reading chapters as files, for the contract tests."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "proofs").glob("*.ipynb"))


def load(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def source(cell) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def headings(nb: dict, level: int) -> list[str]:
    marker = "#" * level + " "
    out = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        in_fence = False
        for line in source(cell).splitlines():
            if line.startswith("```"):
                in_fence = not in_fence
            elif not in_fence and line.startswith(marker):
                out.append(line[len(marker):].strip())
    return out
