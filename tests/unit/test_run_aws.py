"""`pgarena run --aws`: the stack's outputs, the execution input, the workers Ctrl-C stops, the download.

The whole run, against moto's server with the real handlers and workers, is tests/integration/test_run_aws.py.
"""

import json

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from pgarena.aws.deployment import OUTPUT_WORKER_SITE_REGIONS, SITE_CLUSTER_NAME, site_parameter_name
from pgarena.aws.sites import WorkerSite
from pgarena.cli import app
from pgarena.model import layout
from pgarena.planning.campaign import parse_campaign
from pgarena.remote.execution import (
    AwsCampaign,
    AwsRunError,
    aws_clients,
    aws_problems,
    download_results,
    execution_input,
    stack_outputs,
    wait_for_results,
)
from pgarena.remote.workers import campaign_tasks
from pgarena.report import REPORT_FILES
from tests.conftest import FIXTURES

MATRIX = json.loads((FIXTURES / "matrices" / "minimal.json").read_text())
AWS_MATRIX = {**MATRIX, "targets": [t for t in MATRIX["targets"] if "endpoint" in t]}  # no embedded server
OUTPUTS = {
    "StateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:campaign",
    "ResultsBucketName": "results",
    "ResultsTableName": "table",
    "WorkerClusterArn": "arn:aws:ecs:us-east-1:123456789012:cluster/workers",
}
NOTHING_GIVEN = {"state_machine_arn": None, "results_bucket": None, "results_table": None, "worker_cluster_arn": None}


@pytest.fixture
def aws(aws_credentials):
    with mock_aws():
        yield


def deploy(outputs, name="Pgarena"):
    template = {
        "Resources": {"Marker": {"Type": "AWS::SSM::Parameter", "Properties": {"Name": name, "Type": "String", "Value": "x"}}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    boto3.client("cloudformation").create_stack(StackName=name, TemplateBody=json.dumps(template))


def test_outputs_come_from_the_deployed_stack(aws):
    # Given the deployed stack / When nothing is given on the command line
    deploy(OUTPUTS)
    outputs = stack_outputs(boto3.client("cloudformation"), "Pgarena", NOTHING_GIVEN)

    # Then every resource is the stack's
    assert outputs.state_machine_arn == OUTPUTS["StateMachineArn"]
    assert outputs.results_bucket == "results" and outputs.results_table == "table"
    assert outputs.worker_cluster_arn == OUTPUTS["WorkerClusterArn"]


def test_an_option_wins_over_the_stack_output(aws):
    deploy(OUTPUTS)
    given = {**NOTHING_GIVEN, "state_machine_arn": "arn:aws:states:us-east-1:123456789012:stateMachine:other"}
    outputs = stack_outputs(boto3.client("cloudformation"), "Pgarena", given)
    assert outputs.state_machine_arn.endswith(":other") and outputs.results_bucket == "results"


def test_given_arn_and_bucket_need_no_stack(aws):
    # Given no stack at all / When the state machine and the bucket are given
    given = {**NOTHING_GIVEN, "state_machine_arn": OUTPUTS["StateMachineArn"], "results_bucket": "results"}
    outputs = stack_outputs(boto3.client("cloudformation"), "Pgarena", given)

    # Then the run goes ahead without the table (no step lines) and without the cluster
    assert outputs.results_table is None and outputs.worker_cluster_arn is None


def test_a_missing_stack_is_named_with_the_fix(aws):
    with pytest.raises(AwsRunError, match=r"stack 'Pgarena'.*--stack-name, or --state-machine-arn and --results-bucket"):
        stack_outputs(boto3.client("cloudformation"), "Pgarena", NOTHING_GIVEN)


def test_a_stack_without_the_outputs_is_not_taken_for_pgarena(aws):
    deploy({"Something": "else"})
    with pytest.raises(AwsRunError, match="has no output StateMachineArn, ResultsBucketName"):
        stack_outputs(boto3.client("cloudformation"), "Pgarena", NOTHING_GIVEN)


def test_embedded_targets_are_refused_with_the_field_and_the_fix():
    campaign = parse_campaign({**MATRIX, "targets": [{"name": "e", "provider": "embedded", "embedded": {}}]})
    assert aws_problems(campaign) == ["targets[0].embedded: embedded servers run only with --local; give the target an endpoint"]
    assert aws_problems(parse_campaign(AWS_MATRIX)) == []


def test_the_execution_input_is_the_one_schedules_and_the_local_runtime_send():
    payload = json.loads(execution_input(parse_campaign(MATRIX), "minimal-1"))
    assert set(payload) == {"campaign_id", "matrix"} and payload["campaign_id"] == "minimal-1"
    assert parse_campaign(payload["matrix"]) == parse_campaign(MATRIX)


def run_worker(ecs, cluster, campaign_id):
    step = json.dumps({"campaign_id": campaign_id, "step_id": "a/tpcb/c1-r1"})
    overrides = {"containerOverrides": [{"name": "worker", "environment": [{"name": "PGARENA_STEP", "value": step}]}]}
    task = ecs.run_task(
        cluster=cluster, taskDefinition="worker", startedBy="pgarena", overrides=overrides, count=1, launchType="FARGATE"
    )
    return task["tasks"][0]["taskArn"]


def test_ctrl_c_stops_only_the_campaigns_own_workers(aws):
    # Given two campaigns' workers in the cluster
    ecs = boto3.client("ecs")
    cluster = ecs.create_cluster(clusterName="workers")["cluster"]["clusterArn"]
    ecs.register_task_definition(family="worker", containerDefinitions=[{"name": "worker", "image": "pgarena", "memory": 512}])
    mine = run_worker(ecs, cluster, "mine-1")
    run_worker(ecs, cluster, "other-1")

    # When looking for one campaign's tasks / Then only its own are found
    assert campaign_tasks(ecs, cluster, "mine-1") == [mine]


SITE_REGION = "eu-west-1"


def worker_cluster(region, name):
    ecs = boto3.client("ecs", region_name=region)
    cluster = ecs.create_cluster(clusterName=name)["cluster"]["clusterArn"]
    ecs.register_task_definition(family="worker", containerDefinitions=[{"name": "worker", "image": "pgarena", "memory": 512}])
    return ecs, cluster


def started_execution():
    sfn = boto3.client("stepfunctions")
    machine = sfn.create_state_machine(
        name="campaign",
        definition=json.dumps({"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 3600, "End": True}}}),
        roleArn="arn:aws:iam::123456789012:role/sfn",
    )["stateMachineArn"]
    return machine, sfn.start_execution(stateMachineArn=machine, name="mine-1")["executionArn"]


def desired_status(ecs, cluster, task):
    (described,) = ecs.describe_tasks(cluster=cluster, tasks=[task])["tasks"]
    return described["desiredStatus"]


@pytest.mark.parametrize(
    ("site_published", "stack"),
    [(True, "Pgarena"), (False, "Pgarena"), (True, "PgarenaStaging")],
    ids=["site-published", "site-parameter-missing", "named-stack"],
)
def test_ctrl_c_stops_the_campaigns_workers_in_every_sites_cluster(aws, tmp_path, site_published, stack):
    # Given a stack with a worker site in another region: the campaign's workers in the home cluster and in
    # the site's (published in its region's parameter, as the site stack does), another campaign's in both
    home_ecs, home_cluster = worker_cluster("us-east-1", "workers")
    site_ecs, site_cluster = worker_cluster(SITE_REGION, SITE_CLUSTER_NAME)
    if site_published:
        site = WorkerSite(region=SITE_REGION, cluster_arn=site_cluster, task_definition_arn="worker:1")
        boto3.client("ssm", region_name=SITE_REGION).put_parameter(
            Name=site_parameter_name(SITE_REGION, stack), Value=site.model_dump_json(), Type="String"
        )
    mine = {"home": run_worker(home_ecs, home_cluster, "mine-1"), "site": run_worker(site_ecs, site_cluster, "mine-1")}
    others = {"home": run_worker(home_ecs, home_cluster, "other-1"), "site": run_worker(site_ecs, site_cluster, "other-1")}
    machine, execution = started_execution()
    boto3.client("s3").create_bucket(Bucket="results")
    outputs_ = {**OUTPUTS, "StateMachineArn": machine, "WorkerClusterArn": home_cluster, OUTPUT_WORKER_SITE_REGIONS: SITE_REGION}
    deploy(outputs_, stack)
    clients = aws_clients("us-east-1")
    # (a stack of another name reads its own sites' parameters)
    outputs = stack_outputs(clients.cloudformation, stack, NOTHING_GIVEN)
    events = []

    # When Ctrl-C stops the campaign
    run = AwsCampaign(clients, outputs, tmp_path, results_wait_s=0).stop("mine-1", execution, 0.0, events.append)

    # Then its workers are stopped in each cluster, through that cluster's region, and no other campaign's
    clusters = {"home": (home_ecs, home_cluster), "site": (site_ecs, site_cluster)}
    stopped = {where for where, task in mine.items() if desired_status(*clusters[where], task) == "STOPPED"}
    assert all(desired_status(*clusters[where], task) == "RUNNING" for where, task in others.items())
    texts = [event.text for event in events]
    if site_published:
        assert stopped == {"home", "site"} and run.stopped_tasks == 2
        assert f"stopped 2 worker task(s): 1 in us-east-1, 1 in {SITE_REGION}" in texts
    else:
        # And a site that cannot be read is said, the others still stopped
        assert stopped == {"home"} and run.stopped_tasks == 1
        assert any(
            f"the worker site in {SITE_REGION} could not be read" in text and site_parameter_name(SITE_REGION) in text
            for text in texts
        ), texts
    assert boto3.client("stepfunctions").describe_execution(executionArn=execution)["status"] == "ABORTED"


def test_download_copies_results_and_reports_and_parses(aws, tmp_path):
    # Given a finished campaign's results.json and reports in the bucket, and its raw output
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="results")
    for name in (layout.RESULTS_FILE, *REPORT_FILES):
        s3.put_object(Bucket="results", Key=layout.report_key("c-1", name), Body=name.encode())
    s3.put_object(Bucket="results", Key=layout.raw_key("c-1", "a/tpcb/c1-r1", "pgbench.log"), Body=b"raw")

    # When it is downloaded
    assert wait_for_results(s3, "results", "c-1", timeout_s=0)
    copied = download_results(s3, "results", "c-1", tmp_path)

    # Then results.json and every report are in the campaign's folder; raw output stays in the bucket
    assert sorted(p.name for p in copied) == sorted((layout.RESULTS_FILE, *REPORT_FILES))
    assert not (tmp_path / "c-1" / "raw").exists()


def test_no_results_yet_is_said_after_the_wait(aws):
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="results")
    assert not wait_for_results(s3, "results", "c-1", timeout_s=0)


def test_the_command_refuses_an_embedded_target_before_calling_aws(tmp_path):
    # Given a matrix with an embedded target / When it is run in AWS
    result = CliRunner().invoke(app, ["run", "--aws", "--matrix", str(FIXTURES / "matrices" / "minimal.json")])

    # Then nothing starts: the field and the fix are named
    assert result.exit_code == 1
    assert "targets[1].embedded: embedded servers run only with --local" in result.output


def test_the_command_asks_where_the_campaign_runs(tmp_path):
    result = CliRunner().invoke(app, ["run", "--matrix", str(FIXTURES / "matrices" / "minimal.json")])
    assert result.exit_code == 2 and "--local (this machine) or --aws (the deployed stack)" in result.output


@pytest.mark.parametrize("option", ["--aws-strict", "--container-workers"])
def test_local_only_options_are_refused_with_aws_before_calling_aws(option):
    # Given a --aws run with an option of the local runtime / When it is started
    result = CliRunner().invoke(app, ["run", "--aws", option, "--matrix", str(FIXTURES / "matrices" / "minimal.json")])
    # Then it is a usage error naming the options and the fix, before the matrix or AWS is read
    assert result.exit_code == 2
    assert option in result.output and "--external-site go with --local: remove them from a --aws run" in result.output


def test_no_credentials_is_said_as_unreachable_not_as_a_refusal(tmp_path, monkeypatch):
    # Given no AWS credentials anywhere boto3 looks
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    matrix = tmp_path / "aws.json"
    matrix.write_text(json.dumps(AWS_MATRIX))

    # When a campaign is started in AWS
    result = CliRunner().invoke(app, ["run", "--aws", "--region", "us-east-1", "--matrix", str(matrix)])

    # Then nothing ran, and the message says AWS could not be reached and what to check
    assert result.exit_code == 1
    assert "could not reach AWS: Unable to locate credentials (check credentials, --region and --endpoint-url)" in " ".join(
        result.output.split()
    )


def test_a_campaign_id_in_the_input_is_said_to_be_unused_by_a_run(tmp_path):
    # Given an execution input file naming its campaign id
    wrapped = tmp_path / "input.json"
    wrapped.write_text(json.dumps({"campaign_id": "nightly-1", "matrix": MATRIX}))

    # When it is run (refused here before any AWS call: it has an embedded target)
    result = CliRunner().invoke(app, ["run", "--aws", "--matrix", str(wrapped)])

    # Then the run says the id is not used, and how it names the campaign
    assert "names a campaign_id; a run names its campaign itself (minimal-<time>-<suffix>)" in " ".join(result.output.split())
