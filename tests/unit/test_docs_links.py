"""Every document points at files that are in the repository: each relative link of README.md
and docs/ resolves, and nothing names the benchmark folder's FORMAT.md (the format is
docs/memeval.md, self-contained)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_relative_links_resolve() -> None:
    broken = []
    for doc in documents():
        prose = re.sub(r"^```.*?^```", "", doc.read_text(encoding="utf-8"), flags=re.S | re.M)
        for target in LINK.findall(prose):  # links in code blocks are examples (templates)
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            path = (doc.parent / target.split("#", 1)[0]).resolve()
            if not path.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_no_reference_to_a_format_file_outside_the_repository() -> None:
    sources = [*documents(), *ROOT.glob("*/**/*.py"), ROOT / ".env.example"]
    naming = [
        str(p.relative_to(ROOT))
        for p in sources
        if ".venv" not in p.parts
        and "FORMAT.md" in p.read_text(encoding="utf-8")
        and p.name != "test_docs_links.py"
    ]
    assert not naming, naming
