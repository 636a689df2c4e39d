"""A worker site in another region, served locally as a deployed site stack would be: the site's parameter
in that region's SSM, WORKER_SITE_REGIONS set for Validate And Plan and launch_worker, and launch_worker's
RunTask sent to that region's ECS (the local endpoint, signed for the region). A target placed there runs
green with its workers launched through the site, its preflight too (a worker task there, which then serves
the phase's steps); a preflight refused on the site ends its target as the home function's refusal does; a
region the runtime does not serve is refused before any database is touched. Ctrl-C stops the far workers
too, through the site's region; a far worker that never starts fails its step at once, through the site's
own task-stopped rule."""

import _thread
import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

import pytest

from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.launch import container_environment
from pgarena.aws.leases import LeaseStore
from pgarena.aws.settings import STEP_VAR
from pgarena.campaign.leases import holder_id
from pgarena.local.endpoints import ProcessWorkers
from pgarena.local.runtime import CLUSTER_ARN, TABLE, LocalRuntime, region_site
from pgarena.local.task_env import own_user
from pgarena.model import layout
from pgarena.model.results import PreflightOrigin
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.history import count_history

pytestmark = pytest.mark.integration

FAR = "eu-west-1"
# Ctrl-C once the far run's uploaded output shows pgbench measuring (a loaded machine may take seconds).
WAIT_FOR_PROGRESS_S = 120
# Far past what the not-started test waits: a step failed within it failed through the stop, not a timeout.
HEARTBEAT_TIMEOUT_S = 300


def matrix(
    campaign: str, far_region: str | None, home: bool = True, far_settings: dict | None = None, duration_s: int = 2
) -> dict:
    far = {"name": "far", "provider": "embedded", "embedded": {"settings": {"fsync": "off", **(far_settings or {})}}}
    if far_region:
        far["placement"] = {"region": far_region}
    return {
        "campaign": campaign,
        "connections": {"monitor_interval_s": 1},
        "targets": [
            *([{"name": "home", "provider": "embedded", "embedded": {"settings": {"fsync": "off"}}}] if home else []),
            far,
        ],
        "workloads": [
            {
                "name": "sel",
                "tool": "pgbench",
                "init": {"scale": 1},
                "run": {"clients": 2, "jobs": 1, "duration_s": duration_s, "builtin": "select-only", "progress_s": 1},
            }
        ],
    }


def work_of(task: dict) -> dict:
    """What RunTask's overrides gave a task's worker: a step, or a target's preflight."""
    return json.loads(container_environment(task["overrides"])[STEP_VAR])


def target_of(task: dict) -> str:
    """The target a task's worker measured (or preflighted), from what RunTask's overrides carried."""
    return work_of(task)["target"]


def preflight_evidence(runtime: LocalRuntime, campaign_id: str, target: str) -> dict:
    """The target's preflight record in the bucket, beside its raw output."""
    return runtime.store.get_json(layout.evidence_key(campaign_id, target))


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    with LocalRuntime(tmp_path_factory.mktemp("site-regions-results"), site_regions=(FAR,)) as rt:
        yield rt


def test_a_target_in_a_served_region_runs_green_through_its_site(runtime):
    # Given one target at home and one placed in the region the runtime serves a site in
    # When the campaign runs
    campaign = parse_campaign(matrix("site-regions", FAR))
    run = runtime.run(campaign)

    # Then both succeed, and the far target is reported at its site
    assert run.status == "SUCCEEDED", run.error
    home, far = run.results.targets
    for target in (home, far):
        assert target.status == "succeeded", [target.error, *(w.error for w in target.workloads)]
        assert target.workloads[0].tps > 0
    assert far.site == FAR

    # And the far target's workers were launched in the site (its cluster, a task of its region), the home
    # target's at home
    by_target: dict[str, set[tuple[str, str]]] = {}
    for arn, task in runtime.workers.tasks.items():
        by_target.setdefault(target_of(task), set()).add((arn.split(":")[3], task["clusterArn"]))
    assert by_target == {
        "home": {("us-east-1", CLUSTER_ARN)},
        "far": {(FAR, region_site(FAR).cluster_arn)},
    }
    # one warm worker for the phase: its preflight there, then init and run
    (far_task,) = [task for task in runtime.workers.tasks.values() if target_of(task) == "far"]
    assert work_of(far_task)["kind"] == "preflight" and work_of(far_task)["site"] == FAR

    # And the far target's preflight ran on its site, in the worker that then ran its steps (as recorded in
    # its results and its preflight record), the home target's in the home function
    worker = far.workloads[0].worker
    assert far.server.preflight == PreflightOrigin(site=FAR, runner="worker", worker_id=worker.worker_id)
    assert worker.step_of_worker == 2  # the init, then the run: preflight is no step
    assert preflight_evidence(runtime, run.campaign_id, "far")["server"]["preflight"]["worker_id"] == worker.worker_id
    assert home.server.preflight == PreflightOrigin(site="us-east-1", runner="function")

    # And the execution's history holds the events validation counted, Preflight On Site's token task included
    assert run.history_events == count_history(campaign).events

    # And the lease the site's worker took in the results table was given back by the home release
    _, _, preflights = CampaignState(runtime.store).recorded(run.campaign_id)
    (on_site,) = [p for p in preflights.values() if p.server.preflight and p.server.preflight.runner == "worker"]
    assert on_site.lease_key
    leases = LeaseStore(runtime.store.dynamodb, TABLE)
    assert holder_id(run.campaign_id, "far") not in leases.holders(on_site.lease_key)


def test_a_preflight_refused_on_its_site_fails_its_target_as_at_home_and_loses_nothing_else(runtime):
    # Given a far server whose connection budget cannot hold the workload's clients, placed in the site's
    # region beside a home target, and the same server preflighted at home
    small = {"max_connections": "8"}
    on_site = runtime.run(parse_campaign(matrix("site-preflight-refused", FAR, far_settings=small)))
    at_home = runtime.run(parse_campaign(matrix("home-preflight-refused", None, home=False, far_settings=small)))

    # Then the campaign succeeds with the home target's results, and the far target failed on its site
    assert on_site.status == "SUCCEEDED", on_site.error
    home, far = on_site.results.targets
    assert home.status == "succeeded" and home.workloads[0].tps > 0, home.error
    assert far.status == "failed" and far.error.kind == "budget_refused", far.error
    record = preflight_evidence(runtime, on_site.campaign_id, "far")
    assert record["preflight"]["runner"] == "worker" and record["preflight"]["site"] == FAR
    assert record["error"]["kind"] == "budget_refused"

    # And it failed as the home function's preflight fails it: the same kind and message
    (refused_at_home,) = at_home.results.targets
    assert preflight_evidence(runtime, at_home.campaign_id, "far")["preflight"]["runner"] == "function"
    assert (refused_at_home.status, refused_at_home.error.kind) == ("failed", "budget_refused")
    assert far.error.message == refused_at_home.error.message

    # And no step of it started: its only task was its preflight
    far_tasks = [work_of(t) for t in runtime.workers.tasks.values() if work_of(t)["campaign_id"] == on_site.campaign_id]
    assert [w["kind"] for w in far_tasks if w["target"] == "far"] == ["preflight"]


def test_a_region_the_runtime_does_not_serve_is_refused_before_anything_starts(runtime):
    started = len(runtime.workers.tasks)

    # When a target names a region with no site here (alone: a home target would only add a server to start)
    run = runtime.run(parse_campaign(matrix("site-regions-unserved", "ap-south-1", home=False)))

    # Then Validate And Plan refuses it, naming the field, the region and the fix; no worker started
    text = f"{run.status} {run.error} {run.results.error if run.results else ''}"
    assert "placement.region" in text and "'ap-south-1'" in text and "pgarena:sites" in text, text
    assert len(runtime.workers.tasks) == started


def test_ctrl_c_stops_the_far_site_s_workers_through_its_region_and_loses_nothing_finished(runtime):
    # Given a campaign with a home target and one in the far site, its run long enough to be interrupted, the
    # far target's turn first (order_seed 1: a home target first would run its 30 s before the far one started)
    campaign = parse_campaign({**matrix("site-regions-cancel", FAR, duration_s=30), "order_seed": 1})
    assert [t.name for t in campaign.targets] == ["home", "far"]
    started = set(runtime.workers.tasks)
    interrupted: list[str] = []

    def interrupt_once_far_measures():
        deadline = time.monotonic() + WAIT_FOR_PROGRESS_S
        while time.monotonic() < deadline:
            keys = runtime.store.keys("site-regions-cancel-")  # this campaign's: the module's others measured far too
            log = next((k for k in keys if k.endswith("/raw/far/sel/c2-r1/pgbench.log")), None)
            if log and b"progress:" in runtime.s3.get_object(Bucket=runtime.store.bucket, Key=log)["Body"].read():
                break
            time.sleep(0.2)
        _thread.interrupt_main()  # what Ctrl-C does

    def on_event(event):
        if event.kind == "state" and event.text.startswith("Run Worker Task far/sel/") and not interrupted:
            interrupted.append(event.text)
            threading.Thread(target=interrupt_once_far_measures, daemon=True).start()

    # When Ctrl-C comes while the far target's run is measuring
    run = runtime.run(campaign, on_event)
    far_tasks = {arn: task for arn, task in runtime.workers.tasks.items() if arn not in started and target_of(task) == "far"}
    still_running = [arn for arn in far_tasks if runtime.workers.processes[arn].poll() is None]

    # Then the campaign is cancelled, and the far worker was stopped through its site's region (StopTask's
    # reason on its task there), its process gone before the cancel returned
    assert interrupted and run.status == "ABORTED" and run.results.status == "cancelled", run.error
    assert far_tasks and all(arn.split(":")[3] == FAR for arn in far_tasks)
    assert {task.get("stoppedReason") for task in far_tasks.values()} == {"stopped by the user"}
    assert still_running == []
    # and its run step ended cancelled with what pgbench printed kept, its finished load kept
    far = next(t for t in run.results.targets if t.name == "far")
    assert far.site == FAR
    assert far.loads[0].status == "succeeded" and far.loads[0].seconds > 0
    (stopped,) = far.workloads
    assert stopped.status == "failed" and stopped.error.kind == "cancelled"
    log = next(p for p in stopped.raw if p.endswith("pgbench.log"))
    progress = [line for line in (run.results_dir / log).read_text().splitlines() if line.startswith("progress:")]
    assert 1 <= len(progress) < 30
    # and the home target, whose turn had not come, is listed with its steps cancelled, never lost
    assert [p.targets for p in run.results.run_order.passes] == [["far", "home"]]
    home = next(t for t in run.results.targets if t.name == "home")
    steps = [*home.loads, *home.workloads]
    assert steps and all(s.error and s.error.kind == "cancelled" for s in steps)


class FarWorkersCannotStart:
    """The far site's workers cannot be started (their entrypoint is not there: ECS's CannotStartContainerError);
    home workers start as usual."""

    def __init__(self, workers, missing_entrypoint: Path) -> None:
        self.workers = workers
        self.missing = ProcessWorkers(own_user())
        self.missing.command = [str(missing_entrypoint)]

    def start(self, task_id: str, env: Mapping[str, str], log: IO[str]):
        return (self.missing if env["AWS_REGION"] == FAR else self.workers).start(task_id, env, log)

    def kill(self, task_id: str) -> None:
        self.workers.kill(task_id)

    def container(self, task_id: str) -> str | None:
        return self.workers.container(task_id)

    def never_ran(self, exit_code: int) -> bool:
        return self.workers.never_ran(exit_code)


# The campaign alone, well under the heartbeat timeout.
@pytest.mark.timeout(240, func_only=True)
def test_a_far_worker_that_never_starts_fails_its_step_at_once_through_the_site_s_rule(runtime, tmp_path, monkeypatch):
    # Given far workers that cannot start, and a heartbeat timeout of 300 s
    monkeypatch.setattr(runtime.workers, "workers", FarWorkersCannotStart(runtime.workers.workers, tmp_path / "no-entrypoint"))
    delivered = len(runtime.task_stopped_deliveries)

    # When the campaign runs
    run = runtime.run(parse_campaign({**matrix("site-regions-unstarted", FAR), "heartbeat_timeout_s": HEARTBEAT_TIMEOUT_S}))

    # Then the far target failed with worker_did_not_start, in the words of the stop, and the home one succeeded
    assert run.results is not None, run.error
    home, far = run.results.targets
    assert home.status == "succeeded", home.error
    assert far.status == "failed" and far.error is not None
    assert far.error.kind == "worker_did_not_start", far.error
    assert "CannotStartContainerError" in far.error.message and "no-entrypoint" in far.error.message
    # and the stop reached the far site's own rule (its region's task_stopped), which failed the step in the
    # home region with SendTaskFailure: no heartbeat timeout
    # (the home worker's stop, once it left its slot, goes to the home rule, which fails nothing)
    deliveries = runtime.task_stopped_deliveries[delivered:]
    assert [region for region, task in deliveries if task.split(":")[3] == FAR]
    assert all(region == task.split(":")[3] for region, task in deliveries)
    executions = runtime.sfn.list_executions(stateMachineArn=runtime.machine_arn)["executions"]
    (execution,) = [e for e in executions if e["name"] == run.campaign_id]
    history = runtime.sfn.get_execution_history(executionArn=execution["executionArn"], maxResults=1000)["events"]
    failed = [e["taskFailedEventDetails"] for e in history if e["type"] == "TaskFailed"]
    assert failed and {f["error"] for f in failed} == {"WorkerDidNotStart"}
    assert not [e for e in history if e["type"] == "TaskTimedOut"]
