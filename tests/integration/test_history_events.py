"""Issue 26.1: the history events validation counts are the events a real execution writes (moto's
GetExecutionHistory), state by state, step by step, shard by shard."""

import pytest

from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.history import count_history

pytestmark = pytest.mark.integration

# Two targets, two phases (repetitions), two client counts, two workers per run: every state of the
# campaign's definition runs, the Map states more than once, the shards' Map with several iterations.
MATRIX = {
    "campaign": "history",
    "repetitions": 2,
    "connections": {"monitor_interval_s": 1},
    "targets": [{"name": n, "provider": "embedded", "embedded": {"settings": {"fsync": "off"}}} for n in ("a", "b")],
    "workloads": [
        {
            "name": "tpcb",
            "tool": "pgbench",
            "init": {"scale": 1},
            "run": {"clients": [2, 4], "jobs": 1, "duration_s": 2, "progress_s": 1, "workers": 2},
        }
    ],
}


def test_the_counted_events_are_the_events_the_execution_wrote(tmp_path):
    # Given a campaign whose events validation counts from its shape
    campaign = parse_campaign(MATRIX)
    counted = count_history(campaign)
    assert counted.shards == 18 and counted.steps == 10

    # When it runs through the state machine
    run = run_local(campaign, tmp_path)

    # Then its execution's history holds exactly that many events
    assert run.status == "SUCCEEDED", run.error
    assert run.history_events == counted.events


def test_an_adaptive_campaigns_loop_writes_the_events_counted_for_its_decisions(tmp_path):
    # Given repetitions {min 2, max 3}: a decision after the first two phases, and after the third if it runs
    matrix = {
        **MATRIX,
        "campaign": "history-adaptive",
        "repetitions": {"min": 2, "max": 3},
        "workloads": [{**MATRIX["workloads"][0], "run": {"clients": 2, "jobs": 1, "duration_s": 2, "progress_s": 1}}],
    }

    # When it runs through the state machine
    run = run_local(parse_campaign(matrix), tmp_path)
    assert run.status == "SUCCEEDED", run.error

    # Then its history holds what validation counts for the repetitions it ran: its phases, each batch's
    # Run Phases In Order and Decision Due?, each decision's Decide More Phases and Another Phase?
    ran = run.results.adaptive.repetitions_run("tpcb")
    assert 2 <= ran <= 3 and len(run.results.adaptive.looks) == 1
    as_run = parse_campaign({**matrix, "repetitions": {"min": 2, "max": ran}})
    assert run.history_events == count_history(as_run).events
