"""Issue 26.1: the history events validation counts are the events a real execution writes (moto's
GetExecutionHistory), state by state, step by step, shard by shard. An adaptive campaign's loop (Decide More
Phases) is counted on tests/integration/test_adaptive_repetitions.py's two campaigns, which run it already."""

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
