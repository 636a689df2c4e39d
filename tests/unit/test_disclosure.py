"""Full disclosure: the worker's facts, the far-load-generator flag, settings that differ between campaigns."""

import pytest

from pgarena.analysis.aggregate import median_rtt_ms
from pgarena.analysis.compare import setting_changes
from pgarena.analysis.metrics import findings
from pgarena.model.results import CampaignResults, ServerSetting, TargetResult, WorkerFacts
from pgarena.worker.facts import cpu_model, ecs_task, memory_bytes, worker_facts
from tests.conftest import FIXTURES


def test_cpu_model_on_x86_and_on_arm():
    assert cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 7R13 Processor\n") == "AMD EPYC 7R13 Processor"
    assert cpu_model("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd40\n") == "arm implementer 0x41 part 0xd40"
    assert cpu_model("") is None


def test_memory_is_the_container_limit_when_there_is_one():
    meminfo = "MemTotal:       16318912 kB\nMemFree: 1 kB\n"
    assert memory_bytes(meminfo, "2147483648\n") == 2147483648
    assert memory_bytes(meminfo, "max\n") == 16318912 * 1024
    assert memory_bytes("", None) is None


def test_ecs_task_metadata_gives_the_zone_and_task_size():
    # Given the task metadata v4 /task answer of a Fargate task (fields as AWS documents them)
    task = ecs_task(
        {
            "Cluster": "pgarena",
            "TaskARN": "arn:aws:ecs:eu-west-1:123456789012:task/pgarena/abc",
            "AvailabilityZone": "eu-west-1b",
            "LaunchType": "FARGATE",
            "Limits": {"CPU": 0.5, "Memory": 1024},
        }
    )
    assert (task.availability_zone, task.cpu, task.memory_mib, task.launch_type) == ("eu-west-1b", 0.5, 1024, "FARGATE")


def test_worker_facts_outside_ecs_skip_the_task_and_note_an_unreachable_database(monkeypatch):
    # Given no ECS metadata and a database nobody listens on
    from pgarena.local.embedded import free_port
    from pgarena.model.matrix import Endpoint

    monkeypatch.delenv("ECS_CONTAINER_METADATA_URI_V4", raising=False)
    facts = worker_facts(Endpoint(host="127.0.0.1", port=free_port(), user="postgres", sslmode="disable"), {"pgbench": None})
    # Then the machine's facts are there, the task is absent, and the missing round trip is explained
    assert facts.task is None and facts.cpu_count >= 1 and facts.tools["python"]
    assert facts.rtt_ms is None and facts.rtt_samples == 0 and facts.notes[0].startswith("round trip not measured")


def test_the_target_round_trip_is_the_median_of_its_workers():
    workers = [WorkerFacts(rtt_ms=v) for v in (0.2, 0.3, 5.0)] + [WorkerFacts(), None]
    assert median_rtt_ms(workers) == 0.3 and median_rtt_ms([None]) is None


@pytest.mark.parametrize(("rtt", "flagged"), [(0.4, False), (2.0, False), (2.5, True)])
def test_a_target_far_from_its_load_generator_is_flagged(rtt, flagged):
    target = TargetResult(name="a", provider="p", status="succeeded", rtt_ms=rtt)
    kinds = [f.kind for f in findings(target)]
    assert ("far_load_generator" in kinds) is flagged
    if flagged:
        assert "load generator not next to the database" in findings(target)[0].message


def _results(campaign_id, settings):
    # A recorded campaign (the week1 fixture) whose first target's preflight read these settings
    results = CampaignResults.model_validate_json((FIXTURES / "results" / "week1" / "results.json").read_text())
    first = results.targets[0]
    server = first.server.model_copy(update={"settings": settings})
    return results.model_copy(update={"campaign_id": campaign_id, "targets": [first.model_copy(update={"server": server})]})


def test_compare_lists_settings_that_differ_per_target():
    a = _results("A", [ServerSetting(name="shared_buffers", setting="16384", unit="8kB", source="configuration file")])
    b = _results(
        "B",
        [
            ServerSetting(name="shared_buffers", setting="2048", unit="8kB", source="configuration file"),
            ServerSetting(name="fsync", setting="off", source="configuration file"),
        ],
    )
    name = a.targets[0].name
    changes = [(c.target, c.name, c.a, c.b) for c in setting_changes(a, b)]
    assert changes == [(name, "fsync", None, "off"), (name, "shared_buffers", "128MB", "16MB")]
    assert setting_changes(a, a) == []
