"""`pgarena estimate` says how long locally and in AWS, flags embedded targets, and what the cap is checked against."""

import json

from typer.testing import CliRunner

from pgarena.cli import app
from pgarena.planning.campaign import load_campaign
from pgarena.planning.cost import endpoint_plan, estimate_campaign
from pgarena.planning.duration import LOCAL_STEP_OVERHEAD_S, local_step_s, local_wall_s
from pgarena.planning.estimate_text import cap_lines, duration_line, duration_text, embedded_note
from tests.conftest import ROOT

DEMO = ROOT / "examples" / "local-demo.json"
AWS = ROOT / "examples" / "four-provider-aws.json"


def test_durations_read_in_seconds_then_minutes():
    assert duration_text(45) == "about 45 s"
    assert duration_text(23 * 60) == "about 23 min"


def test_the_duration_line_gives_both_places():
    line = duration_line(6 * 60, 23 * 60, 12)
    assert "about 6 min with `run --local`" in line and "about 23 min in AWS" in line and "12 worker tasks" in line


def test_local_is_shorter_than_aws_for_the_demo():
    # Given the demo (22 short steps at its maximum of 10 repetitions): locally no Fargate start-up per task
    campaign = load_campaign(DEMO)
    local = local_wall_s(endpoint_plan(campaign), 2)
    aws = estimate_campaign(campaign, 1024, 2048).wall_s
    # Then the local estimate, at the maximum, is a few minutes (171 s measured at 5 fixed repetitions on the
    # 2-core machine) and well under AWS's
    assert 240 < local < 480
    assert local < aws / 2


def test_a_run_step_takes_its_duration_and_the_overhead_locally():
    run = next(s for t in endpoint_plan(load_campaign(DEMO)).targets for s in t.steps if s.kind == "run")
    assert local_step_s(run) == LOCAL_STEP_OVERHEAD_S + 8  # the demo's duration_s


def test_embedded_targets_are_flagged_and_endpoints_are_not():
    note = embedded_note(["durable", "tuned"])
    assert note is not None and "durable, tuned" in note and "cannot run in AWS" in note
    assert embedded_note([]) is None


def test_within_the_cap_says_what_was_compared_and_the_worst_case():
    lines, refused = cap_lines(26.83, 716.13, 40.0)
    assert not refused
    assert "compares the cap with the estimate ($26.83)" in lines[0]
    assert "worst case $716.13" in lines[1] and "timeouts bound" in lines[1]


def test_a_worst_case_under_the_cap_needs_no_second_line():
    lines, refused = cap_lines(1.0, 5.0, 40.0)
    assert not refused and len(lines) == 1


def test_over_the_cap_is_refused():
    lines, refused = cap_lines(50.0, 716.0, 40.0)
    assert refused and "estimate $50.00 is above it" in lines[0]


def test_estimate_prints_both_durations_the_embedded_note_and_the_cap(tmp_path):
    # Given the demo with a campaign cap
    data = json.loads(DEMO.read_text())
    data["cost"] = {"cap_usd": 5}
    path = tmp_path / "demo.json"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["estimate", str(path)])
    assert result.exit_code == 0, result.output
    assert "with `run --local` on this machine" in result.output and "in AWS" in result.output
    assert "embedded targets durable, tuned: cannot run in AWS" in result.output
    # the demo's repetitions {min 3, max 10}: priced at the maximum, and said so
    assert "repetitions 3 to 10: priced and timed at 10 (the most it may run)" in result.output
    assert "within the campaign cap $5.00: the cost guard compares the cap with the estimate" in result.output


def test_an_endpoint_campaign_has_no_embedded_note():
    result = CliRunner().invoke(app, ["estimate", str(AWS)])
    assert result.exit_code == 0, result.output
    assert "embedded" not in result.output
