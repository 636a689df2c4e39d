"""AWS's limits as the strict local runtime applies them (pgarena.local.limits)."""

import json

import pytest

from pgarena.local import limits
from pgarena.local.runtime import ASL_PATH
from pgarena.model.matrix_errors import MatrixError
from pgarena.planning.campaign import parse_campaign


def sharded(workers: int) -> dict:
    return {
        "campaign": "wide",
        "targets": [
            {"name": "pg", "provider": "self-hosted", "endpoint": {"host": "db.example", "user": "u", "sslmode": "disable"}}
        ],
        "workloads": [
            {
                "name": "tpcb",
                "tool": "pgbench",
                "run": {"clients": 64, "duration_s": 10, "percentiles": True, "workers": workers},
            }
        ],
    }


def test_a_state_payload_past_256_kib_is_named_with_its_state():
    # Given a history whose second state returned 256 KiB and one byte
    history = [
        {"stateEnteredEventDetails": {"name": "Small", "input": "{}"}},
        {"stateExitedEventDetails": {"name": "Big", "output": "x" * (limits.MAX_PAYLOAD_BYTES + 1)}},
        {"stateEnteredEventDetails": {"name": "Exactly", "input": "é" * (limits.MAX_PAYLOAD_BYTES // 2)}},
    ]

    # When checking it / Then only the state past the limit is reported, in UTF-8 bytes
    (violation,) = limits.oversized_states(history)
    assert (violation.state, violation.field, violation.size_bytes) == ("Big", "output", limits.MAX_PAYLOAD_BYTES + 1)
    assert "'Big' returned a result of 262,145 bytes" in violation.cause


def test_unlimited_inline_map_concurrency_runs_as_40():
    assert [limits.effective_concurrency(n) for n in (0, 1, 40, 41, 256)] == [40, 1, 40, 40, 40]


def test_the_campaign_definition_is_capped_where_aws_caps_it():
    # Given the campaign ASL, whose shard Map has MaxConcurrency 0 (unlimited)
    asl = json.loads(ASL_PATH.read_text())

    # When capping it as AWS runs it
    capped, notes = limits.capped_definition(asl)

    # Then the shard Map runs at most 40 at once, the one-at-a-time Maps are left alone, and it says so
    maps = dict(limits._inline_maps(capped["States"]))
    assert maps[limits.SHARDS_MAP]["MaxConcurrency"] == 40
    assert maps["Run Steps In Order"]["MaxConcurrency"] == 1
    assert notes == [f"{limits.SHARDS_MAP}: MaxConcurrency 0 runs as 40 in AWS"]
    assert dict(limits._inline_maps(asl["States"]))[limits.SHARDS_MAP]["MaxConcurrency"] == 0  # the input is untouched


def test_more_workers_than_an_inline_map_starts_at_once_are_refused_with_the_reason():
    # Given matrices with 40 and 41 workers started together, and one whose per-worker cap makes 64
    capped = sharded(1)
    capped["workloads"][0]["run"] |= {"clients": 640, "max_clients_per_worker": 10}

    # When validating them / Then 40 passes; 41 and 64 are refused, naming the field, the limit and why
    assert parse_campaign(sharded(40)).workloads[0].run.workers == 40
    with pytest.raises(MatrixError) as past:
        parse_campaign(sharded(41))
    with pytest.raises(MatrixError) as implied:
        parse_campaign(capped)
    assert "$.workloads[0].run.workers" in str(past.value) and "at most 40 workers" in str(past.value)
    assert "lower workers to 40 or fewer" in str(past.value)
    assert "$.workloads[0].run.max_clients_per_worker" in str(implied.value) and "64 workers" in str(implied.value)
    for error in (past.value, implied.value):
        assert "starts at most 40 iterations of an inline Map at once" in str(error)


def test_a_consolidation_step_past_40_targets_at_once_is_refused():
    matrix = sharded(1)
    matrix["targets"] = [{**matrix["targets"][0], "name": f"pg{i}"} for i in range(41)]
    matrix["scenario"] = {"consolidation": {"steps": [1, 41]}}
    with pytest.raises(MatrixError, match="at most 40 targets at once"):
        parse_campaign(matrix)


def test_a_data_limit_failure_names_the_state_left_unfinished():
    # Given a history whose Task failed on its result's size (moto names the service, not the state)
    history = [
        {"stateEnteredEventDetails": {"name": "Validate And Plan", "input": "{}"}},
        {"stateExitedEventDetails": {"name": "Validate And Plan", "output": "{}"}},
        {"stateEnteredEventDetails": {"name": "Check Cost Cap", "input": "{}"}},
        {"taskFailedEventDetails": {"error": limits.DATA_LIMIT_ERROR}},
    ]

    # When describing the failure / Then the state that never exited is named
    assert limits.unfinished_state_cause(history).startswith("The state 'Check Cost Cap' returned a result over")
