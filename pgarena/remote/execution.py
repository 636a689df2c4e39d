"""A campaign run in the deployed stack (`pgarena run --aws`): find the stack's resources, start an
execution of the state machine, follow it (pgarena.remote.follow), stop it and its workers on Ctrl-C,
and copy results.json and the reports from the results bucket.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import NoRegionError
from pydantic import BaseModel

from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.deployment import (
    OUTPUT_EXTERNAL_SITES,
    OUTPUT_RESULTS_BUCKET,
    OUTPUT_RESULTS_TABLE,
    OUTPUT_STATE_MACHINE_ARN,
    OUTPUT_WORKER_CLUSTER_ARN,
    OUTPUT_WORKER_SITE_REGIONS,
    STACK_NAME,
)
from pgarena.aws.sites import ssm_site_reader
from pgarena.aws.store import ResultStore
from pgarena.model import layout
from pgarena.model.execution import CAMPAIGN_ID_KEY, MATRIX_KEY
from pgarena.model.matrix import Campaign
from pgarena.model.results import CampaignResults
from pgarena.model.schedule import EXECUTION_NAME_MAX
from pgarena.model.sites import SiteMap
from pgarena.remote.follow import Event, follow, no_subject, probe_counter, step_event
from pgarena.remote.subjects import Subjects
from pgarena.remote.workers import stop_campaign_workers, worker_clusters
from pgarena.report import REPORT_FILES
from pgarena.report.trends import refresh_trend_page

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_ecs import ECSClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_service_quotas import ServiceQuotasClient
    from mypy_boto3_ssm import SSMClient
    from mypy_boto3_stepfunctions import SFNClient

# After a stop or a failure, finalize_stopped (behind the EventBridge rule) writes results.json: wait this
# long for it (a Lambda cold start and the aggregation of what finished).
RESULTS_WAIT_S = 90.0
# How often the deployed execution is looked at: each look reads its whole history (GetExecutionHistory
# is throttled per account), and a step lasts tens of seconds at least.
AWS_POLL_S = 2.0


class AwsRunError(Exception):
    """The run cannot start: what is missing and how to give it."""


class StackOutputs(BaseModel):
    """What `pgarena run --aws` needs of the deployed stack."""

    state_machine_arn: str
    results_bucket: str
    results_table: str | None = None  # step lines in the progress; none without it
    worker_cluster_arn: str | None = None  # Ctrl-C stops the workers' tasks; without it they stop at their next heartbeat
    # Read with the stack's outputs; unknown when every resource is given (Ctrl-C then stops the home cluster's only).
    sites: SiteMap | None = None
    stack_name: str = STACK_NAME  # names its sites' parameters (pgarena.aws.deployment.site_parameter_name)


def new_campaign_id(name: str) -> str:
    """Unique, and short enough to name the campaign's execution (which then gives the id, as in AWS)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    suffix = f"-{stamp}-{uuid.uuid4().hex[:6]}"
    return f"{name[: EXECUTION_NAME_MAX - len(suffix)]}{suffix}"


def _outputs(cloudformation: CloudFormationClient, stack_name: str) -> dict[str, str]:
    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except cloudformation.exceptions.ClientError as error:
        raise AwsRunError(
            f"stack {stack_name!r}: {error.response['Error'].get('Message', error)}; deploy it (make deploy: docs/guide/05-deploy.md), "
            "or pass --stack-name, or --state-machine-arn and --results-bucket"
        ) from None
    return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}


def _sites(cloudformation: CloudFormationClient, outputs: dict[str, str]) -> SiteMap:
    """The stack's region (the client's: the stack was found there), its worker sites' regions and its external sites."""
    regions = [r.strip() for r in outputs.get(OUTPUT_WORKER_SITE_REGIONS, "").split(",") if r.strip()]
    external = [name.strip() for name in outputs.get(OUTPUT_EXTERNAL_SITES, "").split(",") if name.strip()]
    return SiteMap(home_region=cloudformation.meta.region_name, regions=frozenset(regions), external=frozenset(external))


def stack_sites(cloudformation: CloudFormationClient, stack_name: str) -> SiteMap:
    """Where the deployed stack can launch workers (`pgarena validate --stack`)."""
    return _sites(cloudformation, _outputs(cloudformation, stack_name))


def stack_outputs(cloudformation: CloudFormationClient, stack_name: str, given: dict[str, str | None]) -> StackOutputs:
    """The given values (options), with what is missing read from the stack's outputs (describe-stacks)."""
    known: dict[str, Any] = {key: value for key, value in given.items() if value}
    if "state_machine_arn" not in known or "results_bucket" not in known:
        outputs = _outputs(cloudformation, stack_name)
        names = {
            "state_machine_arn": OUTPUT_STATE_MACHINE_ARN,
            "results_bucket": OUTPUT_RESULTS_BUCKET,
            "results_table": OUTPUT_RESULTS_TABLE,
            "worker_cluster_arn": OUTPUT_WORKER_CLUSTER_ARN,
        }
        for key, output in names.items():
            if key not in known and outputs.get(output):
                known[key] = outputs[output]
        missing = [names[key] for key in ("state_machine_arn", "results_bucket") if key not in known]
        if missing:
            raise AwsRunError(f"stack {stack_name!r} has no output {', '.join(missing)}: is it pgarena's stack?")
        known["sites"] = _sites(cloudformation, outputs)
    known["stack_name"] = stack_name
    return StackOutputs.model_validate(known)


def aws_problems(campaign: Campaign) -> list[str]:
    """What the matrix holds that only the local runtime can run."""
    return [
        f"targets[{i}].embedded: embedded servers run only with --local; give the target an endpoint"
        for i, target in enumerate(campaign.targets)
        if target.embedded is not None
    ]


def execution_input(campaign: Campaign, campaign_id: str) -> str:
    """The wrapped input the schedules start executions with: the id is given, as the execution's name."""
    return json.dumps({CAMPAIGN_ID_KEY: campaign_id, MATRIX_KEY: campaign.model_dump(mode="json", exclude_none=True)})


def download_results(s3: S3Client, bucket: str, campaign_id: str, out_dir: Path) -> list[Path]:
    """results.json and the reports, into out_dir/<campaign_id>/; returns the files copied."""
    folder = out_dir / campaign_id
    folder.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in (layout.RESULTS_FILE, *REPORT_FILES):
        try:
            body = s3.get_object(Bucket=bucket, Key=layout.report_key(campaign_id, name))["Body"].read()
        except s3.exceptions.NoSuchKey:  # a report that could not be built: results.json is the contract
            continue
        (folder / name).write_bytes(body)
        copied.append(folder / name)
    return copied


def wait_for_results(s3: S3Client, bucket: str, campaign_id: str, timeout_s: float, poll_s: float = AWS_POLL_S) -> bool:
    """Whether results.json appeared within timeout_s (finalize_stopped writes it after a stop or a failure)."""
    deadline = time.monotonic() + timeout_s
    while True:
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=layout.results_key(campaign_id), MaxKeys=1)
        if listed.get("KeyCount", 0):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)


@dataclass
class AwsClients:
    sfn: SFNClient
    s3: S3Client
    dynamodb: DynamoDBClient
    ecs: ECSClient
    cloudformation: CloudFormationClient
    service_quotas: ServiceQuotasClient
    lambda_: LambdaClient
    # Another region's (a worker site's): ECS and SSM are regional.
    ecs_in: Callable[[str], ECSClient]
    ssm_in: Callable[[str], SSMClient]


def aws_clients(region: str | None = None) -> AwsClients:
    """Clients as boto3 configures them (credentials, region, AWS_ENDPOINT_URL[_<SERVICE>])."""
    session = boto3.Session(region_name=region)
    try:
        ecs = session.client("ecs")
        home = ecs.meta.region_name

        @cache
        def ecs_in(region_: str) -> ECSClient:
            return ecs if region_ == home else session.client("ecs", region_name=region_)

        @cache
        def ssm_in(region_: str) -> SSMClient:
            return session.client("ssm", region_name=region_)

        return AwsClients(
            session.client("stepfunctions"),
            session.client("s3"),
            session.client("dynamodb"),
            ecs,
            session.client("cloudformation"),
            session.client("service-quotas"),
            session.client("lambda"),
            ecs_in,
            ssm_in,
        )
    except NoRegionError:
        raise AwsRunError("no AWS region: pass --region or set AWS_REGION (or a profile's region)") from None


@dataclass
class AwsRun:
    campaign_id: str
    execution_arn: str
    status: str  # the execution's: SUCCEEDED, FAILED, TIMED_OUT, ABORTED
    results_dir: Path
    results: CampaignResults | None
    wall_s: float
    error: str | None = None
    stopped_tasks: int = 0


class AwsCampaign:
    """One execution of the deployed state machine, from start to downloaded results."""

    def __init__(self, clients: AwsClients, outputs: StackOutputs, out_dir: Path, results_wait_s: float = RESULTS_WAIT_S):
        self.clients = clients
        self.outputs = outputs
        self.out_dir = out_dir
        self.results_wait_s = results_wait_s
        self.store = (
            ResultStore(outputs.results_bucket, outputs.results_table, s3=clients.s3, dynamodb=clients.dynamodb)
            if outputs.results_table
            else None
        )

    def start(self, campaign: Campaign) -> tuple[str, str]:
        """Start an execution for the campaign; returns its campaign id and execution ARN."""
        campaign_id = new_campaign_id(campaign.campaign)
        arn = self.clients.sfn.start_execution(
            stateMachineArn=self.outputs.state_machine_arn,
            name=campaign_id,
            input=execution_input(campaign, campaign_id),
        )["executionArn"]
        return campaign_id, arn

    def run(self, campaign: Campaign, on_event: Callable[[Event], None] = lambda event: None) -> AwsRun:
        """Start, follow to the end and download; Ctrl-C (KeyboardInterrupt) stops the execution instead."""
        t0 = time.monotonic()
        campaign_id, arn = self.start(campaign)
        on_event(Event(0.0, "state", f"started {arn}"))
        try:
            return self.wait(campaign_id, arn, t0, on_event)
        except KeyboardInterrupt:
            return self.stop(campaign_id, arn, t0, on_event)

    def wait(self, campaign_id: str, arn: str, t0: float, on_event: Callable[[Event], None]) -> AwsRun:
        store = self.store
        summaries = (lambda: store.summaries(campaign_id)) if store is not None else list
        poll = None
        subject = Subjects(CampaignState(store)) if store is not None else no_subject
        probes = probe_counter(self.clients.s3, self.outputs.results_bucket, campaign_id)
        for poll in follow(self.clients.sfn, arn, t0, summaries, AWS_POLL_S, subject, probes):
            for event in [*poll.states, *poll.probes]:
                on_event(event)
            for summary in poll.steps:
                on_event(step_event(summary, t0))
        assert poll is not None  # follow yields at least once
        status = poll.status
        error = (
            None if status["status"] == "SUCCEEDED" else f"{status.get('error') or status['status']}: {status.get('cause', '')}"
        )
        # A failed execution ends through finalize_stopped (EventBridge), which writes results.json afterwards.
        wait_s = 0.0 if status["status"] == "SUCCEEDED" else self.results_wait_s
        return self._collect(campaign_id, arn, status["status"], error, t0, wait_s)

    def stop(self, campaign_id: str, arn: str, t0: float, on_event: Callable[[Event], None]) -> AwsRun:
        """StopExecution, then StopTask the campaign's workers in every site (each records its step as cancelled
        and uploads its output); finalize_stopped, behind the EventBridge rule, writes results.json."""
        self.clients.sfn.stop_execution(executionArn=arn, error="Cancelled", cause="stopped by the user (pgarena run --aws)")
        on_event(Event(time.monotonic() - t0, "state", "execution stopped"))
        stopped = 0
        if self.outputs.worker_cluster_arn:
            # Unknown sites (every resource given by option): the home cluster's, external sites' included.
            sites = self.outputs.sites or SiteMap(home_region=self.clients.ecs.meta.region_name)
            clusters, problems = worker_clusters(
                sites, self.outputs.worker_cluster_arn, ssm_site_reader(self.clients.ssm_in, self.outputs.stack_name)
            )
            result = stop_campaign_workers(self.clients.ecs_in, clusters, campaign_id, "pgarena run --aws: Ctrl-C")
            for problem in [*problems, *result.problems]:
                on_event(Event(time.monotonic() - t0, "state", problem))
            on_event(Event(time.monotonic() - t0, "state", result.describe()))
            stopped = result.count
        run = self._collect(campaign_id, arn, "ABORTED", "cancelled", t0, self.results_wait_s)
        run.stopped_tasks = stopped
        return run

    def _collect(self, campaign_id: str, arn: str, status: str, error: str | None, t0: float, wait_s: float) -> AwsRun:
        bucket = self.outputs.results_bucket
        results = None
        if wait_for_results(self.clients.s3, bucket, campaign_id, wait_s):
            download_results(self.clients.s3, bucket, campaign_id, self.out_dir)
            results = CampaignResults.model_validate_json((self.out_dir / campaign_id / layout.RESULTS_FILE).read_text())
            refresh_trend_page(self.out_dir, results.campaign)  # where its report links to
        return AwsRun(campaign_id, arn, status, self.out_dir / campaign_id, results, time.monotonic() - t0, error)
