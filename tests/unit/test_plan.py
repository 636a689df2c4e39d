import json

import pytest

from pgarena.model.errors import InvalidMatrix
from pgarena.model.plan import RUN_TIMEOUT_MARGIN_S
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
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


def three_targets(repetitions, seed=None, workloads=1):
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    endpoint = data["targets"][0]["endpoint"]
    data["targets"] = [{"name": n, "provider": "p", "endpoint": endpoint} for n in ("x", "y", "z")]
    data["workloads"] = [{**data["workloads"][0], "name": f"w{i}"} for i in range(1, workloads + 1)]
    data["repetitions"] = repetitions
    if seed is not None:
        data["order_seed"] = seed
    return parse_campaign(data)


def test_repetition_r_of_every_target_runs_before_r_plus_1_of_any():
    # Given three targets, two workloads, three repetitions
    plan = plan_campaign(three_targets(3, workloads=2), "cid")
    # Then there is one pass per workload and repetition, each with every target
    passes = [(p.workload, p.repetition) for p in plan.run_order.passes]
    assert passes == [("w1", 1), ("w1", 2), ("w1", 3), ("w2", 1), ("w2", 2), ("w2", 3)]
    for phase, recorded in zip(plan.phases, plan.run_order.passes):
        assert sorted(t.name for t in phase.targets) == ["x", "y", "z"]
        assert [t.name for t in phase.targets] == recorded.targets
        assert {s.repetition for t in phase.targets for s in t.steps if s.kind == "run"} == {recorded.repetition}
    # And each target's own steps keep their order: a workload's load first, its repetitions, then the next workload
    (x,) = [t for t in plan.targets if t.name == "x"]
    assert [s.step_id for s in x.steps] == [
        "x/w1/init", "x/w1/c4-r1", "x/w1/c4-r2", "x/w1/c4-r3", "x/w2/init", "x/w2/c4-r1", "x/w2/c4-r2", "x/w2/c4-r3",
    ]  # fmt: skip
    assert [t.name for t in plan.targets] == ["x", "y", "z"]  # the matrix's order, whatever order they ran in


def test_the_order_is_shuffled_by_a_recorded_seed_and_reproducible():
    plans = [plan_campaign(three_targets(6, seed=7), "cid") for _ in range(2)]
    orders = [[p.targets for p in plan.run_order.passes] for plan in plans]
    # Then the same seed gives the same order, and the shuffle does not leave every pass in the matrix's order
    assert orders[0] == orders[1] and plans[0].run_order.seed == 7 and plans[0].run_order.seed_from == "matrix"
    assert any(order != ["x", "y", "z"] for order in orders[0])
    assert [[t.name for t in p.targets] for p in plans[0].phases] == orders[0]


def test_without_a_seed_the_campaign_id_seeds_the_order():
    a, b = plan_campaign(three_targets(4), "cid-1"), plan_campaign(three_targets(4), "cid-1")
    assert a.run_order == b.run_order and a.run_order.seed_from == "campaign_id"
    assert plan_campaign(three_targets(1), "cid-1").run_order.passes[0].repetition is None  # one pass: all of it
