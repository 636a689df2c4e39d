"""The one access map: what lives in the results table and bucket, and which component may do what on it.

Pure data. The data-access code (store, leases, ledger, barrier) builds every table key with the
functions below; the CDK app turns each component's grants into IAM statements (a
`dynamodb:LeadingKeys` condition per partition prefix, an object ARN per key pattern); and
tests/infrastructure/test_access.py walks this map against the synthesized template, while
tests/unit/test_access.py checks that what the code really calls is granted here.

Table items (one table, keys `pk`/`sk`, both strings):
    summary  pk campaign#<campaign_id>   sk step#<step_id>             (store: the workers' step summaries)
    lease    pk lease#<host:port>        sk lease                      (leases: connection slots per server)
    barrier  pk barrier#<campaign_id>    sk <group id>                 (barrier: shards that start together)
    ledger   pk ledger#<YYYY-MM>         sk campaign#<id> | total      (ledger: the month's cost bookings)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase
from types import MappingProxyType
from typing import TYPE_CHECKING

from pgarena.aws.items import marshal
from pgarena.model import layout

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

PARTITION_KEY = "pk"
SORT_KEY = "sk"


@dataclass(frozen=True)
class ItemKind:
    """A kind of item in the results table: its partition key is `<prefix><id>`."""

    name: str
    prefix: str

    def pk(self, ident: str) -> str:
        return f"{self.prefix}{ident}"

    @property
    def leading_keys(self) -> str:
        """The `dynamodb:LeadingKeys` pattern that admits exactly this kind's partitions."""
        return self.pk("*")


SUMMARIES = ItemKind("step summaries", "campaign#")
LEASES = ItemKind("connection leases", "lease#")
BARRIERS = ItemKind("start barriers", "barrier#")
LEDGER = ItemKind("cost ledger", "ledger#")
ITEM_KINDS = (SUMMARIES, LEASES, BARRIERS, LEDGER)
# The kinds whose partition is one campaign's: an id with any such item is in use.
CAMPAIGN_ITEM_KINDS = (SUMMARIES, BARRIERS)

# Sort keys within a partition.
STEP_SK_PREFIX = "step#"
LEASE_SK = "lease"
LEDGER_CAMPAIGN_SK_PREFIX = "campaign#"
LEDGER_TOTAL_SK = "total"


def _key(pk: str, sk: str) -> dict[str, AttributeValueTypeDef]:
    return marshal({PARTITION_KEY: pk, SORT_KEY: sk})


def summary_key(campaign_id: str, step_id: str) -> dict[str, AttributeValueTypeDef]:
    return _key(SUMMARIES.pk(campaign_id), f"{STEP_SK_PREFIX}{step_id}")


def lease_item_key(server: str) -> dict[str, AttributeValueTypeDef]:
    """The lease item of one server (`host:port`, pgarena.aws.leases.lease_key)."""
    return _key(LEASES.pk(server), LEASE_SK)


def barrier_key(campaign_id: str, group_id: str) -> dict[str, AttributeValueTypeDef]:
    return _key(BARRIERS.pk(campaign_id), group_id)


def ledger_campaign_key(month: str, campaign_id: str) -> dict[str, AttributeValueTypeDef]:
    return _key(LEDGER.pk(month), f"{LEDGER_CAMPAIGN_SK_PREFIX}{campaign_id}")


def ledger_total_key(month: str) -> dict[str, AttributeValueTypeDef]:
    return _key(LEDGER.pk(month), LEDGER_TOTAL_SK)


@dataclass(frozen=True)
class ObjectKind:
    """A kind of object in the results bucket: the key patterns (IAM wildcards) that cover it."""

    name: str
    patterns: tuple[str, ...]


# Each pattern is the layout's own key function applied to "*", so it matches exactly those keys.
RAW_OUTPUT = ObjectKind("raw output", (layout.raw_prefix("*") + "*",))
PREFLIGHT_EVIDENCE = ObjectKind("preflight evidence", (layout.evidence_key("*", "*"),))
RESULTS = ObjectKind("results.json", (layout.results_key("*"),))
# Everything a campaign wrote, listed (never read) to tell whether a campaign id is in use.
CAMPAIGN_FILES = ObjectKind("a campaign's files", (layout.campaign_prefix("*"),))
REPORTS = ObjectKind("reports", tuple(layout.report_key("*", f"*{suffix}") for suffix in layout.REPORT_SUFFIXES))
SCHEDULE_MATRICES = ObjectKind("schedule matrices", (layout.matrix_key("*"),))
OBJECT_KINDS = (RAW_OUTPUT, PREFLIGHT_EVIDENCE, RESULTS, CAMPAIGN_FILES, REPORTS, SCHEDULE_MATRICES)


class Action(StrEnum):
    GET_ITEM = "dynamodb:GetItem"
    PUT_ITEM = "dynamodb:PutItem"
    UPDATE_ITEM = "dynamodb:UpdateItem"
    DELETE_ITEM = "dynamodb:DeleteItem"
    QUERY = "dynamodb:Query"
    GET_OBJECT = "s3:GetObject"
    PUT_OBJECT = "s3:PutObject"
    # Needed beside PutObject when the upload carries tags (raw output: the lifecycle rule's tag).
    PUT_OBJECT_TAGGING = "s3:PutObjectTagging"
    LIST_BUCKET = "s3:ListBucket"


# Actions on the bucket itself (resource: the bucket's ARN, narrowed by an `s3:prefix` condition).
BUCKET_ACTIONS = frozenset({Action.LIST_BUCKET})


@dataclass(frozen=True)
class TableGrant:
    items: ItemKind
    actions: tuple[Action, ...]


@dataclass(frozen=True)
class BucketGrant:
    objects: ObjectKind
    actions: tuple[Action, ...]


Grant = TableGrant | BucketGrant


class Component(StrEnum):
    """Everything that runs with its own role. Functions are named as their folder in functions/."""

    VALIDATE = "validate"
    COST_GUARD = "cost_guard"
    PREFLIGHT = "preflight"
    LAUNCH_WORKER = "launch_worker"
    RELEASE_LEASE = "release_lease"
    AGGREGATE = "aggregate"
    FINALIZE_STOPPED = "finalize_stopped"
    START_CAMPAIGN = "start_campaign"
    WORKER = "worker"
    SCHEDULER = "scheduler"


A = Action
# What each component does on the table and the bucket, read from its boto3 calls. Transactions
# (the ledger's TransactWriteItems) are authorized per item as PutItem / UpdateItem.
ACCESS: Mapping[Component, tuple[Grant, ...]] = MappingProxyType(
    {
        # Plans from the matrix; first refuses a campaign id in use (ResultStore.campaign_traces: one
        # listing of the campaign's prefix, one query per campaign partition).
        Component.VALIDATE: (
            BucketGrant(CAMPAIGN_FILES, (A.LIST_BUCKET,)),
            TableGrant(SUMMARIES, (A.QUERY,)),
            TableGrant(BARRIERS, (A.QUERY,)),
        ),
        # Ledger.book / record_refusal: reads the month's total and the campaign's entry, puts the
        # entry, adds to the total.
        Component.COST_GUARD: (TableGrant(LEDGER, (A.GET_ITEM, A.PUT_ITEM, A.UPDATE_ITEM)),),
        # LeaseStore.acquire: read, then a conditional put; the target's record beside its raw output.
        Component.PREFLIGHT: (
            TableGrant(LEASES, (A.GET_ITEM, A.PUT_ITEM)),
            BucketGrant(PREFLIGHT_EVIDENCE, (A.PUT_OBJECT,)),
        ),
        # ecs:RunTask and iam:PassRole only (compute grants, not in this map).
        Component.LAUNCH_WORKER: (),
        Component.RELEASE_LEASE: (TableGrant(LEASES, (A.GET_ITEM, A.PUT_ITEM)),),
        # finalize: ResultStore.summaries (query), each sharded step's series (read), what lost
        # workers left (list), Ledger.settle (read, update), then results.json and the reports.
        Component.AGGREGATE: (
            TableGrant(SUMMARIES, (A.QUERY,)),
            TableGrant(LEDGER, (A.GET_ITEM, A.UPDATE_ITEM)),
            BucketGrant(RAW_OUTPUT, (A.GET_OBJECT, A.LIST_BUCKET)),
            BucketGrant(RESULTS, (A.PUT_OBJECT,)),
            BucketGrant(REPORTS, (A.PUT_OBJECT,)),
        ),
        # An execution stopped, failed or timed out ends through the same finalize as aggregate's, and
        # gives its leases back (LeaseStore.release: read, then a conditional put). Stopped before
        # Validate answered, it first looks whether its campaign id is another's (campaign_traces).
        Component.FINALIZE_STOPPED: (
            BucketGrant(CAMPAIGN_FILES, (A.LIST_BUCKET,)),
            TableGrant(BARRIERS, (A.QUERY,)),
            TableGrant(SUMMARIES, (A.QUERY,)),
            TableGrant(LEDGER, (A.GET_ITEM, A.UPDATE_ITEM)),
            TableGrant(LEASES, (A.GET_ITEM, A.PUT_ITEM)),
            BucketGrant(RAW_OUTPUT, (A.GET_OBJECT, A.LIST_BUCKET)),
            BucketGrant(RESULTS, (A.PUT_OBJECT,)),
            BucketGrant(REPORTS, (A.PUT_OBJECT,)),
        ),
        Component.START_CAMPAIGN: (BucketGrant(SCHEDULE_MATRICES, (A.GET_OBJECT,)),),
        # ResultStore.put_summary (a conditional put), wait_at_barrier (update, read), raw output
        # uploaded tagged.
        Component.WORKER: (
            TableGrant(SUMMARIES, (A.PUT_ITEM,)),
            TableGrant(BARRIERS, (A.UPDATE_ITEM, A.GET_ITEM)),
            BucketGrant(RAW_OUTPUT, (A.PUT_OBJECT, A.PUT_OBJECT_TAGGING)),
        ),
        # Starts executions and invokes start_campaign; touches no results.
        Component.SCHEDULER: (),
    }
)


def grant_covers(grant: Grant, key: str) -> bool:
    """Whether `grant` reaches `key`: an item's partition key, or an object's key (a listing's prefix).

    IAM's `*` matches any characters, "/" included, as fnmatch's does.
    """
    if isinstance(grant, TableGrant):
        return key.startswith(grant.items.prefix)
    return any(fnmatchcase(key, pattern) for pattern in grant.objects.patterns)


def allows(component: Component, action: str, key: str) -> bool:
    """Whether the map lets `component` do `action` on `key` (see grant_covers)."""
    return any(action in grant.actions and grant_covers(grant, key) for grant in ACCESS[component])
