"""The pure pieces of the local runtime's worker sites in other regions: the site it publishes in a region's
SSM (read back as launch_worker reads it), the local ECS endpoint answering as that region's ECS, the regions
`pgarena resume` serves again, and `run --local` refusing a region it was not given."""

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import IO

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from typer.testing import CliRunner

from pgarena.aws.deployment import SITE_CLUSTER_NAME, SITE_TASK_FAMILY, site_parameter_name
from pgarena.aws.sites import ssm_site_reader
from pgarena.cli import app
from pgarena.local import iam as local_iam
from pgarena.local.endpoints import EcsEndpoint, cluster_region, region_of
from pgarena.local.resume import named_regions
from pgarena.local.runtime import CLUSTER_ARN, publish_sites, region_site
from pgarena.local.signing import RunKeys, new_credentials
from pgarena.planning.campaign import parse_campaign
from tests.unit.test_sites import FAR, HOME, matrix


def test_a_region_s_site_names_its_cluster_and_task_family_in_that_region():
    site = region_site(FAR)
    assert site.region == FAR
    assert site.cluster_arn == f"arn:aws:ecs:{FAR}:123456789012:cluster/{SITE_CLUSTER_NAME}"
    assert site.task_definition_arn == f"arn:aws:ecs:{FAR}:123456789012:task-definition/{SITE_TASK_FAMILY}:1"
    assert (site.subnets, site.security_groups) == ([], [])  # the local endpoint places no task in a network


def test_the_published_site_is_read_back_in_its_region_only(aws_credentials):
    with mock_aws():
        # Given the sites published as their stacks' deploys would
        publish_sites((FAR, "ap-south-1"))
        # When launch_worker's reader reads one
        read = ssm_site_reader(lambda region: boto3.client("ssm", region_name=region))
        # Then it is the site published in that region, and the home region holds none
        assert read(FAR) == region_site(FAR)
        assert boto3.client("ssm", region_name=HOME).describe_parameters()["Parameters"] == []


def test_the_region_of_a_request_is_its_credential_scope_s():
    header = "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20240101/eu-west-1/ecs/aws4_request, SignedHeaders=host, Signature=ab"
    assert region_of(header) == FAR
    assert region_of("") is None
    assert cluster_region(region_site(FAR).cluster_arn) == FAR
    assert cluster_region("pgarena-local") is None


class RecordingWorkers:
    """Workers that record each task's environment and run /bin/true."""

    def __init__(self) -> None:
        self.envs: dict[str, dict[str, str]] = {}

    def start(self, task_id: str, env: Mapping[str, str], log: IO[str]) -> subprocess.Popen[bytes]:
        self.envs[task_id] = dict(env)
        return subprocess.Popen(["/bin/true"])

    def kill(self, task_id: str) -> None:
        pass

    def container(self, task_id: str) -> str | None:
        return None

    def never_ran(self, exit_code: int) -> bool:
        return False


@pytest.fixture
def ecs_in(tmp_path):
    """The local ECS endpoint, and a client of it for a region."""
    credentials = new_credentials()
    workers = RecordingWorkers()
    with EcsEndpoint(
        worker_env={"AWS_REGION": HOME}, logs_dir=tmp_path, keys=RunKeys([credentials]), workers=workers
    ) as endpoint:

        def client(region: str):
            session = boto3.session.Session(credentials.access_key_id, credentials.secret_access_key, region_name=region)
            return session.client("ecs", endpoint_url=endpoint.url)

        yield endpoint, workers, client


def run_in(client, cluster: str):
    return client.run_task(
        cluster=cluster,
        taskDefinition=region_site(FAR).task_definition_arn,
        overrides={"containerOverrides": [{"name": "worker", "environment": [{"name": "PGARENA_STEP", "value": "{}"}]}]},
    )


def test_a_task_run_through_another_region_s_ecs_is_that_region_s(ecs_in):
    _, workers, client = ecs_in
    # When RunTask is sent to eu-west-1's ECS, on the site's cluster
    (task,) = run_in(client(FAR), region_site(FAR).cluster_arn)["tasks"]
    # Then the task is eu-west-1's, in the site's cluster, and its worker is told its region as Fargate tells it
    assert task["taskArn"].startswith(f"arn:aws:ecs:{FAR}:123456789012:task/{SITE_CLUSTER_NAME}/")
    (env,) = workers.envs.values()
    assert env["AWS_REGION"] == FAR and env["AWS_DEFAULT_REGION"] == FAR


def test_a_cluster_of_another_region_is_not_found_and_nothing_starts(ecs_in):
    endpoint, _, client = ecs_in
    # When the home ECS is asked to run a task on the eu-west-1 site's cluster (a launcher that ignored the site)
    home = client(HOME)
    with pytest.raises(home.exceptions.ClusterNotFoundException, match="not a cluster of us-east-1"):
        run_in(home, region_site(FAR).cluster_arn)
    # Then no worker started; the home cluster still takes the task
    assert endpoint.processes == {}
    (task,) = run_in(home, CLUSTER_ARN)["tasks"]
    assert task["taskArn"].startswith(f"arn:aws:ecs:{HOME}:")


def test_resuming_serves_the_regions_the_targets_named_besides_home():
    campaign = parse_campaign(matrix({"region": FAR}, {"region": HOME}, None, {"region": "ap-south-1"}, {"region": FAR}))
    assert named_regions(campaign) == (FAR, "ap-south-1")


def _far_matrix_file(tmp_path: Path) -> str:
    path = tmp_path / "far.json"
    path.write_text(json.dumps(matrix(None, {"region": FAR})))
    return str(path)


def test_a_local_run_refuses_a_region_it_was_not_given_before_starting_anything(tmp_path):
    # When a campaign with a target in eu-west-1 is run locally serving another region only
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["run", "--local", "--site-region", "ap-south-1", "--matrix", _far_matrix_file(tmp_path), "--out", str(out)]
    )
    # Then it is refused naming the field, the region and the local fix, and no results folder was started
    assert result.exit_code == 1
    assert "$.targets[1].placement.region" in result.stderr and f"'{FAR}'" in result.stderr
    assert "ap-south-1" in result.stderr and "--site-region REGION" in result.stderr
    assert not out.exists()


def test_site_region_goes_with_local_only(tmp_path):
    result = CliRunner().invoke(app, ["run", "--aws", "--site-region", FAR, "--matrix", _far_matrix_file(tmp_path)])
    assert result.exit_code == 2 and "--site-region and --external-site go with --local" in result.stderr


def test_under_enforced_iam_a_site_parameter_is_read_by_its_arn(aws_credentials):
    with mock_aws():
        # Given both sites published, and a user granted one site's parameter by ARN, as launch_worker's role is
        publish_sites((FAR, "ap-south-1"))
        iam_client = boto3.client("iam", region_name=HOME)
        iam_client.create_user(UserName="launcher")
        grant = {
            "Effect": "Allow",
            "Action": "ssm:GetParameter",
            "Resource": f"arn:aws:ssm:{FAR}:123456789012:parameter{site_parameter_name(FAR)}",
        }
        policy = json.dumps({"Version": "2012-10-17", "Statement": [grant]})
        iam_client.put_user_policy(UserName="launcher", PolicyName="site", PolicyDocument=policy)
        key = iam_client.create_access_key(UserName="launcher")["AccessKey"]
        session = boto3.session.Session(key["AccessKeyId"], key["SecretAccessKey"])

        # When it reads them with IAM enforced
        with local_iam.enforced():
            read = ssm_site_reader(lambda region: session.client("ssm", region_name=region))
            # Then the granted one is read; the other region's is refused
            assert read(FAR) == region_site(FAR)
            with pytest.raises(ClientError, match="not authorized to perform: ssm:GetParameter"):
                read("ap-south-1")


class SleepingWorkers(RecordingWorkers):
    """Workers that run until stopped (SIGTERM ends `sleep`)."""

    def start(self, task_id: str, env: Mapping[str, str], log: IO[str]) -> subprocess.Popen[bytes]:
        self.envs[task_id] = dict(env)
        return subprocess.Popen(["sleep", "600"])


def test_tasks_are_listed_described_and_stopped_only_through_their_own_region(tmp_path):
    # Given the local ECS endpoint with a worker running in the home cluster and one in the eu-west-1 site's
    credentials = new_credentials()
    with EcsEndpoint({}, tmp_path, RunKeys([credentials]), workers=SleepingWorkers()) as endpoint:

        def client(region: str):
            session = boto3.session.Session(credentials.access_key_id, credentials.secret_access_key, region_name=region)
            return session.client("ecs", endpoint_url=endpoint.url)

        (home_task,) = run_in(client(HOME), CLUSTER_ARN)["tasks"]
        (far_task,) = run_in(client(FAR), region_site(FAR).cluster_arn)["tasks"]
        home, far = client(HOME), client(FAR)

        # Then each region's ECS lists and describes its own tasks only, by cluster, as AWS's regional ECS does
        assert home.list_tasks(cluster=CLUSTER_ARN)["taskArns"] == [home_task["taskArn"]]
        assert home.list_tasks(cluster=SITE_CLUSTER_NAME)["taskArns"] == []
        assert far.list_tasks(cluster=SITE_CLUSTER_NAME)["taskArns"] == [far_task["taskArn"]]
        assert far.list_tasks(cluster=CLUSTER_ARN)["taskArns"] == []
        assert home.describe_tasks(cluster=CLUSTER_ARN, tasks=[far_task["taskArn"]])["tasks"] == []
        # and the home ECS cannot stop the far task; the far one can, keeping its reason
        with pytest.raises(ClientError, match="not found"):
            home.stop_task(cluster=CLUSTER_ARN, task=far_task["taskArn"], reason="Ctrl-C")
        stopped = far.stop_task(cluster=SITE_CLUSTER_NAME, task=far_task["taskArn"], reason="Ctrl-C")["task"]
        assert (stopped["desiredStatus"], stopped["stoppedReason"]) == ("STOPPED", "Ctrl-C")
        endpoint.wait_stopped([far_task["taskArn"]])
        (described,) = far.describe_tasks(cluster=SITE_CLUSTER_NAME, tasks=[far_task["taskArn"]])["tasks"]
        assert described["lastStatus"] == "STOPPED"
        # and a task no StopTask reached keeps running
        assert home.list_tasks(cluster=CLUSTER_ARN)["taskArns"] == [home_task["taskArn"]]
