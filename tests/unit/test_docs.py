"""The docs cannot drift: the matrix reference is the schema's, every matrix field is described, every link
in README.md and docs/ reaches a file and a heading, and every example is named in the docs."""

import os
import re
from pathlib import Path

import pytest

from pgarena.model.matrix import json_schema
from pgarena.model.matrix_reference import render, undocumented
from tests.conftest import ROOT

REFERENCE = ROOT / "docs" / "matrix-reference.md"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")


def anchors(path: Path) -> set[str]:
    """The anchors GitHub makes of a Markdown file's headings: lower case, punctuation dropped, spaces to -."""
    text = FENCE.sub("", path.read_text())
    slugs = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        slugs.add(slug)
    return slugs


def links(path: Path) -> list[str]:
    text = CODE.sub("", FENCE.sub("", path.read_text()))
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in links(path):
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (resolved.suffix != ".md" or anchor not in anchors(resolved)):
            broken.append(f"{target}: no such heading in {os.path.relpath(resolved, path.parent)}")
    return broken


def test_the_matrix_reference_is_the_schemas():
    # Given the reference rendered from today's schema / Then the file in docs/ is it (else: make docs)
    assert REFERENCE.read_text() == render(json_schema()), "docs/matrix-reference.md is stale: run `make docs`"


def test_every_matrix_field_is_described():
    assert undocumented(json_schema()) == []


def test_a_field_without_a_description_is_found():
    # Given a schema with one undescribed field / Then it is named
    schema = {"properties": {"a": {"description": "x"}}, "$defs": {"Thing": {"properties": {"b": {"type": "string"}}}}}
    assert undocumented(schema) == ["Thing.b"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_reaches_a_file_and_a_heading(doc):
    assert broken_links(doc) == []


def test_a_link_to_a_missing_file_or_heading_is_found(tmp_path):
    # Given a doc linking a missing file, a missing heading and a present one
    (tmp_path / "other.md").write_text("# Other page\n\n## How it works, briefly\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "[a](missing.md) [b](other.md#nowhere) [c](other.md#how-it-works-briefly) [d](https://example.com)\n"
        "```\n[e](inside-a-code-block.md)\n```\n"
    )
    # Then the two broken ones are named, and the code block and the web link are left alone
    assert broken_links(doc) == ["missing.md: no such file", "other.md#nowhere: no such heading in other.md"]


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*.json")), ids=lambda p: p.name)
def test_every_example_is_named_in_the_docs(example):
    assert any(f"examples/{example.name}" in doc.read_text() for doc in DOCS)


def test_the_readme_fits_on_two_screens():
    assert len((ROOT / "README.md").read_text().splitlines()) < 150
