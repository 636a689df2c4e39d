"""examples/four-provider-aws.json: the four-provider study as a deployed, cost-capped campaign."""

import json

import pytest
from typer.testing import CliRunner

from pgarena.cli import app
from pgarena.model.matrix import load_campaign
from pgarena.planning.cost import estimate_campaign
from pgarena.planning.plan import plan_campaign
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "four-provider-aws.json"
STUDY = ROOT / "examples" / "four-provider-study.json"


@pytest.fixture(scope="module")
def campaign():
    return load_campaign(EXAMPLE)


def test_example_is_a_valid_plannable_matrix(campaign):
    plan = plan_campaign(campaign, "example")
    assert [t.provider for t in plan.targets] == ["aurora", "rds", "cloudsql", "azure"]


def test_example_runs_the_studys_workloads(campaign):
    study = json.loads(STUDY.read_text())
    example = json.loads(EXAMPLE.read_text())
    assert (example["workloads"], example["repetitions"]) == (study["workloads"], study["repetitions"])


def test_every_password_is_a_pgarena_secret_by_arn(campaign):
    arns = [t.endpoint.password_secret_arn for t in campaign.targets]
    assert all(arn and ":secret:pgarena/" in arn for arn in arns)
    assert not any(t.endpoint.password_env for t in campaign.targets)


def test_aws_targets_are_benchmarked_from_their_own_subnets(campaign):
    placed = {t.name: t.placement for t in campaign.targets if t.placement}
    assert set(placed) == {"aurora", "rds"}
    assert all(p.subnets and p.security_groups for p in placed.values())


def test_every_target_has_an_hourly_cost_and_the_campaign_caps(campaign):
    assert all(t.hourly_cost_usd for t in campaign.targets)
    assert (campaign.cost.cap_usd, campaign.cost.monthly_cap_usd, campaign.cost.region) == (40.0, 200.0, "us-east-1")


def test_example_estimate_is_within_its_cap_on_default_and_large_workers(campaign):
    default = estimate_campaign(campaign, 1024, 2048)
    large = estimate_campaign(campaign, 4096, 8192)
    assert 10 < default.total_usd < large.total_usd <= campaign.cost.cap_usd
    assert default.region == "us-east-1" and default.tasks == 20


def test_estimate_command_prints_the_lines_and_the_cap_verdict():
    result = CliRunner().invoke(app, ["estimate", "--matrix", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "Fargate vCPU" in result.output and "target cloudsql" in result.output
    assert "within the campaign cap $40.00" in result.output


def test_estimate_command_fails_a_matrix_over_its_cap(tmp_path):
    data = json.loads(EXAMPLE.read_text())
    data["cost"]["cap_usd"] = 1.0
    path = tmp_path / "over.json"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["estimate", "--matrix", str(path)])
    assert result.exit_code == 1 and "would refuse it" in result.output
