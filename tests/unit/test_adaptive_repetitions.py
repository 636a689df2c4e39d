"""Repetitions until decided (issue 35): the matrix's {min, max}, the plan to max, the first batch and the
decision's next phases."""

import copy
import json

import pytest

from pgarena.campaign import decide as decide_module
from pgarena.model import layout
from pgarena.model.matrix_errors import MatrixError
from pgarena.model.plan import PlanRef
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.planner import plan_campaign
from tests.conftest import FIXTURES

MINIMAL = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
SYSBENCH = {
    "name": "oltp",
    "tool": "sysbench",
    "prepare": {"tables": 1, "table_size": 1000},
    "run": {"threads": 2, "duration_s": 5},
}


def matrix(repetitions, workloads=None) -> dict:
    data = copy.deepcopy(MINIMAL)
    data["targets"] = [*data["targets"][:1], {**copy.deepcopy(data["targets"][0]), "name": "c"}]
    data["repetitions"] = repetitions
    if workloads is not None:
        data["workloads"] = workloads
    return data


def problems(data) -> dict[str, str]:
    with pytest.raises(MatrixError) as caught:
        parse_campaign(data)
    return {p.path: p.message for p in caught.value.problems}


def test_a_range_is_accepted_and_a_number_stays_fixed():
    adaptive = parse_campaign(matrix({"min": 3, "max": 12}))
    assert (adaptive.min_repetitions, adaptive.max_repetitions) == (3, 12)
    fixed = parse_campaign(matrix(5))
    assert (fixed.min_repetitions, fixed.max_repetitions) == (None, 5)


@pytest.mark.parametrize(
    ("repetitions", "path", "words"),
    [
        ({"min": 5, "max": 3}, "$.repetitions", "min (5) is above max (3): lower min or raise max"),
        ({"min": 1, "max": 12}, "$.repetitions.min", "greater than or equal to 2"),
        ({"min": 3, "max": 101}, "$.repetitions.max", "less than or equal to 100"),
        ({"min": 3}, "$.repetitions.max", "required"),
        ({"min": 3, "max": 6, "most": 9}, "$.repetitions.most", "unknown field"),
        (0, "$.repetitions", "greater than or equal to 1"),
    ],
)
def test_a_bad_range_is_refused_naming_the_field_and_the_fix(repetitions, path, words):
    assert words in problems(matrix(repetitions))[path]


def test_a_range_in_a_consolidation_sweep_is_refused():
    data = matrix({"min": 3, "max": 6})
    data["scenario"] = {"consolidation": {"steps": [1, 2]}}
    assert "give repetitions as a number" in problems(data)["$"]


def _plan(data, campaign_id="c1"):
    for target in data["targets"]:
        target.pop("embedded", None)
        target.setdefault("endpoint", MINIMAL["targets"][0]["endpoint"])
    return plan_campaign(parse_campaign(data), campaign_id)


def test_every_phase_to_max_is_planned_and_validate_answers_the_first_min():
    plan = _plan(matrix({"min": 3, "max": 6}))
    assert [p.phase for p in plan.phases] == [1, 2, 3, 4, 5, 6] and plan.repetitions == 6 and plan.min_repetitions == 3
    ref = PlanRef.of(plan)
    assert [p.phase for p in ref.phases] == [1, 2, 3] and ref.through == 3 and ref.adaptive
    # each repetition past min is a batch of its own, followed by a decision
    assert plan.batches() == [[1, 2, 3], [4], [5], [6]]
    # a fixed plan answers every phase, with no decision
    fixed = PlanRef.of(_plan(matrix(6)))
    assert [p.phase for p in fixed.phases] == [1, 2, 3, 4, 5, 6] and not fixed.adaptive


def test_a_cleanup_is_a_phase_of_its_own_after_the_workloads_repetitions():
    # Given sysbench (which drops its tables after the last repetition) then pgbench, {min 2, max 3}
    plan = _plan(matrix({"min": 2, "max": 3}, [SYSBENCH, MINIMAL["workloads"][0]]))
    passes = [(p.workload, p.repetition, p.cleanup) for p in plan.run_order.passes]
    assert passes == [
        ("oltp", 1, False),
        ("oltp", 2, False),
        ("oltp", 3, False),
        ("oltp", None, True),
        ("tpcb", 1, False),
        ("tpcb", 2, False),
        ("tpcb", 3, False),
    ]
    cleanup = plan.phases[3].targets[0].steps
    assert [s.kind for s in cleanup] == ["cleanup"]
    assert all(s.kind != "cleanup" for p in plan.phases[:3] for t in p.targets for s in t.steps)
    # the cleanup needs no decision: it runs with the next workload's first phases
    assert plan.batches() == [[1, 2], [3], [4, 5, 6], [7]]


def test_each_repetition_loads_the_data_set_again():
    workload = copy.deepcopy(MINIMAL["workloads"][0])
    workload["init"]["each_repetition"] = True
    plan = _plan(matrix(3, [workload]))
    steps = [s.step_id for p in plan.phases for t in p.targets for s in t.steps if t.name == "a"]
    assert steps == ["a/tpcb/init", "a/tpcb/c4-r1", "a/tpcb/init-r2", "a/tpcb/c4-r2", "a/tpcb/init-r3", "a/tpcb/c4-r3"]


class _Store:
    """The Store port's objects in a dict: what decide reads and writes."""

    def __init__(self):
        self.objects: dict[str, dict] = {}

    def keys(self, prefix):
        return [k for k in self.objects if k.startswith(prefix)]

    def get_json(self, key):
        return self.objects[key]

    def put_json(self, key, data):
        self.objects[key] = json.loads(json.dumps(data))
        return key


class _Records:
    def __init__(self, plan):
        self._plan = plan

    def plan(self, campaign_id):
        return self._plan


@pytest.fixture
def decisions(monkeypatch):
    """decide() with the look's answer given (the results so far are an integration test's)."""
    answers: list[bool] = []
    looks: list[tuple[int, int]] = []

    def needs_more(results, look, max_looks, margin_pct):
        looks.append((look, max_looks))
        return answers.pop(0)

    monkeypatch.setattr(decide_module, "needs_more", needs_more)
    monkeypatch.setattr(decide_module, "results_so_far", lambda *args: None)
    return answers, looks


def test_an_undecided_pair_runs_the_next_repetition(decisions):
    answers, looks = decisions
    plan, store = _plan(matrix({"min": 3, "max": 6})), _Store()
    answers.append(True)
    answer = decide_module.decide("c1", 3, "", store, _Records(plan))
    assert answer["more"] is True and [p["phase"] for p in answer["phases"]] == [4] and answer["through"] == 4
    assert looks == [(1, 4)]  # the first of up to 4 looks (3 to 6 runs)


def test_a_decided_verdict_leaves_the_remaining_phases_not_needed(decisions):
    answers, _ = decisions
    plan, store = _plan(matrix({"min": 3, "max": 6})), _Store()
    answers += [True, False]
    decide_module.decide("c1", 3, "", store, _Records(plan))
    answer = decide_module.decide("c1", 4, "", store, _Records(plan))
    assert answer["more"] is False and answer["phases"] == []
    kept = store.objects[layout.decisions_key("c1")]
    assert kept["not_needed"] == [5, 6] and [look["more"] for look in kept["looks"]] == [True, False]
    # Retried (the state's Retry), the decision is read back, not taken again
    again = decide_module.decide("c1", 4, "", store, _Records(plan))
    assert again == answer and not answers
    # and Aggregate And Rank sees the plan as it ran
    ran, adaptive = decide_module.decided(plan, store)
    assert [p.phase for p in ran.phases] == [1, 2, 3, 4] and [p.phase for p in ran.run_order.passes] == [1, 2, 3, 4]
    assert adaptive.repetitions_run("tpcb") == 4 and ran.repetitions == 4


def test_a_decided_workload_goes_on_with_the_next_one(decisions):
    answers, looks = decisions
    plan, store = _plan(matrix({"min": 2, "max": 3}, [SYSBENCH, MINIMAL["workloads"][0]])), _Store()
    answers.append(False)
    answer = decide_module.decide("c1", 2, "", store, _Records(plan))
    # oltp's third repetition is not needed; its cleanup and tpcb's first two repetitions run next
    assert [p["phase"] for p in answer["phases"]] == [4, 5, 6] and answer["more"] is True
    assert store.objects[layout.decisions_key("c1")]["not_needed"] == [3]
    # at max the last phase ends the campaign without a look
    answer = decide_module.decide("c1", 7, "", store, _Records(plan))
    assert answer["more"] is False and looks == [(1, 2)]  # the first of up to 2 looks (2 to 3 runs)
