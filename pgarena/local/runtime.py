"""Run a campaign on this machine: the same ASL file, executed by moto's Step Functions interpreter (or
another host's: pgarena.local.hosts).

The interpreter calls the real Lambda handlers through a local Lambda endpoint; the launcher's ECS
RunTask starts the real worker entrypoint as a process, which reaches S3, DynamoDB and the task
token API through a moto server sharing the interpreter's state.

With `aws_strict`, the runtime holds to what AWS enforces: each handler runs from its synthesized asset
in a clean interpreter of its runtime (pgarena.local.assets), with its timeout and memory size, and
AWS's limits on state payloads and inline Map concurrency apply (pgarena.local.limits).

With `container_workers` (implied by `aws_strict`), each worker runs as a container of the image built
from workers/Dockerfile (pgarena.local.containers) with only the environment a Fargate task gets.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from pgarena.aws.access import RESULTS_TABLE_PLACEHOLDER, Component
from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.deployment import SITE_CLUSTER_NAME, SITE_TASK_FAMILY, rule_pattern, site_parameter_name
from pgarena.aws.handler_leases import in_place_of_the_table
from pgarena.aws.sites import WorkerSite, ssm_site_reader
from pgarena.aws.store import ResultStore, create_results_table
from pgarena.aws.task_stopped import matches
from pgarena.campaign.finalize import store_writer
from pgarena.local import assets, containers, limits, signing
from pgarena.local import iam as local_iam
from pgarena.local.children import Children, reap
from pgarena.local.delay_proxy import DelayProxy
from pgarena.local.embedded import EmbeddedProcess, EmbeddedStandby, EmbeddedStartError, with_replication
from pgarena.local.endpoints import ACCOUNT, FUNCTIONS, REGION, EcsEndpoint, LambdaEndpoint, function_arn, load_handlers
from pgarena.local.environ import patched_environ
from pgarena.local.hosts import MotoHost, StateMachineHost
from pgarena.local.leases import LocalLeases, default_lease_dir, private_dir
from pgarena.local.limits import StrictLimitError
from pgarena.local.progress import Interrupted, disk_full, download, keep_execution, keep_step, release_leases, write_local
from pgarena.local.server_marks import reap_servers
from pgarena.local.stopped import stopped_lines
from pgarena.model import layout
from pgarena.model.errors import DiskFull, ErrorInfo
from pgarena.model.matrix import Campaign, Endpoint, Replica, Target
from pgarena.model.results import CampaignResults, TargetResult, now_iso
from pgarena.model.sites import SITE_ATTRIBUTE, SITES_CONTEXT_KEY, SiteMap
from pgarena.remote.execution import new_campaign_id
from pgarena.remote.follow import POLL_S, Event, follow, probe_counter, step_event
from pgarena.remote.subjects import Subjects
from pgarena.remote.workers import stop_campaign_workers, worker_clusters
from pgarena.report import publish_results
from pgarena.report.trends import refresh_trend_page
from pgarena.server.credentials import local_secret_name

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_ecs import ECSClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_ssm import SSMClient
    from mypy_boto3_stepfunctions import SFNClient

log = logging.getLogger(__name__)

ASL_PATH = Path(__file__).resolve().parents[2] / "statemachines" / "campaign.asl.json"
BUCKET = "pgarena-local-results"
TABLE = "pgarena-local-results"
STATE_MACHINE = "pgarena-campaign"
# Raw output chunks are uploaded this often by local workers (moto S3 is free): a killed worker's
# output is kept up to about a second before its end.
LOCAL_UPLOAD_EVERY_S = 1.0
# The history events a poll of the local execution reads a call: moto serializes each event it answers
# in this process, so a poll reads about what is new (in AWS a call is what counts: 1,000 a page).
LOCAL_HISTORY_PAGE = 20
# The execution endings the deployed EventBridge rule sends to finalize_stopped.
STOPPED_STATUSES: tuple[Literal["ABORTED", "FAILED", "TIMED_OUT"], ...] = ("ABORTED", "FAILED", "TIMED_OUT")
# The original matrix, kept beside results.json: `pgarena resume` re-runs what failed from it.
MATRIX_FILE = "matrix.json"
CLUSTER_ARN = f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/pgarena-local"
TASK_DEFINITION_ARN = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/pgarena-worker:1"
EXTERNAL_TASK_DEFINITION_ARN = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/pgarena-external-worker:1"


def external_instances(sites: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """One registered "external instance" per site, carrying the attribute a machine registered through
    ECS Anywhere is given (docs/guide/05-deploy.md, Sites); this machine runs their workers."""
    return {
        f"arn:aws:ecs:{REGION}:{ACCOUNT}:container-instance/pgarena-local/{site}": {
            SITE_ATTRIBUTE: site,
            "ecs.capability.external": "",
        }
        for site in sites
    }


def region_site(region: str) -> WorkerSite:
    """The worker site a site stack deployed in `region` publishes (pgarena.aws.sites), as the local runtime
    serves it: its named cluster and task family in that region; no network (the local ECS endpoint places
    no task in one)."""
    return WorkerSite(
        region=region,
        cluster_arn=f"arn:aws:ecs:{region}:{ACCOUNT}:cluster/{SITE_CLUSTER_NAME}",
        task_definition_arn=f"arn:aws:ecs:{region}:{ACCOUNT}:task-definition/{SITE_TASK_FAMILY}:1",
    )


def publish_sites(regions: tuple[str, ...]) -> None:
    """Each region's site parameter written in that region's SSM, as its site stack's deploy writes it."""
    for region in regions:
        boto3.client("ssm", region_name=region).put_parameter(
            Name=site_parameter_name(region), Value=region_site(region).model_dump_json(), Type="String", Overwrite=True
        )


def _ecs_in(region: str) -> ECSClient:
    """The region's ECS: the local endpoint, signed for the region (it answers as that region's)."""
    return boto3.client("ecs", region_name=region)


def _ssm_in(region: str) -> SSMClient:
    return boto3.client("ssm", region_name=region)


# What the template's CloudFormation references in the functions' environment stand for here (--aws-strict).
LOCAL_RESOURCES = {
    "RESULTS_BUCKET": BUCKET,
    "RESULTS_TABLE": TABLE,
    "CLUSTER_ARN": CLUSTER_ARN,
    "TASK_DEFINITION_ARN": TASK_DEFINITION_ARN,
    "WORKER_SUBNETS": "",  # the local ECS endpoint places no task in a network
    "WORKER_SECURITY_GROUPS": "",
    # Named in RunTask's overrides for another region's site only (site_regions).
    "WORKER_TASK_ROLE_ARN": f"arn:aws:iam::{ACCOUNT}:role/pgarena-local-worker",
}


@dataclass
class LocalRun:
    campaign_id: str
    status: str
    results_dir: Path
    results: CampaignResults | None
    wall_s: float
    error: str | None = None
    state_transitions: int = 0  # what Step Functions bills: states entered
    history_events: int = 0  # what Step Functions caps at 25,000 (pgarena.planning.history)
    stopped: list[str] = field(default_factory=list)  # a cancel's: one line per thing it stopped


def definition(asl_path: Path = ASL_PATH, aws_strict: bool = False) -> str:
    """The ASL file with its ${...} placeholders bound to the local functions and table; under aws_strict,
    with each inline Map's MaxConcurrency as AWS applies it (moto would run every iteration at once)."""
    text = asl_path.read_text()
    values = {f"{''.join(p.capitalize() for p in name.split('_'))}FunctionArn": function_arn(name) for name in FUNCTIONS}
    values[RESULTS_TABLE_PLACEHOLDER] = TABLE

    def bind(match: re.Match[str]) -> str:
        return values[match.group(1)]

    text = re.sub(r"\$\{(\w+)\}", bind, text)
    if not aws_strict:
        return text
    capped, notes = limits.capped_definition(json.loads(text))
    for note in notes:
        log.info("aws-strict: %s", note)
    return json.dumps(capped)


@contextmanager
def fresh_default_session() -> Iterator[None]:
    """boto3's default session made anew from the environment, now and on exit: it caches the credentials
    it first found, which would be an earlier run's key (or none this run's endpoints answer)."""
    boto3.DEFAULT_SESSION = None
    try:
        yield
    finally:
        boto3.DEFAULT_SESSION = None


def _with_embedded_endpoints(
    campaign: Campaign,
    stack: ExitStack,
    servers_root: Path | None,
    record: Callable[[str, int | None], None] = lambda what, pid: None,
) -> tuple[Campaign | None, dict[str, ErrorInfo]]:
    """Start each embedded target's server and point the target at it: at a delay proxy in front of it when
    the target asks for network_delay_ms (a far server), stopped with it. A server that will not start is
    its target's failure: the target is left out of the execution and its error returned, by name (None
    for the campaign when no target is left)."""
    targets: list[Target] = []
    unstarted: dict[str, ErrorInfo] = {}
    for target in campaign.targets:
        if target.embedded is None:
            targets.append(target)
            continue
        embedded = target.embedded
        server = EmbeddedProcess(
            target.name, with_replication(embedded.settings, embedded.replicas), root=servers_root, password_auth=True
        )
        stack.callback(server.stop)
        try:
            endpoint = server.start()
            record("postmaster", server.pid)
            if embedded.network_delay_ms > 0:
                proxy = DelayProxy(endpoint.host, endpoint.port, embedded.network_delay_ms)
                stack.callback(proxy.stop)
                endpoint = endpoint.model_copy(update={"port": proxy.start()})
                record("proxy", proxy.pid)
            replicas = list(target.replicas)
            for i in range(1, embedded.replicas + 1):
                standby = EmbeddedStandby(f"{target.name}-standby{i}", server, embedded.replica_settings, root=servers_root)
                stack.callback(standby.stop)  # before the primary's: the callbacks run last in, first out
                replicas.append(Replica(name=f"standby{i}", kind="physical", endpoint=standby.start()))
                record("postmaster", standby.pid)
        except EmbeddedStartError as failure:
            unstarted[target.name] = ErrorInfo(kind=failure.kind, message=str(failure))
            continue
        targets.append(target.model_copy(update={"embedded": None, "endpoint": endpoint, "replicas": replicas}))
    if not targets:
        return None, unstarted
    update: dict[str, object] = {"targets": targets}
    sweep = campaign.scenario.consolidation if campaign.scenario else None
    if campaign.scenario and sweep and unstarted:  # the sweep ends with every target that started running at once
        steps = [n for n in sweep.steps if n < len(targets)] + [len(targets)]
        update["scenario"] = campaign.scenario.model_copy(update={"consolidation": sweep.model_copy(update={"steps": steps})})
    return campaign.model_copy(update=update), unstarted


def with_unstarted_targets(
    results: CampaignResults, campaign: Campaign | None, unstarted: dict[str, ErrorInfo]
) -> CampaignResults:
    """The campaign's results with its unstartable targets listed as failed, in the matrix's order."""
    if campaign is None or not unstarted:
        return results
    measured = {t.name: t for t in results.targets}
    targets = [
        measured.get(t.name)
        or TargetResult(
            name=t.name, provider=t.provider, status="failed", error=unstarted.get(t.name), hourly_cost_usd=t.hourly_cost_usd
        )
        for t in campaign.targets
        if t.name in measured or t.name in unstarted
    ]
    return results.model_copy(update={"targets": targets})


def _create_resources(sfn: SFNClient, s3: S3Client, dynamodb: DynamoDBClient, aws_strict: bool) -> str:
    s3.create_bucket(Bucket=BUCKET)
    create_results_table(dynamodb, TABLE)
    return sfn.create_state_machine(
        name=STATE_MACHINE,
        definition=definition(aws_strict=aws_strict),
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/pgarena-local",
    )["stateMachineArn"]


def _download(s3: S3Client, prefix: str, out_dir: Path) -> None:
    download(s3, BUCKET, prefix, out_dir)


@dataclass
class Execution:
    campaign_id: str
    arn: str
    results_dir: Path
    t0: float
    campaign: Campaign | None = None  # as started: embedded targets already given their endpoints
    matrix: Campaign | None = None  # as the user gave it
    unstarted: dict[str, ErrorInfo] = field(default_factory=dict)  # embedded targets whose server did not start


class LocalRuntime:
    """moto (Step Functions interpreter, S3, DynamoDB), the local Lambda and ECS endpoints, and the
    embedded servers, for as long as the context lasts. Several campaigns may run at once: they share
    the DynamoDB table, and so the connection leases, as campaigns in one AWS account do.

    aws_strict: the handlers run from their synthesized assets in the runtime's interpreter, and AWS's
    limits hold (module docstring). iam_template: a synthesized template whose roles' policies moto
    enforces (pgarena.local.iam); in strict mode, the synthesized stack's own. container_workers: workers
    run as containers of the worker image (module docstring); by default as aws_strict says. external_sites:
    the external sites (ECS Anywhere) this runtime serves, as a stack deployed with them in
    pgarena:external_sites would: their targets' workers start as EXTERNAL tasks, placed on a local
    "registered instance" carrying the site's attribute. site_regions: the other regions with a worker site,
    as a stack deployed with them in pgarena:sites would: each site's parameter is in its region's SSM, and
    its targets' workers are launched through that region's ECS (the local endpoint, signed for the region)."""

    def __init__(
        self,
        out_dir: Path,
        servers_root: Path | None = None,
        heartbeat_s: float = 10.0,
        aws_strict: bool = False,
        iam_template: dict[str, Any] | None = None,
        container_workers: bool | None = None,
        worker_size: containers.WorkerSize = containers.WorkerSize(),
        host: StateMachineHost | None = None,
        external_sites: tuple[str, ...] = (),
        site_regions: tuple[str, ...] = (),
    ):
        self.host: StateMachineHost = host or MotoHost()
        if (iam_template is not None or aws_strict) and self.host.name != "moto":
            # Enforced IAM is moto's (pgarena.local.iam), and strict mode enforces the template's roles.
            raise ValueError(f"aws_strict and iam_template need the moto host: the {self.host.name} host enforces no IAM")
        self.out_dir = out_dir
        self.external_sites = external_sites
        self.site_regions = site_regions
        self.site_map = SiteMap(home_region=REGION, regions=frozenset(site_regions), external=frozenset(external_sites))
        # The task-stopped rules the stacks deploy, by region: home's on its cluster, each site's on its own.
        self.task_stopped_rules = [
            (REGION, rule_pattern(CLUSTER_ARN)),
            *((region, rule_pattern(region_site(region).cluster_arn)) for region in site_regions),
        ]
        self.task_stopped_deliveries: list[tuple[str, str]] = []  # (the rule's region, the task) as delivered
        # What Validate And Plan and launch_worker read of the stack's sites (the template's are none).
        self.sites_env = {
            "WORKER_SITE_REGIONS": ",".join(site_regions),
            "WORKER_EXTERNAL_SITES": ",".join(external_sites),
            "EXTERNAL_TASK_DEFINITION_ARN": EXTERNAL_TASK_DEFINITION_ARN if external_sites else "",
        }
        self.worker_size = worker_size
        self.container_workers = aws_strict if container_workers is None else container_workers
        # The synthesized template: when given, moto enforces its roles' policies (pgarena.local.iam).
        self.iam_template = iam_template
        self.servers_root = servers_root
        self.heartbeat_s = heartbeat_s
        self.aws_strict = aws_strict
        self.iam_users: local_iam.LocalIam | None = None
        self.stack = ExitStack()
        self.endpoint_urls: dict[str, str] = {}  # AWS_ENDPOINT_URL[_SERVICE] -> this runtime's stand-in
        self.own_executions: set[str] = set()  # started by start(): their stops are finalized by _stop
        # This run's key: its processes sign with it, and its endpoints answer nothing else (pgarena.local.signing).
        self.credentials = signing.new_credentials(ACCOUNT)
        self.keys = signing.RunKeys([self.credentials])

    def component_env(self, component: Component) -> dict[str, str]:
        """The AWS settings a component that runs outside this process (a function under aws_strict, a
        worker) starts with: region, credentials and the local endpoints. Every such process gets them
        from here, so credentials of the component's own role belong here."""
        env = {
            **self.credentials.env(),
            "AWS_SESSION_TOKEN": "local",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            **self.endpoint_urls,
        }
        # With IAM enforced, each component signs as its own role's user: moto authorizes its calls.
        credentials = self.iam_users.components.get(component) if self.iam_users is not None else None
        return local_iam.signing_env(env, credentials) if credentials is not None else env

    def _function_env(self, component: Component) -> dict[str, str]:
        # No X-Ray daemon and no CloudWatch metrics here; the log level as the user runs the CLI.
        return {
            **self.component_env(component),
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": os.environ.get("POWERTOOLS_LOG_LEVEL", "WARNING"),
        }

    def _synthesized(self) -> Path:
        """The app synthesized as deployed with this runtime's worker sites (their grants: RunTask, PassRole,
        the site's parameter)."""
        sites = [{"region": region} for region in self.site_regions]
        return assets.synthesized_app(context={SITES_CONTEXT_KEY: sites} if sites else None)

    def _asset_handlers(self) -> dict[str, assets.AssetFunction]:
        """Each function of the synthesized template, served from its asset (--aws-strict)."""
        found = assets.function_assets(self._synthesized())
        missing = sorted(set(FUNCTIONS) - set(found))
        if missing:
            raise assets.AssetError(f"the synthesized template has no function for {', '.join(missing)}")
        packages = assets.runtime_packages()
        handlers = {}
        for name in FUNCTIONS:
            asset, component = found[name], Component(name)
            environment = asset.local_environment(LOCAL_RESOURCES)
            arn = function_arn(name)

            # The defaults bind this function's values (a closure would see the loop's last ones).
            def function_env(environment: dict[str, str] = environment, component: Component = component) -> dict[str, str]:
                return {**environment, **self.sites_env, **self._function_env(component)}

            handler = assets.AssetFunction(
                asset,
                arn.rsplit(":", 1)[1],
                arn,
                function_env,
                packages,
                self.out_dir / "logs",
            )
            self.stack.callback(handler.close)
            handlers[handler.function_name] = handler
        return handlers

    def __enter__(self) -> LocalRuntime:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the moto server's access log drowns the progress
        stack = self.stack
        aws_env = {
            **self.credentials.env(),
            "AWS_SESSION_TOKEN": "local",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            "RESULTS_BUCKET": BUCKET,
            "RESULTS_TABLE": TABLE,
            "CLUSTER_ARN": CLUSTER_ARN,
            "TASK_DEFINITION_ARN": TASK_DEFINITION_ARN,
            "WORKER_CONTAINER_NAME": "worker",
            "LAUNCH_TYPE": "FARGATE",
            **self.sites_env,
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": os.environ.get("POWERTOOLS_LOG_LEVEL", "WARNING"),
            # Leases in files every local runtime on this machine shares (pgarena.local.leases.FileLeases).
            # Checked here, before anything starts: an unsafe folder is refused with its fix, not in a handler.
            "PGARENA_LEASE_DIR": str(private_dir(Path(os.environ.get("PGARENA_LEASE_DIR") or default_lease_dir()))),
        }
        lease_dir = Path(aws_env["PGARENA_LEASE_DIR"])
        try:
            # What coordinators that died without stopping their children left running, stopped first;
            # this runtime's own children are recorded as they start, the records dropped once stopped.
            for message in [*reap(self.out_dir), *reap_servers()]:  # and the server users and folders they made
                log.warning("%s", message)
            self.children = Children(self.out_dir)
            stack.callback(self.children.close)
            stack.enter_context(patched_environ(aws_env))
            stack.enter_context(fresh_default_session())
            self.endpoint_urls["AWS_ENDPOINT_URL"] = self.host.open(stack, self.credentials, self.keys)
            self.lambda_handlers = self._asset_handlers() if self.aws_strict else load_handlers()
            # The handlers run here lease in those files (and, for a target preflighted on its site, in
            # the table too); a bundle run as --aws-strict runs it leases in the table, as in AWS.
            stack.enter_context(in_place_of_the_table(partial(LocalLeases, lease_dir)))
            lambdas = stack.enter_context(LambdaEndpoint(self.lambda_handlers, self.keys))
            # The interpreter's Lambda tasks reach the real handlers, signed with the run's key.
            self.host.serve_lambda(stack, lambdas.url, self.credentials)
            self.workers = stack.enter_context(
                EcsEndpoint(
                    # What a task gets besides RunTask's overrides: all a worker process has, besides its
                    # PATH and its tools' locations (pgarena.local.task_env).
                    worker_env={
                        **self.component_env(Component.WORKER),
                        "PGARENA_HEARTBEAT_S": str(self.heartbeat_s),
                        "PGARENA_UPLOAD_EVERY_S": str(LOCAL_UPLOAD_EVERY_S),
                    },
                    logs_dir=self.out_dir / "logs",
                    keys=self.keys,
                    workers=self._container_workers() if self.container_workers else None,
                    children=self.children,
                    instances=external_instances(self.external_sites),
                    on_stopped=self._task_stopped,
                )
            )
            stack.callback(self.workers.stop_all)
            self.endpoint_urls.update({"AWS_ENDPOINT_URL_LAMBDA": lambdas.url, "AWS_ENDPOINT_URL_ECS": self.workers.url})
            stack.enter_context(
                patched_environ({"AWS_ENDPOINT_URL_LAMBDA": lambdas.url, "AWS_ENDPOINT_URL_ECS": self.workers.url})
            )
            # Strict: the synthesized stack's own roles are enforced, each function and the worker
            # signing as its role (component_env).
            template = self.iam_template
            if template is None and self.aws_strict:
                template = assets.home_template(self._synthesized())
            if template is not None:
                self._enforce_iam(stack, template)
            self.sfn = boto3.client("stepfunctions", region_name=REGION)
            self.s3 = boto3.client("s3", region_name=REGION)
            self.dynamodb = boto3.client("dynamodb", region_name=REGION)
            self.machine_arn = _create_resources(self.sfn, self.s3, self.dynamodb, self.aws_strict)
            publish_sites(self.site_regions)
            self.store = ResultStore(BUCKET, TABLE, s3=self.s3, dynamodb=self.dynamodb)
        except BaseException:
            stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()

    def _container_workers(self) -> containers.ContainerWorkers:
        image = containers.build_image()
        for message in containers.reap_containers():  # those whose `docker run` was gone before it was recorded
            log.warning("%s", message)
        return containers.ContainerWorkers(image, self.worker_size)

    def _enforce_iam(self, stack: ExitStack, template: dict[str, Any]) -> None:
        """Workers sign as the task role's user, the interpreter's DynamoDB tasks as the state machine
        role's; this process (the operator, Step Functions' other calls, and the handlers until they run
        in their own processes) as an unrestricted one."""
        names = local_iam.LocalNames(BUCKET, TABLE, ACCOUNT, REGION, STATE_MACHINE)
        users = local_iam.provision(boto3.client("iam", region_name=REGION), template, names)
        self.iam_users = users
        for credentials in (users.runtime, *users.components.values()):  # the endpoints answer them too
            self.keys.add(credentials)
        self.workers.worker_env = local_iam.signing_env(self.workers.worker_env, users.components[Component.WORKER])
        stack.enter_context(local_iam.signing_as(users.runtime))
        if Component.STATE_MACHINE in users.components:  # its own DynamoDB tasks sign as its role
            stack.enter_context(local_iam.state_machine_signing_as(users.components[Component.STATE_MACHINE]))
        stack.enter_context(local_iam.enforced())

    def start(self, campaign: Campaign) -> Execution:
        """Start the campaign's embedded servers and its execution; return without waiting."""
        t0 = time.monotonic()
        campaign_id = new_campaign_id(campaign.campaign)
        started_at = now_iso()
        results_dir = self.out_dir / campaign_id
        results_dir.mkdir(parents=True, exist_ok=True)  # first: each server started is recorded there

        def record(what: str, pid: int | None) -> None:
            if pid is not None:
                self.children.add(campaign_id, what, pid)

        resolved, unstarted = _with_embedded_endpoints(campaign, self.stack, self.servers_root, record)
        if resolved is not None:  # a worker's environment holds none of this process's variables
            resolved = self._with_secret_passwords(resolved)
        write_local(results_dir / MATRIX_FILE, campaign.model_dump_json(exclude_none=True, indent=2).encode())
        if resolved is None:  # no server started: nothing for the state machine to run
            self._put_results(
                campaign_id,
                CampaignResults(
                    campaign_id=campaign_id,
                    campaign=campaign.campaign,
                    started_at=started_at,
                    finished_at=now_iso(),
                    targets=[],
                    ranking=[],
                ),
                campaign,
                unstarted,
            )
            return Execution(campaign_id, "", results_dir, t0, None, campaign, unstarted)
        matrix = resolved.model_dump(mode="json", exclude_none=True)
        # A bare matrix, as `aws stepfunctions start-execution --input file://matrix.json` gives it: the
        # campaign id is the execution's name.
        execution_input = json.dumps(matrix)
        if self.aws_strict:
            _check_limits(execution_input)
        keep_execution(results_dir, campaign_id, matrix, started_at)
        arn = self.sfn.start_execution(stateMachineArn=self.machine_arn, name=campaign_id, input=execution_input)["executionArn"]
        self.own_executions.add(arn)
        return Execution(campaign_id, arn, results_dir, t0, resolved, campaign, unstarted)

    def _with_secret_passwords(self, campaign: Campaign) -> Campaign:
        """The passwords given by environment variable (the embedded servers', and those the user exported)
        as Secrets Manager secrets (`pgarena/...`, which the functions' roles may read), as a target's
        password reaches Lambda and Fargate in AWS: a function's or a worker's environment holds no
        variable of the user's shell."""
        secretsmanager = boto3.client("secretsmanager", region_name=REGION)

        def by_secret(endpoint: Endpoint) -> Endpoint:
            name = endpoint.password_env
            if not name or name not in os.environ:
                return endpoint
            secret = local_secret_name(name, uuid.uuid4().hex[:8])  # a failed login names `name` (credential_of)
            arn = secretsmanager.create_secret(Name=secret, SecretString=os.environ[name])["ARN"]
            return endpoint.model_copy(update={"password_env": None, "password_secret_arn": arn})

        targets = [
            target.model_copy(
                update={
                    "endpoint": by_secret(target.endpoint),
                    "replicas": [r.model_copy(update={"endpoint": by_secret(r.endpoint)}) for r in target.replicas],
                }
            )
            if target.endpoint is not None
            else target
            for target in campaign.targets
        ]
        return campaign.model_copy(update={"targets": targets})

    def _put_results(
        self, campaign_id: str, results: CampaignResults, matrix: Campaign | None, unstarted: dict[str, ErrorInfo]
    ) -> None:
        """results.json and the reports, with the targets whose server did not start listed as failed."""
        publish_results(with_unstarted_targets(results, matrix, unstarted), store_writer(self.store, campaign_id))

    def wait(self, execution: Execution, on_event: Callable[[Event], None] = lambda event: None) -> LocalRun:
        """Follow the execution to its end, reporting progress; then copy its results to the results folder."""
        for name, failure in execution.unstarted.items():
            on_event(Event(time.monotonic() - execution.t0, "state", f"Target Failed {name}: {failure.message}"))
        if not execution.arn:  # no target started: its results.json is already written
            return self._collect(execution, "SUCCEEDED", None)
        poll = None
        for poll in follow(
            self.sfn,
            execution.arn,
            execution.t0,
            lambda: self.store.summaries(execution.campaign_id),
            POLL_S,
            Subjects(CampaignState(self.store)),
            probe_counter(self.s3, BUCKET, execution.campaign_id),
            LOCAL_HISTORY_PAGE,
        ):
            for event in [*poll.states, *poll.probes]:
                on_event(event)
            # only the events this poll brought: the earlier ones were checked by the polls before
            violations = limits.oversized_states(poll.history[poll.seen :]) if self.aws_strict else []
            if violations:
                return self._fail(execution, limits.DATA_LIMIT_ERROR, violations[0].cause)
            for summary in poll.steps:
                keep_step(self.s3, BUCKET, summary, self.out_dir)  # kept now, whatever happens next
                on_event(step_event(summary, execution.t0))
        assert poll is not None  # follow yields at least once
        status, history = poll.status, poll.history
        if self.aws_strict and status["status"] in ("FAILED", "TIMED_OUT"):
            # moto fails a Task whose result is past 256 KiB itself, naming the service, not the state.
            if status.get("error") == limits.DATA_LIMIT_ERROR:
                status = {**status, "cause": limits.unfinished_state_cause(history)}
            self.execution_stopped(execution.arn, status["status"], status["startDate"])
        error = None if status["status"] == "SUCCEEDED" else f"{status.get('error')}: {status.get('cause')}"
        transitions = sum(1 for event in history if event["type"].endswith("StateEntered"))
        return self._collect(execution, status["status"], error, transitions, len(history))

    def _collect(self, execution: Execution, status: str, error: str | None, transitions: int = 0, events: int = 0) -> LocalRun:
        """The campaign's folder completed from the bucket (with the targets that never started, when an
        execution ran), and the run as the caller reports it."""
        if execution.arn and execution.unstarted:
            self._add_unstarted(execution)
        _download(self.s3, layout.campaign_prefix(execution.campaign_id), self.out_dir)
        results_path = execution.results_dir / layout.RESULTS_FILE
        results = CampaignResults.model_validate_json(results_path.read_text()) if results_path.exists() else None
        if results is not None:
            refresh_trend_page(self.out_dir, results.campaign)
        return LocalRun(
            execution.campaign_id,
            status,
            execution.results_dir,
            results,
            time.monotonic() - execution.t0,
            error,
            transitions,
            events,
        )

    def _add_unstarted(self, execution: Execution) -> None:
        try:
            data = self.store.get_json(layout.campaign_prefix(execution.campaign_id) + layout.RESULTS_FILE)
        except Exception:  # the execution wrote none (it failed): nothing to add to
            return
        self._put_results(execution.campaign_id, CampaignResults.model_validate(data), execution.matrix, execution.unstarted)

    def run(self, campaign: Campaign, on_event: Callable[[Event], None] = lambda event: None) -> LocalRun:
        """Start the campaign and follow it to its end; Ctrl-C (KeyboardInterrupt) cancels it instead."""
        execution = self.start(campaign)
        try:
            return self.wait(execution, on_event)
        except KeyboardInterrupt:  # stop everything, keep what finished
            try:
                return self.cancel(execution)
            except KeyboardInterrupt:  # a second Ctrl-C: what finished is in the folder already
                raise Interrupted(execution.results_dir) from None
        except DiskFull as error:
            raise disk_full(error, execution.results_dir) from None
        finally:  # a campaign that ended early keeps no slots in the leases other local runs share
            release_leases(Path(os.environ["PGARENA_LEASE_DIR"]), execution.campaign_id)

    def cancel(self, execution: Execution) -> LocalRun:
        """Stop the campaign as Ctrl-C does: StopExecution, StopTask its workers (each records the step it
        was running as `cancelled`, its output kept), give its connection leases back, and write a
        results.json marked cancelled that lists every target and step with what finished."""
        if not execution.arn:  # nothing was started: its results are already written
            return self.wait(execution)
        stopped = self._stop(execution, "ABORTED", "Cancelled", "stopped by the user")
        # ABORTED, as StopExecution leaves it in AWS. moto's interpreter reports RUNNING until the task it
        # waited on answers (pgarena.local.interpreter keeps it ABORTED then).
        run = self._collect(execution, "ABORTED", "cancelled")
        run.stopped = stopped_lines(execution.campaign_id, stopped, self.workers.tasks)
        return run

    def _stop(self, execution: Execution, ending: str, error: str, cause: str) -> list[str]:
        """StopExecution, StopTask its workers, then finalize_stopped with the ending AWS would report; returns
        the worker tasks stopped."""
        self.sfn.stop_execution(executionArn=execution.arn, error=error, cause=cause)
        started = self.sfn.describe_execution(executionArn=execution.arn)["startDate"]
        stopped: list[str] = []
        for _ in range(2):  # a worker may have been launched while the execution stopped: look twice
            stopped += self._stop_workers(execution.campaign_id, cause)
            time.sleep(POLL_S)
        self.execution_stopped(execution.arn, ending, started)
        return stopped

    def _stop_workers(self, campaign_id: str, reason: str) -> list[str]:
        """As `pgarena run --aws`'s Ctrl-C does (pgarena.remote.workers): StopTask on the campaign's workers in
        every site's cluster, each through its region's ECS; then ECS's stop timeout for those tasks."""
        clusters, problems = worker_clusters(self.site_map, CLUSTER_ARN, ssm_site_reader(_ssm_in))
        stopped = stop_campaign_workers(_ecs_in, clusters, campaign_id, reason)
        for problem in [*problems, *stopped.problems]:
            log.warning("%s", problem)
        arns = [arn for arns in stopped.tasks.values() for arn in arns]
        self.workers.wait_stopped(arns)
        return arns

    def execution_stopped(self, execution_arn: str, status: str, started: datetime) -> None:
        """What EventBridge's execution status change does in AWS: the finalize_stopped function ends it."""
        change = {
            "source": "aws.states",
            "detail-type": "Step Functions Execution Status Change",
            "detail": {"executionArn": execution_arn, "status": status, "startDate": int(started.timestamp() * 1000)},
        }
        answer = boto3.client("lambda", region_name=REGION).invoke(
            FunctionName=function_arn("finalize_stopped"), Payload=json.dumps(change).encode()
        )
        if "FunctionError" in answer:
            log.error("finalizing the %s campaign failed: %s", status.lower(), answer["Payload"].read().decode())

    def _task_stopped(self, change: dict[str, Any]) -> None:
        """What EventBridge's rules on the workers' task state changes do in AWS: the state change goes to the
        rule of its region on its cluster (the home stack's, or the site stack's in the site's region), whose
        task_stopped function fails the step of a worker that never ran. A change no rule matches is dropped."""
        region = next((region for region, pattern in self.task_stopped_rules if matches(pattern, change)), None)
        if region is None:
            log.warning("no rule takes the stop of %s: its step waits for the heartbeat timeout", change["detail"]["taskArn"])
            return
        self.task_stopped_deliveries.append((region, change["detail"]["taskArn"]))
        try:
            answer = boto3.client("lambda", region_name=region).invoke(
                FunctionName=function_arn("task_stopped", region), Payload=json.dumps(change).encode()
            )
        except (BotoCoreError, ClientError) as error:  # the runtime stopping: its step ends with it
            log.warning("the stop of a worker that did not start could not be reported: %s", error)
            return
        if "FunctionError" in answer:
            log.error("failing the step of a worker that did not start failed: %s", answer["Payload"].read().decode())

    @contextmanager
    def status_change_rule(self) -> Iterator[None]:
        """EventBridge's rule on execution status changes, for executions started from outside this
        runtime (`pgarena run --aws --endpoint-url` pointed at its moto server): one that ends ABORTED,
        FAILED or TIMED_OUT is finalized by the finalize_stopped function, as the deployed rule does."""
        done = threading.Event()
        finalized: set[str] = set()

        def watch() -> None:
            while not done.wait(POLL_S):
                for status in STOPPED_STATUSES:
                    for item in self.sfn.list_executions(stateMachineArn=self.machine_arn, statusFilter=status)["executions"]:
                        arn = item["executionArn"]
                        if arn not in finalized and arn not in self.own_executions:
                            finalized.add(arn)
                            self.execution_stopped(arn, status, item["startDate"])

        watcher = threading.Thread(target=watch, name="status-change-rule", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()

    def _fail(self, execution: Execution, error: str, cause: str) -> LocalRun:
        """End the execution as AWS fails it on an error no Catch handles (--aws-strict's limits): its
        workers stop and finalize_stopped writes what finished, marked failed."""
        log.error("aws-strict: %s: %s", error, cause)
        self._stop(execution, "FAILED", error, cause)
        return self._collect(execution, "FAILED", f"{error}: {cause}")


def _check_limits(execution_input: str) -> None:
    """Refuse what AWS would not start: an execution input past 256 KiB. (What AWS would not run as planned,
    a fan-out past 40, is refused by validation.)"""
    size = limits.payload_size(execution_input)
    if size > limits.MAX_PAYLOAD_BYTES:
        raise StrictLimitError(
            f"the execution input (the matrix) is {size:,} bytes: StartExecution accepts at most {limits.MAX_PAYLOAD_BYTES:,}"
        )


def run_local(
    campaign: Campaign,
    out_dir: Path,
    on_event: Callable[[Event], None] = lambda event: None,
    servers_root: Path | None = None,
    heartbeat_s: float = 10.0,
    aws_strict: bool = False,
    iam_template: dict[str, Any] | None = None,
    container_workers: bool | None = None,
    worker_size: containers.WorkerSize = containers.WorkerSize(),
    external_sites: tuple[str, ...] = (),
    site_regions: tuple[str, ...] = (),
) -> LocalRun:
    """Run one campaign through the state machine on this machine; results land in out_dir/<campaign_id>/.
    aws_strict: as AWS would run it (LocalRuntime); container_workers: workers as containers of the image;
    external_sites, site_regions: the external sites and the other regions' worker sites served (LocalRuntime)."""
    with LocalRuntime(
        out_dir,
        servers_root,
        heartbeat_s,
        aws_strict,
        iam_template,
        container_workers,
        worker_size,
        external_sites=external_sites,
        site_regions=site_regions,
    ) as runtime:
        return runtime.run(campaign, on_event)
