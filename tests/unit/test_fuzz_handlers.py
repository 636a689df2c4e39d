"""Every Lambda handler meets malformed events with a validation error, never an odd crash: the event is
parsed (Powertools parser, pydantic) before anything else runs, and a bad one stops there."""

import importlib

import boto3
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from pydantic import BaseModel, ValidationError

from pgarena.aws.store import create_results_table
from pgarena.local.endpoints import LambdaContext
from pgarena.model.errors import InvalidMatrix

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

HANDLERS = ["validate", "cost_guard", "preflight", "launch_worker", "release_lease", "aggregate", "decide", "start_campaign"]
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


@pytest.fixture(scope="module")
def results_store():
    """An empty results bucket and table (moto): Validate looks there for the campaign id before planning."""
    with pytest.MonkeyPatch.context() as env:
        for name, value in {
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "RESULTS_BUCKET": "results",
            "RESULTS_TABLE": "results",
        }.items():
            env.setenv(name, value)
        with mock_aws():
            boto3.client("s3").create_bucket(Bucket="results")
            create_results_table(boto3.client("dynamodb"), "results")
            yield


@FUZZ
@given(matrix=JSON, bare=st.booleans())
def test_validate_answers_any_matrix_with_a_plan_or_invalid_matrix(results_store, matrix, bare):
    module = _module("validate")
    execution_input = matrix if bare else {"campaign_id": "fuzz-1", "matrix": matrix}
    try:
        plan = module.handler({"input": execution_input, "execution_name": "fuzz-1"}, LambdaContext(function_name="validate"))
    except (InvalidMatrix, ValidationError):
        return
    assert plan["campaign_id"] == "fuzz-1"


@pytest.mark.parametrize("campaign_id", ["", "../escape", "a/b", "a b", "x" * 200, "ünï", 7])
@pytest.mark.parametrize("given_as", ["campaign_id", "execution name"])
def test_validate_refuses_campaign_ids_unfit_for_keys(results_store, campaign_id, given_as):
    execution_input, name = ({"campaign_id": campaign_id, "matrix": {}}, "ok") if given_as == "campaign_id" else ({}, campaign_id)
    with pytest.raises((InvalidMatrix, ValidationError), match=r"campaign id|execution_name"):
        _module("validate").handler({"input": execution_input, "execution_name": name}, LambdaContext(function_name="validate"))
