"""Issue 15.4: an embedded server that cannot start fails its own target, never the campaign."""

import json

import pytest

from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

WORKLOAD = {"name": "tpcb", "tool": "pgbench", "init": {"scale": 1}, "run": {"clients": 2, "duration_s": 2, "progress_s": 1}}


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory):
    # Given a healthy embedded target (one of its values ends in a backslash) and one whose setting
    # the server rejects
    matrix = {
        "campaign": "badstart",
        "targets": [
            {"name": "bad", "provider": "embedded", "embedded": {"settings": {"shared_buffers": "32MBB"}}},
            {"name": "good", "provider": "embedded", "embedded": {"settings": {"application_name": "ends\\"}}},
        ],
        "workloads": [WORKLOAD],
    }
    events = []
    # When the campaign runs
    run = run_local(parse_campaign(matrix), tmp_path_factory.mktemp("results"), on_event=events.append)
    return run, events


def test_the_unstartable_target_fails_with_the_servers_own_message(mixed_run):
    run, _ = mixed_run
    bad = next(t for t in run.results.targets if t.name == "bad")
    assert bad.status == "failed" and bad.error.kind == "embedded_start_failed"
    assert 'invalid value for parameter "shared_buffers": "32MBB"' in bad.error.message


def test_the_healthy_target_is_measured_and_ranked(mixed_run):
    run, _ = mixed_run
    assert run.status == "SUCCEEDED"
    good = next(t for t in run.results.targets if t.name == "good")
    assert good.status == "succeeded" and good.workloads[0].tps > 0
    assert [r.target for r in run.results.ranking] == ["good"]


def test_results_json_lists_both_targets_in_the_matrix_order(mixed_run):
    run, events = mixed_run
    written = json.loads((run.results_dir / "results.json").read_text())
    assert [t["name"] for t in written["targets"]] == ["bad", "good"]
    assert written["targets"][0]["error"]["kind"] == "embedded_start_failed"
    assert (run.results_dir / "report.html").exists()
    assert any("bad" in e.text and "did not start" in e.text for e in events)


def test_a_campaign_whose_only_server_cannot_start_still_writes_its_results(tmp_path):
    # Given a single embedded target naming a preload library that does not exist (allowed explicitly)
    matrix = {
        "campaign": "nostart",
        "targets": [
            {
                "name": "only",
                "provider": "embedded",
                "embedded": {"settings": {"shared_preload_libraries": "no_such_library"}, "allow_unsafe_settings": True},
            }
        ],
        "workloads": [WORKLOAD],
    }
    # When it runs
    run = run_local(parse_campaign(matrix), tmp_path)
    # Then the target is failed with the server's message, and results.json is there
    (only,) = run.results.targets
    assert only.status == "failed" and only.error.kind == "embedded_start_failed"
    assert "no_such_library" in only.error.message
    assert (run.results_dir / "results.json").exists()
