"""The matrix validator meets whatever a user (or a schedule's S3 object) hands it: it answers with the
campaign or with MatrixError listing the problems, never with any other exception, and a campaign it
accepts always plans."""

import copy
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgarena.model.errors import InvalidMatrix
from pgarena.model.matrix import Campaign
from pgarena.model.matrix_errors import MatrixError
from pgarena.planning.campaign import load_campaign, parse_campaign
from pgarena.planning.planner import plan_campaign

FIXTURES = Path(__file__).parents[1] / "fixtures" / "matrices"
VALID = json.loads((FIXTURES / "minimal.json").read_text())
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("inf"), float("-inf"), float("nan"), 10**12, 7 * 24 * 3600 + 1, 100_001, 2**63]),
    st.text(max_size=30),
    st.text(min_size=90, max_size=120),
    st.sampled_from(["x" * 9000, "\\shell id", "\\setshell x id", "--luajit-cmd=-jdump"]),
    st.sampled_from(["", "0", "-1", "a" * 300, "pgbench", "sysbench", "../x", "a/b", "a'b", 'a"b', "a\nb", "Ω"]),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _json_path(path) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _related(problem_path: str, changed: str) -> bool:
    """A problem at the changed value, inside it, or at a field holding it (a rule about several fields)."""
    inner, outer = sorted((problem_path, changed), key=len, reverse=True)
    return inner == outer or inner.startswith((outer + ".", outer + "["))


@st.composite
def mutated_matrix(draw, changed=None):
    """The valid example with a few of its values replaced, removed, or given unknown neighbours."""
    matrix = copy.deepcopy(VALID)
    changed = [] if changed is None else changed
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(matrix) if p]
        if not paths:
            break
        *parent_path, last = draw(st.sampled_from(paths))
        parent = matrix
        for part in parent_path:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "remove", "add"]))
        if action == "replace":
            parent[last] = draw(JSON)
            changed.append(_json_path((*parent_path, last)))
        elif action == "remove":
            del parent[last]
            changed.append(_json_path((*parent_path, last)))
        elif isinstance(parent, dict):
            key = draw(st.text(max_size=10))
            parent[key] = draw(JSON)
            changed.append(_json_path((*parent_path, key)))
        else:
            parent.append(draw(JSON))
            changed.append(_json_path(parent_path))
    return matrix


def _check(data):
    try:
        campaign = parse_campaign(data)
    except MatrixError as error:
        assert error.problems and all(p.path.startswith("$") and p.message for p in error.problems)
        return
    assert isinstance(campaign, Campaign)
    try:
        plan = plan_campaign(campaign, "fuzz-1")
    except InvalidMatrix:  # embedded targets outside the local runtime: a refusal with its fix
        return
    assert len(plan.targets) == len(campaign.targets)


@FUZZ
@given(data=JSON)
def test_any_json_is_a_campaign_or_a_matrix_error(data):
    _check(data)


@FUZZ
@given(st.data())
def test_a_damaged_matrix_is_a_campaign_or_a_matrix_error_at_what_was_damaged(data):
    changed: list[str] = []
    matrix = data.draw(mutated_matrix(changed))
    _check(matrix)
    try:
        parse_campaign(matrix)
    except MatrixError as error:
        # Every refusal names a field that was damaged, one inside it, or one holding it.
        for problem in error.problems:
            assert any(_related(problem.path, c) for c in changed), (problem, changed)


# Text-level damage json.loads lets through: a key twice, a non-finite number, absurd nesting.
TEXT_DAMAGE = st.sampled_from(
    [
        ('"campaign": "minimal"', '"campaign": "minimal", "campaign": "other"'),
        ('"clients": 4', '"clients": Infinity'),
        ('"clients": 4', '"clients": NaN'),
        ('"clients": 4', '"clients": true'),
        ('"clients": 4', '"clients": 4, "clients": 8'),
        ('"scale": 1', '"scale": 1e9'),
        ('"duration_s": 10', '"duration_s": 1000000000000'),
        ('"scale": 1', '"scale": ' + "[" * 50 + "]" * 50),
        ('"provider": "embedded"', '"provider": "' + "p" * 5000 + '"'),
    ]
)


@FUZZ
@given(damage=st.lists(TEXT_DAMAGE, min_size=1, max_size=3, unique_by=lambda d: d[0]))
def test_text_damage_is_a_matrix_error_naming_a_field(tmp_path_factory, damage):
    text = (FIXTURES / "minimal.json").read_text()
    for old, new in damage:
        text = text.replace(old, new, 1)
    path = tmp_path_factory.mktemp("m") / "matrix.json"
    path.write_text(text)
    try:
        load_campaign(path)
    except MatrixError as error:
        assert error.problems and all(p.path.startswith("$.") and p.message for p in error.problems)
        return
    raise AssertionError("damage accepted")


@FUZZ
@given(data=st.binary(max_size=400))
def test_any_file_is_a_campaign_or_a_matrix_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("m") / "matrix.json"
    path.write_bytes(data)
    try:
        load_campaign(path)
    except MatrixError as error:
        assert error.problems
