"""Check Targets (issue 34.14): which targets are checked from home, and what fails the campaign."""

import json

import pytest

from pgarena.campaign import check_targets as check
from pgarena.model.errors import Authentication, ConnectionRefused
from pgarena.model.plan import PhaseRef
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from tests.conftest import FIXTURES


def plan_of(*names):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    data["targets"] = [{**data["targets"][0], "name": n} for n in names]
    return plan_campaign(parse_campaign(data), "cid")


def test_targets_preflighted_on_their_site_are_left_to_it():
    plan = plan_of("a", "b", "c")
    (phase,) = plan.phases
    far = [i for i, t in enumerate(phase.targets) if t.name == "b"]
    refs = [PhaseRef(phase=1, concurrency=1, last_target=2, on_site=far)]
    assert [t.name for t in check.home_targets(plan, refs)] == ["a", "c"]


class _Refusing:
    def __init__(self, error):
        self.error = error

    def __enter__(self):
        raise self.error

    def __exit__(self, *exc):
        return False


def test_a_refused_login_fails_the_campaign_naming_the_target(monkeypatch):
    target = plan_of("a").targets[0]
    refused = Authentication("password authentication failed; check environment variable PGARENA_PW_A")
    monkeypatch.setattr(check, "connect", lambda endpoint, application_name: _Refusing(refused))
    with pytest.raises(Authentication) as raised:
        check.check_target(target, "cid")
    assert "target a:" in str(raised.value) and "PGARENA_PW_A" in str(raised.value)


def test_a_refused_port_is_left_to_the_targets_preflight(monkeypatch):
    target = plan_of("a").targets[0]
    monkeypatch.setattr(check, "connect", lambda endpoint, application_name: _Refusing(ConnectionRefused("refused")))
    problem = check.check_target(target, "cid")
    assert problem is not None and problem.kind == "connection_refused"
