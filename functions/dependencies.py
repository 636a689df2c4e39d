"""One place that builds a handler's adapters from its environment: the results store, the campaign's
records, the ledger and the leases, each made when first asked for."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

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

Env = TypeVar("Env", bound=TableEnv)


@dataclass
class Dependencies(Generic[Env]):
    env: Env

    @classmethod
    def of(cls, env_model: type[Env]) -> Dependencies[Env]:
        return cls(env_model.from_env())

    @cached_property
    def dynamodb(self) -> DynamoDBClient:
        return boto3.client("dynamodb")

    @cached_property
    def store(self) -> ResultStore:
        return ResultStore(self.env.results_bucket, self.env.results_table, dynamodb=self.dynamodb)

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
