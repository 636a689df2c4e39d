"""No module outside a tool's package names a tool (issue 22): a tool's differences live in its package
(pgarena.tools.<tool>) behind the Tool protocol and its schemas, and everything else asks by name.

Code is checked, prose is not: identifiers (imports included) and string literals count; comments and
docstrings may say which tool a behaviour comes from, as they select nothing.
"""

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("pgarena", "functions", "workers")
TOOL_PACKAGES = ROOT / "pgarena" / "tools"
TOOL_NAME = re.compile(r"pgbench|sysbench", re.IGNORECASE)
# The registries name the tools so that nothing else has to.
ALLOWED = {
    "pgarena/tools/workloads.py": "the schemas by name: the matrix's workload union, the run record union",
    "pgarena/tools/registry.py": "the Tool implementations by name (tool_for)",
}


def docstring_starts(tree: ast.AST) -> set[tuple[int, int]]:
    """Where each module, class and function docstring begins (line, column)."""
    starts = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                starts.add((first.lineno, first.col_offset))
    return starts


def tool_mentions(text: str) -> list[str]:
    """`line: token` for each identifier or non-docstring string literal that names a tool."""
    docstrings = docstring_starts(ast.parse(text))
    found = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        named = token.type == tokenize.NAME or (token.type == tokenize.STRING and token.start not in docstrings)
        if named and TOOL_NAME.search(token.string):
            found.append(f"{token.start[0]}: {token.string[:60]}")
    return found


def in_a_tool_package(path: Path) -> bool:
    return path.parent != TOOL_PACKAGES and path.is_relative_to(TOOL_PACKAGES)


def test_the_check_tells_code_from_prose():
    text = (
        '"""pgbench\'s runs."""\n'
        "import pgarena.tools.pgbench.parser  # an import names it\n"
        "def f(step):\n"
        '    """sysbench too."""\n'
        "    # a comment may say pgbench\n"
        '    return step.tool == "sysbench" or isinstance(step, PgbenchWorkload)\n'
    )
    assert [m.split(":")[0] for m in tool_mentions(text)] == ["2", "6", "6"]


def test_no_module_outside_a_tool_package_names_a_tool():
    offenders = {
        str(path.relative_to(ROOT)): mentions
        for folder in FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if not in_a_tool_package(path) and str(path.relative_to(ROOT)) not in ALLOWED
        for mentions in [tool_mentions(path.read_text())]
        if mentions
    }
    assert offenders == {}


def test_the_allowed_modules_exist_and_still_need_their_entry():
    for name in ALLOWED:
        assert tool_mentions((ROOT / name).read_text()), name
