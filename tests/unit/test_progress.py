"""Progress in campaign terms: the step's target, workload, clients and repetition, its place among the
campaign's steps, the time left, its result on its own line, and an SLO search's probes."""

import json
import re
from io import StringIO

from rich.console import Console

from pgarena import cli
from pgarena.model.errors import ErrorInfo
from pgarena.model.results import StepSummary
from pgarena.planning.campaign import load_campaign, parse_campaign
from pgarena.planning.cost import endpoint_plan
from pgarena.planning.duration import local_step_s
from pgarena.remote.follow import WORKER_STATE, Event
from pgarena.report.progress import CampaignProgress, left_range_text, left_text, step_label, time_left_s
from tests.conftest import ROOT

DEMO, SLO = ROOT / "examples" / "local-demo.json", ROOT / "examples" / "slo.json"


def _summary(step_id, tps=710.2, status="succeeded", error=None, kind="run"):
    target, workload, *_ = step_id.split("/")
    return StepSummary(
        campaign_id="c", step_id=step_id, target=target, workload=workload, kind=kind, tool="pgbench", status=status,
        started_at="", finished_at="", wall_s=8.0, tps=tps if status == "succeeded" else None, clients=4,
        repetition=int(step_id[-1]) if kind == "run" else 1, error=error,
    )  # fmt: skip


def _fixed_demo():
    """The demo with 5 fixed repetitions (it runs {min 3, max 10}): 12 steps."""
    data = json.loads(DEMO.read_text())
    data["repetitions"] = 5
    return parse_campaign(data)


def _demo() -> CampaignProgress:
    return CampaignProgress(endpoint_plan(_fixed_demo()), local_step_s, 180.0)


def test_an_adaptive_campaign_says_its_phase_of_up_to_max():
    # Given the demo as it is, repetitions {min 3, max 10}: 22 steps planned to its maximum
    progress = CampaignProgress(endpoint_plan(load_campaign(DEMO)), local_step_s, 400.0)
    progress.started("durable/tpcb/init", 5.0)
    # When its fourth repetition starts / Then the line says the phase and the steps as "of up to"
    line = progress.started("durable/tpcb/c4-r4", 10.0)
    assert line.startswith("target durable · tpcb · 4 clients · phase 4 of up to 10 — step 2 of up to 22")


def test_an_adaptive_campaigns_time_left_runs_from_the_phases_begun_to_max():
    # Given the demo, repetitions {min 3, max 10}, its two loads done at the pace planned
    progress = CampaignProgress(endpoint_plan(load_campaign(DEMO)), local_step_s, 400.0)
    loads = ("durable/tpcb/init", "tuned/tpcb/init")
    for step in loads:
        progress.started(step, 0.0)
    progress.done.update(loads)
    # When the time left is asked
    line = progress._left(sum(progress.planned_s[s] for s in loads))
    # Then it runs from the three phases always run to all ten
    always = sum(v for i, v in progress.planned_s.items() if i.endswith(("-r1", "-r2", "-r3")))
    every = sum(v for i, v in progress.planned_s.items() if i not in loads)
    assert always < every and line == left_range_text(always, every)
    assert re.fullmatch(r"~\d+( s| min)?-\d+ (s|min) left", line), line


def test_left_range_text_says_one_figure_when_both_ends_read_the_same():
    assert left_range_text(60.0, 400.0) == "~60 s-7 min left"
    assert left_range_text(100.0, 400.0) == "~2-7 min left"
    assert left_range_text(3.0, 100.0) == "~5 s-2 min left"
    assert left_range_text(40.0, 60.0) == "~40-60 s left"
    assert left_range_text(40.0, 41.0) == "~40 s left"
    assert left_range_text(None, 41.0) == "~40 s left"


def test_a_run_reads_as_target_workload_clients_and_repetition():
    step = next(s for t in endpoint_plan(_fixed_demo()).targets for s in t.steps if s.step_id == "tuned/tpcb/c4-r2")
    assert step_label(step, 5) == "target tuned · tpcb · 4 clients · repetition 2/5"


def test_one_repetition_is_not_numbered_and_a_load_says_so():
    plan = endpoint_plan(_fixed_demo())
    steps = {s.step_id: s for t in plan.targets for s in t.steps}
    assert step_label(steps["durable/tpcb/c4-r1"], 1) == "target durable · tpcb · 4 clients"
    assert step_label(steps["durable/tpcb/init"], 5) == "target durable · tpcb · load"


def test_time_left_follows_the_measured_pace():
    # Given half the planned work done in twice its planned time (a slow machine)
    assert time_left_s(elapsed_s=100.0, done_s=50.0, total_s=100.0, planned_wall_s=120.0) == 100.0
    # Before any step finished: the plan's wall time minus what has passed
    assert time_left_s(elapsed_s=20.0, done_s=0.0, total_s=100.0, planned_wall_s=120.0) == 100.0
    assert time_left_s(elapsed_s=20.0, done_s=0.0, total_s=100.0, planned_wall_s=None) is None


def test_time_left_reads_in_minutes_or_seconds():
    assert left_text(185) == "~3 min left"
    assert left_text(42) == "~40 s left"
    assert left_text(-3) == "~5 s left"
    assert left_text(None) == ""


def test_the_running_step_says_its_place_and_the_time_left():
    progress = _demo()
    line = progress.started("durable/tpcb/init", 5.0)
    assert line == "target durable · tpcb · load — step 1 of 12, ~3 min left"
    second = progress.started("durable/tpcb/c4-r1", 10.0)
    assert second.startswith("target durable · tpcb · 4 clients · repetition 1/5 — step 2 of 12, ")


def test_a_finished_step_has_its_result_on_its_own_line():
    progress = _demo()
    progress.started("durable/tpcb/init", 5.0)
    progress.started("durable/tpcb/c4-r1", 10.0)
    # When the run's summary arrives after the next step started: the line still names the run, with its number
    line = progress.finished(_summary("durable/tpcb/c4-r1"), 24.0)
    assert line.startswith("target durable · tpcb · 4 clients · repetition 1/5 — step 2 of 12: 710.2 tps (~")
    assert line.endswith(" left)")


def test_a_failed_step_shows_its_error_and_the_last_step_no_time_left():
    progress = _demo()
    error = ErrorInfo(kind="tool_failed", message="pgbench exited 1")
    line = progress.finished(_summary("tuned/tpcb/c4-r3", status="failed", error=error), 50.0)
    assert line.endswith("— step 1 of 12: tool_failed: pgbench exited 1 (~" + line.split("(~")[1])
    for t in progress.plan.targets:
        for s in t.steps:
            last = progress.finished(_summary(s.step_id, kind=s.kind), 170.0)
    assert "left" not in last


def test_an_slo_search_counts_its_probes():
    progress = CampaignProgress(endpoint_plan(load_campaign(SLO)), local_step_s, 300.0)
    step_id = "durable/tpcb/c4-r1"
    assert "SLO search: ceiling run, then up to 5 probes" in progress.started(step_id, 10.0)
    assert progress.probing(step_id, 3, 40.0).endswith("SLO search: 3 of up to 5 probes done")


def test_shards_count_as_their_step():
    progress = _demo()
    progress.started("durable/tpcb/c4-r1/s0", 1.0)
    assert "step 1 of 12" in progress.started("durable/tpcb/c4-r1/s1", 1.0)


def _printed(printer, events):
    out = Console(file=StringIO(), width=300, color_system=None)
    cli.console, saved = out, cli.console
    try:
        for event in events:
            printer(event)
    finally:
        cli.console = saved
    return out.file.getvalue()


def test_state_names_only_with_verbose():
    events = [
        Event(1.0, "state", "List Shards durable", state="List Shards", subject="durable"),
        Event(1.1, "state", f"{WORKER_STATE} durable/tpcb/init", state=WORKER_STATE, subject="durable/tpcb/init"),
        Event(3.0, "step", "durable/tpcb/init", _summary("durable/tpcb/init", tps=None, kind="init")),
        Event(3.5, "state", "Target Failed b: server did not start"),
    ]
    quiet = _printed(cli.ProgressPrinter(_demo(), verbose=False), events)
    assert "List Shards" not in quiet and WORKER_STATE not in quiet
    assert "target durable · tpcb · load — step 1 of 12" in quiet
    assert "Target Failed b: server did not start" in quiet  # the runtime's own news is always shown
    loud = _printed(cli.ProgressPrinter(_demo(), verbose=True), events)
    assert "List Shards durable" in loud and f"{WORKER_STATE} durable/tpcb/init" in loud


def test_the_pace_is_measured_from_the_first_step_not_the_servers_start():
    # Given 30 s of servers starting, then half the planned work done in as long as planned
    assert time_left_s(elapsed_s=80.0, done_s=50.0, total_s=100.0, planned_wall_s=None, steps_from_s=30.0) == 50.0


def test_the_status_line_follows_the_running_step_and_its_probes():
    # Given a terminal's status line and an SLO campaign's progress
    terminal = Console(file=StringIO(), force_terminal=True, width=200)
    progress = CampaignProgress(endpoint_plan(load_campaign(SLO)), local_step_s, 300.0)
    with terminal.status("running") as status:
        printer = cli.ProgressPrinter(progress, verbose=False, status=status)
        # When the search's worker starts, then reaches its third probe
        printer(Event(10.0, "state", f"{WORKER_STATE} durable/tpcb/c4-r1", state=WORKER_STATE, subject="durable/tpcb/c4-r1"))
        started = str(status.status)
        printer(Event(40.0, "probe", "durable/tpcb/c4-r1", probes=3))
        probing = str(status.status)
    # Then the status line names the step, then counts its probes
    assert "target durable · tpcb · 4 clients — step 1 of" in started and "up to 5 probes" in started
    assert probing.endswith("SLO search: 3 of up to 5 probes done (Ctrl-C cancels)")
