"""examples/four-provider-aws.json: the four-provider study as a deployed, cost-capped campaign."""

import json

import pytest
from typer.testing import CliRunner

from pgarena.cli import app
from pgarena.model.sites import SiteMap, site_problems
from pgarena.planning.campaign import load_campaign
from pgarena.planning.cost import estimate_campaign
from pgarena.planning.planner import plan_campaign
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "four-provider-aws.json"
# us-east-1 list prices from the AWS Fargate pricing page (Linux/x86, on-demand), typed here rather than read
# from the table under test.
FARGATE_VCPU_HOUR_USD = 0.04048
FARGATE_GB_HOUR_USD = 0.004445


@pytest.fixture(scope="module")
def campaign():
    return load_campaign(EXAMPLE)


@pytest.fixture(scope="module")
def default():
    """The estimate on the stack's default worker: 1 vCPU, 2 GB."""
    return estimate_campaign(load_campaign(EXAMPLE), 1024, 2048)


@pytest.fixture(scope="module")
def large():
    """The estimate on a worker four times as large: 4 vCPU, 8 GB."""
    return estimate_campaign(load_campaign(EXAMPLE), 4096, 8192)


def _line(estimate, item):
    (line,) = [line for line in estimate.lines if line.item == item]
    return line


def test_example_plans_every_target_in_the_matrix_order(campaign):
    plan = plan_campaign(campaign, "example")
    assert [(t.name, t.provider) for t in plan.targets] == [(t.name, t.provider) for t in campaign.targets]


def test_every_password_is_a_pgarena_secret_by_arn(campaign):
    arns = [t.endpoint.password_secret_arn for t in campaign.targets]
    assert all(arn and ":secret:pgarena/" in arn for arn in arns)
    assert not any(t.endpoint.password_env for t in campaign.targets)


def test_aws_targets_are_benchmarked_from_their_own_subnets(campaign):
    placed = {t.name: t.placement for t in campaign.targets if t.placement and t.placement.region}
    assert set(placed) == {t.name for t in campaign.targets if t.provider in ("aurora", "rds")}
    assert all(p.subnets and p.security_groups for p in placed.values())


def test_every_provider_is_measured_from_its_own_site(campaign):
    # AWS targets from their region; Cloud SQL and Azure from machines in their own cloud (ECS Anywhere)
    sites = {t.provider: (t.placement.region, t.placement.site) for t in campaign.targets if t.placement}
    assert sites == {
        "aurora": ("us-east-1", None),
        "rds": ("us-east-1", None),
        "cloudsql": (None, "gcp-us-central1"),
        "azure": (None, "azure-eastus"),
    }


def test_the_example_validates_against_a_stack_with_its_sites_and_not_without_them(campaign):
    deployed = SiteMap(home_region="us-east-1", external=frozenset({"gcp-us-central1", "azure-eastus"}))
    assert site_problems(campaign, deployed) == []
    bare = SiteMap(home_region="us-east-1")
    assert [p.path for p in site_problems(campaign, bare)] == ["$.targets[2].placement.site", "$.targets[3].placement.site"]


def test_every_target_is_priced_and_the_month_holds_the_campaign(campaign):
    assert all(t.hourly_cost_usd for t in campaign.targets)
    assert campaign.cost.cap_usd <= campaign.cost.monthly_cap_usd


def test_one_worker_task_per_target_and_phase(default, campaign):
    # One repetition: one phase, whose five steps (pgbench: load and run; sysbench: prepare, run and
    # cleanup; no run is sharded) a warm worker per target serves
    assert campaign.repetitions == 1 and default.tasks == len(campaign.targets)


def test_fargate_lines_are_the_billed_task_time_at_the_published_prices(default, campaign):
    # Given the billed task time: every run lasts at least its planned duration
    runs_s = len(campaign.targets) * sum(w.run.duration_s for w in campaign.workloads) * campaign.repetitions
    assert default.worker_task_s > runs_s

    # Then the Fargate lines price that time at 1 vCPU and 2 GB per task
    hours = default.worker_task_s / 3600
    assert _line(default, "Fargate vCPU").usd == pytest.approx(hours * 1 * FARGATE_VCPU_HOUR_USD, abs=1e-6)
    assert _line(default, "Fargate memory").usd == pytest.approx(hours * 2 * FARGATE_GB_HOUR_USD, abs=1e-6)


def test_each_target_costs_its_hourly_price_for_the_campaigns_wall_time(default, campaign):
    # Each target runs its two workloads one after the other: the campaign lasts at least that long
    assert default.wall_s > sum(w.run.duration_s for w in campaign.workloads)
    for target in campaign.targets:
        expected = target.hourly_cost_usd * default.wall_s / 3600
        assert _line(default, f"target {target.name}").usd == pytest.approx(expected, abs=1e-5)


def test_a_four_times_larger_worker_quadruples_only_the_fargate_lines(default, large):
    fargate = {"Fargate vCPU", "Fargate memory"}
    assert large.worker_task_s == default.worker_task_s
    for line in default.lines:
        scale = 4 if line.item in fargate else 1
        # each side's USD is rounded to 6 places: scaled, the rounding grows with it
        assert _line(large, line.item).usd == pytest.approx(scale * line.usd, abs=scale * 1e-6), line.item


def test_the_total_is_its_lines_and_below_the_worst_case(default):
    assert default.total_usd == pytest.approx(sum(line.usd for line in default.lines), abs=1e-6)
    assert default.total_usd < default.bound_usd


def test_the_examples_cap_holds_its_estimate_on_either_worker_size(default, large, campaign):
    assert default.total_usd < large.total_usd <= campaign.cost.cap_usd


def test_estimate_command_prints_the_lines_and_the_cap_verdict(campaign):
    result = CliRunner().invoke(app, ["estimate", "--matrix", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "Fargate vCPU" in result.output and "target cloudsql" in result.output
    assert f"within the campaign cap ${campaign.cost.cap_usd:.2f}" in result.output


def test_estimate_command_names_the_table_it_priced_with_for_a_region_it_has_none_for():
    # Given a region the price table does not hold / When estimated
    result = CliRunner().invoke(app, ["estimate", "--matrix", str(EXAMPLE), "--region", "mars-1"])
    # Then the header says the default region's prices were used, and the note how to add the region
    assert result.exit_code == 0, result.output
    assert "us-east-1 (no table for mars-1) list prices" in result.output
    assert "mars-1 list prices" not in result.output and "add the region to the table" in result.output


@pytest.mark.parametrize("cents_over_cap, exit_code", [(0, 0), (1, 1)])
def test_estimate_command_refuses_an_estimate_over_the_cap_and_accepts_one_at_it(tmp_path, default, cents_over_cap, exit_code):
    # Given the example with its cap at its own estimate, or a cent below it
    data = json.loads(EXAMPLE.read_text())
    data["cost"]["cap_usd"] = default.total_usd - cents_over_cap / 100
    path = tmp_path / "capped.json"
    path.write_text(json.dumps(data))

    # When it is estimated / Then only the estimate over its cap is refused
    result = CliRunner().invoke(app, ["estimate", "--matrix", str(path)])
    assert result.exit_code == exit_code, result.output
    assert ("would refuse it" in result.output) == bool(exit_code)
