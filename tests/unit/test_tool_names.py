"""No module outside a tool's package names a tool (issue 22) or reads one of its figures by name (issue 33):
a tool's differences live in its package (pgarena.tools.<tool>) behind the Tool protocol, its schemas and
its figures model, and everything else asks by name and reads the figures' typed attributes.

Code is checked, prose is not: identifiers (imports included) and string literals count; comments and
docstrings may say which tool a behaviour comes from, as they select nothing. The tools' names and
figures come from the registry, so a new tool is checked without an edit here.
"""

import ast
import io
import re
import tokenize
import tomllib
from pathlib import Path

from pgarena.model.tool_figures import ToolFigures
from pgarena.tools.registry import TOOLS

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("pgarena", "functions", "workers")
TOOL_PACKAGES = ROOT / "pgarena" / "tools"
TOOL_NAME = re.compile("|".join(re.escape(name) for name in TOOLS), re.IGNORECASE)
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


def figure_models(model: type[ToolFigures] = ToolFigures) -> list[type[ToolFigures]]:
    """The shared figures model and every tool's (the registry imported them all)."""
    return [model, *(m for sub in model.__subclasses__() for m in figure_models(sub))]


# Every figure a tool reports: read as a typed attribute, never by a string key.
FIGURE_NAMES = frozenset(name for model in figure_models() for name in model.model_fields)


def figure_keys(text: str) -> list[str]:
    """`line: key` for each string literal (docstrings apart) that is a tool figure's name."""
    tree = ast.parse(text)
    docstrings = docstring_starts(tree)
    return [
        f"{node.lineno}: {node.value}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in FIGURE_NAMES and (node.lineno, node.col_offset) not in docstrings
    ]


def outside_the_tool_packages(check, root: Path = ROOT) -> dict[str, list[str]]:
    """What `check` finds in each module outside the tools' own packages (and the registries)."""
    return {
        name: found
        for folder in FOLDERS
        for path in sorted((root / folder).rglob("*.py"))
        if not in_a_tool_package(path) and (name := str(path.relative_to(root))) not in ALLOWED
        for found in [check(path.read_text())]
        if found
    }


def test_the_check_tells_code_from_prose():
    a, b = list(TOOLS)[:2]  # any two registered tools
    text = (
        f'"""{a}\'s runs."""\n'
        f"import pgarena.tools.{a}.parser  # an import names it\n"
        "def f(step):\n"
        f'    """{b} too."""\n'
        f"    # a comment may say {a}\n"
        f'    return step.tool == "{b}" or isinstance(step, {a.capitalize()}Workload)\n'
    )
    assert [m.split(":")[0] for m in tool_mentions(text)] == ["2", "6", "6"]


def test_no_module_outside_a_tool_package_names_a_tool():
    assert outside_the_tool_packages(tool_mentions) == {}


def test_the_allowed_modules_exist_and_still_need_their_entry():
    for name in ALLOWED:
        assert tool_mentions((ROOT / name).read_text()), name


def test_the_names_and_figures_come_from_every_registered_tool():
    assert all(TOOL_NAME.fullmatch(name) for name in TOOLS) and len(TOOLS) >= 2
    # each tool's own figures model is found, beside the shared one (qps, retried, window_s, ...)
    assert len(figure_models()) > len(TOOLS) and {"qps", "retried", "window_s"} <= FIGURE_NAMES


def test_the_figure_check_tells_a_key_from_an_attribute():
    text = (
        '"""qps"""\n'
        "def f(w):\n"
        "    a = w.tool_figures.qps  # typed: allowed\n"
        '    b = w.extra.get("qps")\n'
        '    return w.extra["window_s"], getattr(w, "retried"), ("retried", "ignored_errors")\n'
    )
    assert figure_keys(text) == ["4: qps", "5: window_s", "5: retried", "5: retried", "5: ignored_errors"]


def test_no_module_outside_the_tools_reads_a_tool_figure_by_name():
    assert outside_the_tool_packages(figure_keys) == {}


def test_the_import_contracts_name_no_tool():
    # The contracts cover each tool's package by wildcard (pgarena.tools.*.spec, pgarena.tools.*.*)
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert not TOOL_NAME.search(repr(contracts))
    assert any("pgarena.tools.*.spec" in c.get("source_modules", []) for c in contracts)
