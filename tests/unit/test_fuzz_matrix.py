"""The matrix validator meets whatever a user (or a schedule's S3 object) hands it: it answers with the
campaign or with MatrixError listing the problems, never with any other exception, and a campaign it
accepts always plans."""

import copy
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgarena.model.errors import InvalidMatrix
from pgarena.model.matrix import Campaign, MatrixError, load_campaign, parse_campaign
from pgarena.planning.plan import plan_campaign

FIXTURES = Path(__file__).parents[1] / "fixtures" / "matrices"
VALID = json.loads((FIXTURES / "minimal.json").read_text())
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
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


@st.composite
def mutated_matrix(draw):
    """The valid example with a few of its values replaced, removed, or given unknown neighbours."""
    matrix = copy.deepcopy(VALID)
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
        elif action == "remove":
            del parent[last]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=10))] = draw(JSON)
        else:
            parent.append(draw(JSON))
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
@given(data=mutated_matrix())
def test_a_damaged_matrix_is_a_campaign_or_a_matrix_error(data):
    _check(data)


@FUZZ
@given(data=st.binary(max_size=400))
def test_any_file_is_a_campaign_or_a_matrix_error(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("m") / "matrix.json"
    path.write_bytes(data)
    try:
        load_campaign(path)
    except MatrixError as error:
        assert error.problems
