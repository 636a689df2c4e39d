"""The one place that builds a handler's adapters from its environment: the results store, the campaign's
records, the ledger, the leases, the worker slots and the state machine's executions, each made when first
asked for, and the AWS clients they use (`client`: no handler makes its own).

An adapter's module is imported when the adapter is first asked for: task_stopped, whose function is
deliberately small (no settings, SendTaskFailure only), loads the executions and nothing of the results."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import boto3

from pgarena.aws.deployment import STACK_NAME
from pgarena.aws.executions import StepFunctionsExecutions
from pgarena.aws.settings import BucketEnv, FromEnv, LauncherEnv, ResultsEnv, TableEnv
from pgarena.aws.sites import ssm_site_reader
from pgarena.campaign.ports import EndPorts, SlotState

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_ecs import ECSClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_ssm import SSMClient
    from mypy_boto3_stepfunctions import SFNClient

    from pgarena.aws.alerts import EventAlerts
    from pgarena.aws.campaign_state import CampaignState
    from pgarena.aws.cloudwatch import CloudWatchMetrics
    from pgarena.aws.history_index import HistoryIndex
    from pgarena.aws.launch import EcsLauncher
    from pgarena.aws.ledger import Ledger
    from pgarena.aws.store import BucketDocuments, ResultStore
    from pgarena.aws.worker_slots import DynamoWorkerSlots
    from pgarena.campaign.leases import Leases
    from pgarena.model.warm import WorkerSlot

Env = TypeVar("Env", bound=FromEnv)

# What a client is made from: boto3's default session (which reads the keys once: the local runtime makes
# a new one when its keys change), the region and the endpoints. A warm Lambda container keeps its clients
# from one invocation to the next, as AWS advises (making one costs about 4 ms of CPU, three or four an
# invocation); the local runtime, which runs the handlers in its own process, changes keys and endpoints
# from one run to the next, and gets new clients then.
_MADE_FROM = ("AWS_REGION", "AWS_DEFAULT_REGION")
_clients: dict[tuple[str, str | None], Any] = {}
_made_from: list[object] = [None, None]  # the session (held: its id is never another's), the environment
_clients_lock = threading.Lock()


def client(service: str, region: str | None = None) -> Any:
    """boto3's client for `service` (in `region`, else the environment's), made once for what it is made from."""
    with _clients_lock:  # a session is not thread-safe; its clients are
        if boto3.DEFAULT_SESSION is None:
            boto3.setup_default_session()
        endpoints = sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_ENDPOINT_URL"))
        environment = ([os.environ.get(name) for name in _MADE_FROM], endpoints)
        if _made_from[0] is not boto3.DEFAULT_SESSION or _made_from[1] != environment:
            _clients.clear()
            _made_from[:] = [boto3.DEFAULT_SESSION, environment]
        if (service, region) not in _clients:
            _clients[service, region] = boto3.client(service, region_name=region)  # type: ignore[call-overload]  # a runtime name
        return _clients[service, region]


def _ecs_in(region: str) -> ECSClient:
    return cast("ECSClient", client("ecs", region))


def _ssm_in(region: str) -> SSMClient:
    return cast("SSMClient", client("ssm", region))


# Made once per Lambda container: each site's parameter is read at a launch, then kept a minute. The stack
# sets STACK_NAME, which names its sites' parameters (the local runtime's are the default stack's).
_site_in = ssm_site_reader(_ssm_in, os.environ.get("STACK_NAME", STACK_NAME))


@dataclass
class Dependencies(Generic[Env]):
    env: Env

    @classmethod
    def of(cls, env_model: type[Env]) -> Dependencies[Env]:
        return cls(env_model.from_env())

    @property
    def tables(self) -> TableEnv:
        """The results bucket and table, which every handler but start_campaign and task_stopped reads."""
        if not isinstance(self.env, TableEnv):
            raise TypeError(f"{type(self.env).__name__} names no results table")
        return self.env

    @cached_property
    def dynamodb(self) -> DynamoDBClient:
        return cast("DynamoDBClient", client("dynamodb"))

    @cached_property
    def s3(self) -> S3Client:
        return cast("S3Client", client("s3"))

    @cached_property
    def store(self) -> ResultStore:
        from pgarena.aws.store import ResultStore

        return ResultStore(self.tables.results_bucket, self.tables.results_table, s3=self.s3, dynamodb=self.dynamodb)

    @cached_property
    def documents(self) -> BucketDocuments:
        """The results bucket's documents, for a handler that has the bucket and no table (start_campaign)."""
        from pgarena.aws.store import BucketDocuments

        if not isinstance(self.env, BucketEnv):
            raise TypeError(f"{type(self.env).__name__} names no results bucket")
        return BucketDocuments(self.s3, self.env.results_bucket)

    @cached_property
    def records(self) -> CampaignState:
        from pgarena.aws.campaign_state import CampaignState

        return CampaignState(self.store)

    @cached_property
    def worker_slots(self) -> DynamoWorkerSlots:
        from pgarena.aws.worker_slots import DynamoWorkerSlots

        return DynamoWorkerSlots(self.dynamodb, self.tables.results_table)

    @cached_property
    def ledger(self) -> Ledger:
        from pgarena.aws.ledger import Ledger

        return Ledger(self.dynamodb, self.tables.results_table)

    @cached_property
    def leases(self) -> Leases:
        # The table's, unless the process running the handlers put another in place (the local runtime's
        # leases in files, which every local campaign on the machine shares: pgarena.aws.handler_leases).
        from pgarena.aws.handler_leases import handler_leases
        from pgarena.aws.leases import LeaseStore

        return handler_leases(LeaseStore(self.dynamodb, self.tables.results_table))

    @cached_property
    def launcher(self) -> EcsLauncher:
        """ECS RunTask in the home cluster, a site region's or an external site's (launch_worker)."""
        from pgarena.aws.launch import EcsLauncher

        if not isinstance(self.env, LauncherEnv):
            raise TypeError(f"{type(self.env).__name__} names no worker cluster")
        return EcsLauncher(cast("ECSClient", client("ecs")), self.env, ecs_in=_ecs_in, site_in=_site_in)

    def read_slot(self, region: str | None, table: str, slot: WorkerSlot) -> SlotState | None:
        """A warm worker's slot in the results table `table` of `region` (a stopped task's home; None: this
        region): what task_stopped reads to find the step a stopped worker held."""
        from pgarena.aws.worker_slots import DynamoWorkerSlots

        return DynamoWorkerSlots(cast("DynamoDBClient", client("dynamodb", region)), table).read(slot)

    def executions(self, region: str | None = None) -> StepFunctionsExecutions:
        """The state machine's executions in `region` (None: the function's own)."""
        return StepFunctionsExecutions(cast("SFNClient", client("stepfunctions", region)))

    def ending(self, *, leases: bool) -> EndPorts:
        """What finalize goes through: the store, the ledger, the worker slots, the leases when the ending
        gives them back (Aggregate And Rank's targets gave theirs back at Release Connection Lease), the
        index of finished runs, the targets' CloudWatch metrics and where to publish the change points a run
        found first."""
        return EndPorts(
            self.store,
            self.ledger,
            self.leases if leases else None,
            self.worker_slots,
            self.history_index,
            self.metrics,
            self.alerts,
        )

    @cached_property
    def metrics(self) -> CloudWatchMetrics:
        """CloudWatch's GetMetricData, in the region each target's instance is in (finalize)."""
        from pgarena.aws.cloudwatch import CloudWatchMetrics

        return CloudWatchMetrics(lambda region: cast("CloudWatchClient", client("cloudwatch", region)))

    @cached_property
    def history_index(self) -> HistoryIndex:
        """The index of finished runs by campaign name, which finalize adds each run to."""
        from pgarena.aws.history_index import HistoryIndex

        return HistoryIndex(self.dynamodb, self.tables.results_table)

    @cached_property
    def alerts(self) -> EventAlerts:
        """Where finalize publishes the change points a run found first: the stack's bus, and its topic if any."""
        from pgarena.aws.alerts import EventAlerts

        if not isinstance(self.env, ResultsEnv):
            raise TypeError(f"{type(self.env).__name__} names no alert bus")
        topic = self.env.alert_topic_arn or None
        sns = client("sns") if topic else None
        return EventAlerts(client("events"), self.env.alert_event_bus, self.env.results_bucket, sns, topic)
