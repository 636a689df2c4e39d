import json

import pytest

from pgarena.model.errors import InvalidMatrix
from pgarena.model.matrix import parse_campaign
from pgarena.model.plan import RUN_TIMEOUT_MARGIN_S
from pgarena.planning.plan import plan_campaign
from tests.conftest import FIXTURES


def campaign(**run):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = data["targets"][:1]
    data["workloads"][0]["run"].update(run)
    return parse_campaign(data)


def test_steps_are_init_then_runs_per_client_count_and_repetition():
    # Given a sweep over two client counts and two repetitions
    c = campaign(clients=[2, 8]).model_copy(update={"repetitions": 2})
    # When planned
    (target,) = plan_campaign(c, "cid").targets
    # Then the init comes first, then each repetition sweeps the client counts
    assert [s.step_id for s in target.steps] == ["a/tpcb/init", "a/tpcb/c2-r1", "a/tpcb/c8-r1", "a/tpcb/c2-r2", "a/tpcb/c8-r2"]


def test_connections_needed_is_the_peak_client_count():
    (target,) = plan_campaign(campaign(clients=[2, 8]), "cid").targets
    assert target.connections_needed == 8


def test_each_sweep_point_is_a_run_with_its_client_count():
    (target,) = plan_campaign(campaign(clients=[1, 4], jobs=2), "cid").targets
    assert [s.clients for s in target.steps if s.kind == "run"] == [1, 4]


def test_run_timeout_covers_duration_plus_margin():
    (target,) = plan_campaign(campaign(duration_s=30), "cid").targets
    assert target.steps[1].timeout_s == 30 + RUN_TIMEOUT_MARGIN_S


def test_plan_carries_no_password():
    # Given a target whose password is referenced by env var / When planned and serialized
    text = plan_campaign(campaign(), "cid").model_dump_json()
    # Then only the reference travels
    assert "PGARENA_PW_A" in text and '"password"' not in text


def test_embedded_targets_are_refused_outside_the_local_runtime():
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    with pytest.raises(InvalidMatrix, match="embedded"):
        plan_campaign(parse_campaign(data), "cid")
