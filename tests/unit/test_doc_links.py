"""Every relative link in README.md and docs/ names a file of the repository (and, with an anchor, one of its
headings, as GitHub spells them); the README stays a front page."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
README_MAX_BYTES = 15_000


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lstrip("#").strip().lower()).replace(" ", "-")


def _broken(page: Path) -> list[str]:
    broken = []
    for m in LINK.finditer(page.read_text()):
        target, _, anchor = m.group(1).partition("#")
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path = (page.parent / target).resolve() if target else page
        if not path.exists() or ROOT not in path.parents:
            broken.append(f"{page.name}: {m.group(1)} (no such file in the repository)")
        elif anchor and path.suffix == ".md":
            heads = {_anchor(line) for line in path.read_text().splitlines() if line.startswith("#")}
            if anchor not in heads:
                broken.append(f"{page.name}: {m.group(1)} (no such heading)")
    return broken


def test_every_doc_link_resolves() -> None:
    broken = [b for page in PAGES for b in _broken(page)]
    assert broken == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = ROOT / "docs" / "train.md"
    fake = tmp_path / "page.md"
    fake.write_text(f"[a]({page}#no-such-heading) [b](nowhere.md) [c](https://example.org/x)\n")
    assert _broken(fake) == [f"page.md: {page}#no-such-heading (no such heading)",
                             "page.md: nowhere.md (no such file in the repository)"]


def test_the_readme_is_a_front_page() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= README_MAX_BYTES
    first_screen = "\n".join(text.splitlines()[:60])
    assert "bash tools/setup.sh && polar-hpc launch recipes/local-demo.toml --wait" in first_screen
    assert "bash tools/setup.sh && bash tools/test.sh" in first_screen
    assert "final: sessions 6/6 done" in first_screen
