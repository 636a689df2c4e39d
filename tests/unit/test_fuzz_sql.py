"""Identifiers and values from the matrix never reach SQL as text: every statement pgarena runs is a
module constant, and anything variable travels as a bind parameter. Checked on the source itself, so a
new f-string in an execute() fails here before it reaches a server."""

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pgarena.local.embedded import _conf_value
from pgarena.model.matrix import EmbeddedServer
from pgarena.model.matrix_errors import MatrixError
from pgarena.planning.campaign import parse_campaign

PACKAGE = Path(__file__).parents[2] / "pgarena"
SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if "execute(" in p.read_text())


def _module_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level assignments, and names imported from other pgarena modules' module level."""
    constants = {
        t.id: node.value for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)
    }
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pgarena."):
            source = PACKAGE.joinpath(*node.module.split(".")[1:]).with_suffix(".py")
            if source.exists():
                theirs = _module_constants(ast.parse(source.read_text()))
                constants.update({a.asname or a.name: theirs[a.name] for a in node.names if a.name in theirs})
    return constants


def _only_literals(node: ast.expr, constants: dict[str, ast.expr]) -> bool:
    """A string built from literals and other such module constants only (no f-string, no format)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _only_literals(node.left, constants) and _only_literals(node.right, constants)
    if isinstance(node, ast.Name) and node.id in constants:
        return _only_literals(constants[node.id], constants)
    return False


def _parameter_defaults(tree: ast.Module) -> dict[str, ast.expr]:
    """Function parameters that default to a statement (e.g. `sql: str = PRIMARY_SQL`)."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.args[len(node.args.args) - len(node.args.defaults) :]
            found.update({a.arg: d for a, d in zip(args, node.args.defaults)})
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_statement_is_a_constant(path):
    tree = ast.parse(path.read_text())
    constants = _module_constants(tree)
    defaults = _parameter_defaults(tree)
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "execute" and n.args
    ]
    assert calls
    for call in calls:
        statement = call.args[0]
        if isinstance(statement, ast.Name) and statement.id in defaults and statement.id not in constants:
            statement = defaults[statement.id]  # a parameter: its callers pass module constants (checked below)
        assert _only_literals(statement, constants), f"{path.name}:{call.lineno}: SQL built at run time"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_statements_passed_around_are_constants(path):
    """Where a statement is handed to a helper (`self._where_primary_is(MARKER_SQL)`), it is a constant too."""
    tree = ast.parse(path.read_text())
    constants = _module_constants(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if isinstance(arg, ast.Name) and arg.id.endswith("_SQL"):
                    assert _only_literals(arg, constants), f"{path.name}:{node.lineno}"


@given(value=st.text(max_size=40))
def test_a_setting_value_is_one_quoted_literal(value):
    # postgresql.conf: a value is one single-quoted literal with its quotes doubled, on one line
    rendered = _conf_value(value)
    assert rendered.startswith("'") and rendered.endswith("'")
    assert rendered[1:-1].replace("''", "").count("'") == 0


@given(value=st.text(max_size=20).filter(lambda v: any(ord(c) < 32 for c in v)))
def test_a_setting_value_with_a_line_break_is_refused(value):
    with pytest.raises(ValueError):
        EmbeddedServer(settings={"work_mem": value})


@given(
    name=st.text(min_size=1, max_size=20).filter(
        lambda n: not n.replace("_", "").replace(".", "").isascii() or not n.replace("_", "").replace(".", "").isalnum()
    )
)
def test_a_setting_name_that_is_not_an_identifier_is_refused(name):
    with pytest.raises(MatrixError):
        parse_campaign(
            {
                "campaign": "c",
                "targets": [{"name": "t", "provider": "p", "embedded": {"settings": {name: "1"}}}],
                "workloads": [{"name": "w", "tool": "pgbench", "run": {"duration_s": 1}}],
            }
        )
