"""Every Lambda handler meets malformed events with a validation error, never an odd crash: the event is
parsed (Powertools parser, pydantic) before anything else runs, and a bad one stops there."""

import importlib

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from pgarena.local.endpoints import LambdaContext
from pgarena.model.errors import InvalidMatrix

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

HANDLERS = ["validate", "cost_guard", "preflight", "launch_worker", "release_lease", "aggregate", "start_campaign"]
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20))
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=12,
)


@pytest.fixture(scope="module", autouse=True)
def quiet_powertools():
    with pytest.MonkeyPatch.context() as env:
        for name in ("POWERTOOLS_TRACE_DISABLED", "POWERTOOLS_METRICS_DISABLED"):
            env.setenv(name, "true")
        env.setenv("POWERTOOLS_LOG_LEVEL", "CRITICAL")
        yield


def _module(name):
    return importlib.import_module(f"functions.{name}.handler")


def _event_model(module) -> type[BaseModel]:
    return next(v for k, v in vars(module).items() if k.endswith("Event") and isinstance(v, type) and issubclass(v, BaseModel))


@st.composite
def events(draw, model: type[BaseModel]):
    """Dicts with the model's own field names (and some others) holding any JSON, or not a dict at all."""
    if draw(st.integers(0, 9)) == 0:
        return draw(JSON)
    names = [*list(model.model_fields), "extra"]
    return draw(st.dictionaries(st.sampled_from(names), JSON, max_size=len(names)))


def _invalid(model, event) -> bool:
    try:
        model.model_validate(event)
    except ValidationError:
        return True
    return False


@pytest.mark.parametrize("name", HANDLERS)
@FUZZ
@given(data=st.data())
def test_a_malformed_event_is_a_validation_error(name, data):
    module = _module(name)
    model = _event_model(module)
    event = data.draw(events(model))
    assume(_invalid(model, event))
    with pytest.raises(ValidationError):
        module.handler(event, LambdaContext(function_name=name))


@FUZZ
@given(matrix=JSON)
def test_validate_answers_any_matrix_with_a_plan_or_invalid_matrix(matrix):
    module = _module("validate")
    try:
        plan = module.handler({"campaign_id": "fuzz-1", "matrix": matrix}, LambdaContext(function_name="validate"))
    except (InvalidMatrix, ValidationError):
        return
    assert plan["campaign_id"] == "fuzz-1"


@pytest.mark.parametrize("campaign_id", ["", "../escape", "a/b", "a b", "x" * 200, "ünï"])
def test_validate_refuses_campaign_ids_unfit_for_keys(campaign_id):
    with pytest.raises(ValidationError):
        _module("validate").handler({"campaign_id": campaign_id, "matrix": {}}, LambdaContext(function_name="validate"))
