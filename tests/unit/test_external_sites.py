"""External sites (ECS Anywhere): placement.site names machines in another cloud registered to the home
cluster; their targets launch with launch type EXTERNAL on those machines only, and a site the stack does
not serve is refused before anything starts."""

import json

import pytest
from moto import mock_aws
from pydantic import ValidationError
from typer.testing import CliRunner

from pgarena.aws.launch import EcsLauncher, external_run_task_request
from pgarena.aws.settings import SitesEnv
from pgarena.campaign.claim import claim_and_plan
from pgarena.cli import app
from pgarena.local.resume import named_sites
from pgarena.model.errors import ErrorKind, InvalidMatrix, PgarenaError
from pgarena.model.matrix import Placement
from pgarena.model.sites import SiteMap, site_problems
from pgarena.planning.campaign import parse_campaign
from tests.unit.test_campaign_use_cases import MemoryRecords, MemoryStore
from tests.unit.test_sites import ENV, HOME, _deploy_stack, environment, first_step, matrix

GCP = "gcp-us-central1"
EXTERNAL_ENV = ENV.model_copy(
    update={"external_sites": f"{GCP},azure-eastus", "external_task_definition_arn": "arn:home-external-td"}
)


@pytest.mark.parametrize(
    "placement",
    [
        {"site": GCP, "region": HOME},
        {"site": GCP, "subnets": ["subnet-1"]},
        {"site": GCP, "security_groups": ["sg-1"]},
    ],
)
def test_a_site_with_a_region_or_its_network_is_refused_naming_both_fields(placement):
    with pytest.raises(ValidationError, match=f"site '{GCP}' is an external site.*either site, or region"):
        Placement.model_validate(placement)


def test_a_site_name_that_is_no_attribute_value_is_refused():
    with pytest.raises(ValidationError, match=r"site\n  String should match pattern"):
        Placement.model_validate({"site": "GCP us central"})


def test_an_external_site_the_stack_does_not_serve_is_refused_with_the_fix():
    # Given a stack with one external site, and targets on it, on another and at home
    campaign = parse_campaign(matrix({"site": GCP}, {"site": "oci-phx"}, None))

    # When the placements are checked
    problems = site_problems(campaign, SiteMap(home_region=HOME, external=frozenset({GCP})))

    # Then only the unserved site is refused, by its path, naming the site, the sites there are and both fixes
    assert [p.path for p in problems] == ["$.targets[1].placement.site"]
    message = problems[0].message
    assert "'oci-phx'" in message and f"us-east-1 (home), {GCP} (external)" in message
    assert '"oci-phx" to pgarena:external_sites' in message and "deploy --all" in message
    assert "register a machine" in message and "remove placement.site" in message


def test_validate_and_plan_refuses_an_unserved_site_and_plans_a_served_one():
    # Given Validate And Plan's environment in a stack with one external site
    sites = SitesEnv(RESULTS_BUCKET="b", RESULTS_TABLE="t", AWS_REGION=HOME, WORKER_EXTERNAL_SITES=GCP).sites
    store = MemoryStore()

    # When a matrix places a target on another site, it is refused before anything is kept
    with pytest.raises(InvalidMatrix, match=r"targets\[0\]\.placement\.site: t0: the stack has no external site 'azure-eastus'"):
        claim_and_plan(matrix({"site": "azure-eastus"}), "e1", store, MemoryRecords(store), sites)
    assert store.objects == {}

    # Then the same target on the served site is planned, its steps carrying the site
    plan = claim_and_plan(matrix({"site": GCP}), "e2", store, MemoryRecords(store), sites)
    assert plan.campaign_id == "e2"


def test_an_external_target_is_launched_on_its_site_s_machines_in_the_home_cluster():
    # Given a step placed on an external site
    request = external_run_task_request(first_step({"site": GCP}), "token", EXTERNAL_ENV, GCP)

    # Then RunTask goes to the home cluster with the EXTERNAL task definition and launch type, no network
    # configuration (bridge network on the user's machine) and a constraint on the site's attribute
    assert (request["cluster"], request["taskDefinition"]) == ("arn:home-cluster", "arn:home-external-td")
    assert request["launchType"] == "EXTERNAL" and "capacityProviderStrategy" not in request
    assert "networkConfiguration" not in request
    assert request["placementConstraints"] == [{"type": "memberOf", "expression": f"attribute:pgarena.site == {GCP}"}]
    # The task definition's own role (the home task role) and the home region to report to
    assert "taskRoleArn" not in request["overrides"]
    assert environment(request)["RESULTS_REGION"] == HOME
    assert json.loads(environment(request)["PGARENA_STEP"])["placement"] == {
        "region": None,
        "site": GCP,
        "subnets": [],
        "security_groups": [],
    }


def test_fargate_spot_does_not_apply_to_external_machines():
    spot = EXTERNAL_ENV.model_copy(update={"capacity_provider": "FARGATE_SPOT"})
    request = external_run_task_request(first_step({"site": GCP}), "token", spot, GCP)
    assert request["launchType"] == "EXTERNAL" and "capacityProviderStrategy" not in request


class RecordingEcs:
    """Stands in for the ECS client: keeps each RunTask request and answers as ECS does."""

    def __init__(self) -> None:
        self.requests: list[dict] = []

    def run_task(self, **request):
        self.requests.append(request)
        return {"tasks": [{"taskArn": "arn:aws:ecs:us-east-1:123456789012:task/home/1"}], "failures": []}


def test_the_launcher_sends_an_external_target_to_the_home_ecs_with_its_constraint():
    ecs = RecordingEcs()
    task, failures = EcsLauncher(ecs, EXTERNAL_ENV).launch(first_step({"site": GCP}), "t1")  # type: ignore[arg-type]  # a stand-in with run_task only
    assert task is not None and failures == []
    assert ecs.requests[0]["placementConstraints"][0]["expression"] == f"attribute:pgarena.site == {GCP}"


def test_a_site_the_stack_no_longer_serves_is_an_invalid_matrix_not_a_retry():
    launcher = EcsLauncher(RecordingEcs(), EXTERNAL_ENV.model_copy(update={"external_sites": ""}))  # type: ignore[arg-type]  # a stand-in with run_task only
    with pytest.raises(PgarenaError, match=f"placement.site '{GCP}': the stack has no such external site") as error:
        launcher.launch(first_step({"site": GCP}), "t1")
    assert error.value.kind == ErrorKind.INVALID_MATRIX


def _site_matrix_file(tmp_path, site: str) -> str:
    path = tmp_path / "external.json"
    path.write_text(json.dumps(matrix(None, {"site": site})))
    return str(path)


def test_validate_with_the_stack_refuses_a_site_it_does_not_serve(aws_credentials, tmp_path):
    # Given a deployed stack with one external site
    with mock_aws():
        _deploy_stack({"StateMachineArn": "arn:sm", "ResultsBucketName": "b", "ExternalSites": GCP})

        # When a matrix naming another site, then that one, is validated against the stack
        refused = CliRunner().invoke(
            app, ["validate", _site_matrix_file(tmp_path, "oci-phx"), "--stack", "Pgarena", "--region", HOME]
        )
        accepted = CliRunner().invoke(app, ["validate", _site_matrix_file(tmp_path, GCP), "--stack", "Pgarena", "--region", HOME])

    # Then the other site is refused naming the field, the site and the fix; the served one passes
    assert refused.exit_code == 1
    assert "$.targets[1].placement.site" in refused.stderr and "'oci-phx'" in refused.stderr
    assert "pgarena:external_sites" in refused.stderr
    assert accepted.exit_code == 0, accepted.stderr


def test_run_aws_refuses_an_unserved_site_before_starting_an_execution(aws_credentials, tmp_path):
    with mock_aws():
        _deploy_stack({"StateMachineArn": "arn:sm", "ResultsBucketName": "b"})
        result = CliRunner().invoke(app, ["run", "--aws", "--matrix", _site_matrix_file(tmp_path, GCP), "--region", HOME])
    assert result.exit_code == 1
    assert "$.targets[1].placement.site" in result.stderr and "deploy --all" in result.stderr


def test_resuming_a_campaign_serves_the_external_sites_its_targets_named():
    # Given a campaign with two targets on one site, one on another and one at home
    campaign = parse_campaign(matrix({"site": GCP}, {"site": "azure-eastus"}, {"site": GCP}, None))
    # Then `pgarena resume` serves each of those sites once (the first run served them, or it was refused)
    assert named_sites(campaign) == (GCP, "azure-eastus")


def test_a_local_run_refuses_a_site_it_was_not_given_before_starting_anything(tmp_path):
    # When a campaign on an external site is run locally without --external-site
    result = CliRunner().invoke(
        app, ["run", "--local", "--matrix", _site_matrix_file(tmp_path, GCP), "--out", str(tmp_path / "out")]
    )

    # Then it is refused naming the field and the local fix, and no results folder was started
    assert result.exit_code == 1
    assert "$.targets[1].placement.site" in result.stderr and f"'{GCP}'" in result.stderr
    assert "pass --external-site NAME" in result.stderr
    assert not (tmp_path / "out").exists()


def test_external_site_goes_with_local_only(tmp_path):
    result = CliRunner().invoke(
        app, ["run", "--aws", "--external-site", GCP, "--matrix", _site_matrix_file(tmp_path, GCP), "--region", HOME]
    )
    assert result.exit_code == 2 and "--external-site go with --local" in result.stderr
