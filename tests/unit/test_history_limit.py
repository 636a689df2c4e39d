"""Issue 26.1 and 26.9: what Step Functions' history holds and the heartbeat's relation to the step timeout,
refused at validation naming the limit and the fix."""

import copy
import json

import pytest

from pgarena.model.matrix import Campaign
from pgarena.model.matrix_errors import MatrixError
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.history import HISTORY_LIMIT_EVENTS, SHARD_EVENTS, batches, count_history
from tests.conftest import FIXTURES

MINIMAL = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())


def study(workers: int, targets: int = 8, clients: int = 8, repetitions: int = 3) -> dict:
    """targets x client counts x repetitions, each run on `workers` workers: the size of a real study."""
    data = copy.deepcopy(MINIMAL)
    target = data["targets"][0]
    data["targets"] = [{**copy.deepcopy(target), "name": f"t{i}"} for i in range(targets)]
    data["repetitions"] = repetitions
    run = data["workloads"][0]["run"]
    run.update(clients=[64 * (i + 1) for i in range(clients)], jobs=1, workers=workers)
    return data


def problems(data) -> dict[str, str]:
    with pytest.raises(MatrixError) as caught:
        parse_campaign(data)
    return {p.path: p.message for p in caught.value.problems}


@pytest.mark.parametrize(("workers", "events"), [(1, 3_806), (10, 17_630), (13, 22_238)])
def test_8_x_8_x_3_events_grow_by_eight_per_worker_task(workers, events):
    # Given 8 targets x 8 client counts x 3 repetitions on `workers` workers per run
    campaign = parse_campaign(study(workers))
    # Then the history counts its 192 runs' worker tasks at 8 events each, over a fixed 3,806 at one worker
    count = count_history(campaign)
    assert count.events == events
    assert count.events == 3_806 + 192 * (workers - 1) * SHARD_EVENTS


@pytest.mark.parametrize("workers", [16, 40])
def test_8_x_8_x_3_on_16_workers_is_refused_naming_the_history_limit(workers):
    # Given the study on 16 (or 40) workers per run: past 25,000 events, it would fail mid-campaign
    assert count_history(Campaign.model_validate(study(workers))).events > HISTORY_LIMIT_EVENTS
    # When validated / Then the refusal names the history limit, the workers field and the most that fits
    message = problems(study(workers))["$.workloads[0].run.workers"]
    assert "Step Functions history" in message and "25,000" in message
    assert "at most 13 workers per run for workload tpcb" in message and "split the campaign" in message


def test_the_largest_worker_count_the_refusal_names_is_accepted():
    assert count_history(parse_campaign(study(13))).events <= HISTORY_LIMIT_EVENTS


def test_a_history_past_the_limit_without_workers_names_the_campaign_and_splitting():
    # Given 20 targets x 64 client counts x 3 repetitions on one worker each: no worker to take away
    message = problems(study(1, targets=20, clients=64))["$"]
    assert "Step Functions history" in message and "at most" not in message and "split the campaign" in message


def test_a_heartbeat_timeout_at_or_past_the_shortest_step_timeout_is_refused():
    # Given a 10 s run (its step times out at 310 s) and a heartbeat timeout of 310 s
    data = copy.deepcopy(MINIMAL)
    data["targets"] = data["targets"][:1]
    data["heartbeat_timeout_s"] = 310
    # When validated / Then the refusal names the field, the step's timeout and the bound
    message = problems(data)["$.heartbeat_timeout_s"]
    assert "310 s" in message and "workload tpcb's run" in message and "below 310" in message
    # And one second less is accepted
    data["heartbeat_timeout_s"] = 309
    assert parse_campaign(data).heartbeat_timeout_s == 309


def test_an_adaptive_campaign_is_counted_at_its_maximum_with_its_decisions():
    # Given the study with 12 fixed repetitions, and with repetitions {min 3, max 12}
    fixed, adaptive = study(1, repetitions=12), study(1)
    adaptive["repetitions"] = {"min": 3, "max": 12}

    # When counted
    at_max, fixed12 = count_history(Campaign.model_validate(adaptive)), count_history(Campaign.model_validate(fixed))

    # Then it runs the 12 repetitions' phases, plus its loop: 10 decisions (after phases 1-3, then after each
    # of 4..12), each Decide More Phases (5 events) and Another Phase? (2), and 9 more batches, each Run
    # Phases In Order (4) and Decision Due? (2)
    assert at_max.phases == fixed12.phases == 12
    assert batches(Campaign.model_validate(adaptive)) == 10
    assert at_max.events == fixed12.events + 10 * (5 + 2) + 9 * (4 + 2)


def test_an_adaptive_campaign_past_the_history_limit_at_its_maximum_is_refused():
    # Given repetitions {min 3, max 12} on 8 targets x 8 client counts x 4 workers: within the limit at 3, past it at 12
    data = study(4)
    data["repetitions"] = {"min": 3, "max": 12}
    low = copy.deepcopy(data)
    low["repetitions"] = 3
    assert count_history(Campaign.model_validate(low)).events <= HISTORY_LIMIT_EVENTS

    # When validated / Then it is refused: every phase it may run must fit
    assert "Step Functions history" in problems(data)["$.workloads[0].run.workers"]
