"""Every exit code the CLI defines is in the docs' one table (docs/guide/10-cli.md), and the table lists no other."""

import re

from pgarena import cli
from tests.conftest import ROOT

TABLE = ROOT / "docs" / "guide" / "10-cli.md"


def _table_codes() -> set[int]:
    """The exit codes heading the table's columns: `| command | 0 | 1 | ... |`."""
    text = TABLE.read_text()
    section = text[text.index("## Exit codes") :]
    header = next(line for line in section.splitlines() if line.startswith("| command |"))
    return {int(cell) for cell in re.findall(r"\|\s*(\d+)\s*(?=\|)", header)}


def _defined_codes() -> dict[str, int]:
    return {name: value for name, value in vars(cli).items() if name.startswith("EXIT_") and isinstance(value, int)}


def test_the_table_lists_every_exit_code_the_cli_defines():
    defined = _defined_codes()
    # the codes every command uses, and the ones of single commands (run's 3 and 130, history's 4)
    assert {"EXIT_OK", "EXIT_ERROR", "EXIT_USAGE", "EXIT_FAILED_TARGETS", "EXIT_CANCELLED"} <= defined.keys()
    assert set(defined.values()) == _table_codes(), "docs/guide/10-cli.md's exit code table and pgarena/cli.py's EXIT_* differ"


def test_every_row_of_the_table_has_a_cell_per_code():
    text = TABLE.read_text()
    section = text[text.index("## Exit codes") :].splitlines()
    rows = [line for line in section if line.startswith("| `")]
    columns = len(_table_codes()) + 1
    assert rows and all(line.count("|") == columns + 1 for line in rows), rows
