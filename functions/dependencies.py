"""One place that builds a handler's adapters from its environment: the results store, the campaign's
records, the ledger and the leases, each made when first asked for, and the AWS clients they use."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import boto3

from pgarena.aws.campaign_state import CampaignState
from pgarena.aws.leases import LeaseStore
from pgarena.aws.ledger import Ledger
from pgarena.aws.settings import ResultsEnv, TableEnv
from pgarena.aws.store import ResultStore
from pgarena.aws.worker_slots import DynamoWorkerSlots
from pgarena.campaign.leases import Leases
from pgarena.local.leases import LocalLeases

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

Env = TypeVar("Env", bound=TableEnv)

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


@dataclass
class Dependencies(Generic[Env]):
    env: Env

    @classmethod
    def of(cls, env_model: type[Env]) -> Dependencies[Env]:
        return cls(env_model.from_env())

    @cached_property
    def dynamodb(self) -> DynamoDBClient:
        return cast("DynamoDBClient", client("dynamodb"))

    @cached_property
    def store(self) -> ResultStore:
        s3 = cast("S3Client", client("s3"))
        return ResultStore(self.env.results_bucket, self.env.results_table, s3=s3, dynamodb=self.dynamodb)

    @cached_property
    def records(self) -> CampaignState:
        return CampaignState(self.store)

    @cached_property
    def worker_slots(self) -> DynamoWorkerSlots:
        return DynamoWorkerSlots(self.dynamodb, self.env.results_table)

    @cached_property
    def ledger(self) -> Ledger:
        return Ledger(self.dynamodb, self.env.results_table)

    @cached_property
    def leases(self) -> Leases:
        # The local runtime runs these same handlers with a lease directory: its campaigns, each with its
        # own moto, share leases in files as executions in one AWS account share the table's (a target
        # preflighted on its site leases in the table, where its release looks too: LocalLeases).
        lease_dir = self.env.lease_dir if isinstance(self.env, ResultsEnv) else None  # only ResultsEnv's handlers lease
        table = LeaseStore(self.dynamodb, self.env.results_table)
        if lease_dir:
            return LocalLeases(Path(lease_dir), table)
        return table
