"""The costs of worker sites (pgarena.planning.cost, fixed_cost): an external site's workers are ECS Anywhere
instance-hours, not Fargate; a region site's results cross regions through its NAT; each region site's NAT
gateway and address are the stack's fixed cost. In `pgarena estimate`, the cost guard and the fixed cost."""

import json

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from pgarena.aws.ledger import Ledger
from pgarena.aws.store import create_results_table
from pgarena.campaign.cost_guard import check_cost
from pgarena.cli import app
from pgarena.model.ledger import WorkerPricing
from pgarena.planning import cost
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.fixed_cost import fixed_monthly_cost
from pgarena.planning.planner import plan_campaign
from tests.conftest import FIXTURES
from tests.unit.test_cost import line, summary_of

HOME = "us-east-1"


def matrix(*placements: dict | None, duration_s: int = 600) -> dict:
    data = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
    endpoint = data["targets"][0]["endpoint"]
    data["targets"] = [
        {"name": f"t{i}", "provider": "rds", "endpoint": endpoint, **({"placement": p} if p else {})}
        for i, p in enumerate(placements)
    ]
    data["workloads"][0]["run"]["duration_s"] = duration_s
    return data


def plan(*placements: dict | None, duration_s: int = 600):
    return plan_campaign(parse_campaign(matrix(*placements, duration_s=duration_s)), "cid")


def items(estimate) -> list[str]:
    return [entry.item for entry in estimate.lines]


def test_external_site_workers_are_ecs_anywhere_instance_hours_not_fargate():
    # Given one target at home and the same target on an external site
    home_only = cost.estimate(plan(None), 1, 2, HOME)
    both = cost.estimate(plan(None, {"site": "gcp-us-central1"}), 1, 2, HOME)

    # Then the external target's workers add no Fargate time: they are ECS Anywhere instance-hours at $0.01025
    assert line(both, "Fargate vCPU").quantity == line(home_only, "Fargate vCPU").quantity
    anywhere = line(both, "ECS Anywhere instances")
    assert anywhere.unit_price_usd == cost.ECS_ANYWHERE_INSTANCE_HOUR_USD == 0.01025
    # one warm worker for the target's steps: its start-up, the load, the 600 s run
    assert anywhere.quantity == pytest.approx(line(home_only, "Fargate vCPU").quantity)
    assert both.tasks == 2 * home_only.tasks
    assert both.total_usd == pytest.approx(sum(entry.usd for entry in both.lines))
    assert "ECS Anywhere instances" not in items(home_only)


def test_a_region_site_s_results_pay_its_nat_and_the_transfer_home():
    # Given a target whose workers run in the eu-west-1 site of a stack in us-east-1
    estimate = cost.estimate(plan({"region": "eu-west-1", "subnets": ["subnet-1"], "security_groups": ["sg-1"]}), 1, 2, HOME)

    # Then their uploads are priced by the GB: eu-west-1's NAT processing ($0.048) and the transfer out ($0.02)
    transfer = line(estimate, "results from eu-west-1")
    assert transfer.unit_price_usd == pytest.approx(0.048 + 0.02)
    workers = cost._workers(estimate_plan := plan({"region": "eu-west-1"}), cost.expected_work_s)
    assert transfer.quantity == pytest.approx(cost.site_upload_gb(workers), rel=1e-3)
    assert transfer.quantity > 0 and len(estimate_plan.targets[0].steps) == len(workers)
    # and a home target crosses no region
    assert not [item for item in items(cost.estimate(plan(None), 1, 2, HOME)) if item.startswith("results from")]


def test_actual_prices_an_external_site_s_recorded_worker_as_ecs_anywhere():
    # Given a target on an external site whose load ran for 3 s on worker w1
    p = plan({"site": "gcp-us-central1"})
    (target,) = p.targets
    ran = summary_of(target.steps[0], "2026-11-22T12:00:00+00:00", "2026-11-22T12:00:03+00:00", 3.0, "w1")

    # When priced / Then the worker is one ECS Anywhere task and nothing of Fargate is billed
    spent = cost.actual(p, [ran], set(), {}, 20.0, 1, 2, HOME)
    assert (spent.tasks, spent.worker_task_s, line(spent, "Fargate vCPU").usd) == (1, 0, 0)
    assert line(spent, "ECS Anywhere instances").quantity == pytest.approx((cost.TASK_OVERHEAD_S + 3.0) / 3600, abs=1e-6)


def test_the_cost_guard_books_the_site_lines(aws_credentials):
    # Given the guard's estimate of a campaign with a region site target and an external one
    p = plan({"region": "eu-west-1"}, {"site": "azure-eastus"})
    with mock_aws():
        client = boto3.client("dynamodb", region_name=HOME)
        create_results_table(client, "t")
        decision = check_cost(p, Ledger(client, "t"), WorkerPricing(cpu_units=1024, memory_mib=2048, default_region=HOME))

    # Then its estimate carries both lines, and what it books is their total with the rest
    assert {"ECS Anywhere instances", "results from eu-west-1"} <= set(items(decision.estimate))
    assert decision.booked and decision.estimate.total_usd == pytest.approx(sum(e.usd for e in decision.estimate.lines))
    # and a refusal's breakdown names them
    breakdown = decision.estimate.breakdown()
    assert "workers (ECS Anywhere) $" in breakdown and "sites' results across regions $" in breakdown
    assert "ECS Anywhere" not in cost.estimate(plan(None), 1, 2, HOME).breakdown()


def test_each_region_site_adds_its_nat_gateway_and_address_to_the_fixed_cost():
    # Given a stack in us-east-1 with sites in eu-west-1 and us-east-1 (the stack's own region: no site)
    cost_ = fixed_monthly_cost(HOME, site_regions=["eu-west-1", HOME, "eu-west-1"])

    # Then the site's NAT gateway ($0.048/h) and address ($0.005/h) add $38.69 a month to the home's $36.50
    (site,) = cost_.sites
    assert (site.region, round(site.own_usd, 2)) == ("eu-west-1", 38.69)
    assert round(cost_.total_usd, 2) == round(36.50 + 38.69, 2)
    assert "site eu-west-1 $38.69" in cost_.line()


def test_estimate_prints_the_site_lines_and_the_sites_fixed_cost(tmp_path):
    # Given a matrix with a target in the eu-west-1 site and one on an external site
    path = tmp_path / "sites.json"
    path.write_text(json.dumps(matrix({"region": "eu-west-1"}, {"site": "gcp-us-central1"})))

    # When estimated in us-east-1
    result = CliRunner().invoke(app, ["estimate", str(path), "--region", HOME])

    # Then the ECS Anywhere and transfer lines are printed, and the fixed cost counts the site's NAT
    assert result.exit_code == 0, result.output
    rows = result.output.splitlines()
    assert [row for row in rows if row.startswith("ECS Anywhere instances")]
    assert [row for row in rows if row.startswith("results from eu-west-1")]
    (fixed,) = [row for row in rows if row.startswith("stack's fixed cost:")]
    assert "$75.19/month" in fixed and "site eu-west-1 $38.69" in fixed
