"""Every body cell of a rendered table labelled with its column's header (`data-label`), so that on a narrow
screen the report's CSS stacks a row's cells, each beside its label, instead of a table wider than the
screen (report.css: the phone's media query). Done once on the rendered page, so that every table a template
writes, now or later, is labelled without each cell naming its column. Pure.

It reads the pages pgarena's templates write (no table within a table, a table's header in its <thead>), not
arbitrary HTML: a table without a <thead> is left as it is."""

from __future__ import annotations

import html
import re

TABLE = re.compile(r"(<table\b[^>]*>)(.*?)(</table>)", re.S)
THEAD = re.compile(r"<thead\b[^>]*>(.*?)</thead>", re.S)
HEADER_CELL = re.compile(r"<th\b([^>]*)>(.*?)</th>", re.S)
# A body row's start, or one of its cells' start tags (a <th> in the body heads its row, and takes a column).
ROW_OR_CELL = re.compile(r"<tr\b[^>]*>|<(td|th)\b([^>]*)>")
COLSPAN = re.compile(r'\bcolspan="(\d+)"')
TAG = re.compile(r"<[^>]+>")
WBR = re.compile(r"<wbr\s*/?>")  # a line break opportunity inside a word (max_<wbr>connections), not a space


def _span(attributes: str) -> int:
    found = COLSPAN.search(attributes)
    return int(found.group(1)) if found else 1


def _text(cell: str) -> str:
    """A header cell's text: its tags dropped, its entities read, its spaces collapsed."""
    return " ".join(html.unescape(TAG.sub(" ", WBR.sub("", cell))).split())


def column_labels(thead: str) -> list[str]:
    """Each column's label, a header spanning n columns labelling each of them."""
    labels: list[str] = []
    for attributes, cell in HEADER_CELL.findall(thead):
        labels += [_text(cell)] * _span(attributes)
    return labels


def _label_body(body: str, labels: list[str]) -> str:
    column = 0

    def label(match: re.Match[str]) -> str:
        nonlocal column
        tag, attributes = match.group(1), match.group(2)
        if tag is None:  # a new row
            column = 0
            return match.group(0)
        span = _span(attributes)
        at, column = column, column + span
        # A cell spanning columns says something of them all (e.g. "not reached"): no one column's label
        if tag == "th" or span > 1 or at >= len(labels) or not labels[at] or "data-label=" in attributes:
            return match.group(0)
        return f'<{tag}{attributes} data-label="{html.escape(labels[at])}">'

    return ROW_OR_CELL.sub(label, body)


def label_cells(page: str) -> str:
    """The page with each body cell of each table carrying its column's label as `data-label`."""

    def table(match: re.Match[str]) -> str:
        start, inner, end = match.groups()
        head = THEAD.search(inner)
        if head is None:
            return match.group(0)
        labels = column_labels(head.group(1))
        return start + inner[: head.end()] + _label_body(inner[head.end() :], labels) + end

    return TABLE.sub(table, page)
