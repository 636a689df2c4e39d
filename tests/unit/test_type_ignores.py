"""mypy's ignore comments are allowed only with an error code and a reason on the same line (issue 13)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("pgarena", "functions", "workers", "cdk", "bench", "tests")
# The comment, its optional [codes], and what follows it on the line.
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<rest>.*)$")
REASON = re.compile(r"\s+#\s*\w")


def silent_ignores(text: str) -> list[int]:
    """Line numbers of ignore comments without a code or without a `# reason` after it."""
    lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = IGNORE.search(line)
        if match and (not match["codes"] or not REASON.match(match["rest"])):
            lines.append(number)
    return lines


def test_the_check_tells_a_reasoned_ignore_from_a_silent_one():
    ok = "x = f()  # type" + ": ignore[arg-type]  # bytes on purpose\n"
    no_reason = "x = f()  # type" + ": ignore[arg-type]\n"
    no_code = "x = f()  # type" + ": ignore  # why\n"
    assert silent_ignores(ok + no_reason + no_code) == [2, 3]


def test_every_ignore_in_the_repository_names_its_code_and_says_why():
    silent = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        for number in silent_ignores(path.read_text())
    ]
    assert silent == []
