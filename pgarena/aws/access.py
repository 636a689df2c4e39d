"""The one access map: what lives in the results table and bucket, and which component may do what on it.

Pure data. The data-access code (store, leases, ledger, barrier) builds every table key with the
functions below; the CDK app turns each component's grants into IAM statements (a
`dynamodb:LeadingKeys` condition per partition prefix, an object ARN per key pattern); and
tests/infrastructure/test_access.py walks this map against the synthesized template, while
tests/unit/test_access.py checks that what the code really calls is granted here.

Table items (one table, keys `pk`/`sk`, both strings):
    summary  pk campaign#<campaign_id>   sk step#<step_id>             (store: the workers' step summaries)
    lease    pk lease#<address:port>      sk lease                      (leases: connection slots per server)
    barrier  pk barrier#<campaign_id>    sk <group id>                 (barrier: shards that start together)
    outcome  pk outcome#<campaign_id>    sk target#<phase>#<index>      (the state machine: a target finished or failed)
                                         sk shard#<phase>#<index>#<step>#<shard>  (the state machine: a worker failed)
    ledger   pk ledger#<YYYY-MM>         sk campaign#<id> | total      (ledger: the month's cost bookings)
    worker   pk worker#<campaign_id>     sk <phase>#<target>#<shard>   (worker_slots: the warm worker of a slot)
    history  pk history#<campaign>       sk <started_at>#<campaign_id> (history_index: a finished run, by name)
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
# Written by the state machine itself (DynamoDB PutItem tasks in statemachines/campaign.asl.json, whose
# key formats tests/unit/test_access.py checks against these): outcomes never accumulate in its state.
OUTCOMES = ItemKind("target and worker outcomes", "outcome#")
# A warm worker's slot (pgarena.model.warm): the launch function offers it the next step there.
WORKERS = ItemKind("warm worker slots", "worker#")
# A campaign id's claim: the execution that took it, written once by Validate And Plan (a conditional put).
CLAIMS = ItemKind("campaign id claims", "claim#")
# The index of finished runs by campaign name (pgarena.aws.history_index), written by finalize.
HISTORY = ItemKind("campaign history index", "history#")
ITEM_KINDS = (SUMMARIES, LEASES, BARRIERS, LEDGER, OUTCOMES, WORKERS, CLAIMS, HISTORY)
# The kinds whose partition is one campaign's: an id with any such item is in use.
CAMPAIGN_ITEM_KINDS = (SUMMARIES, BARRIERS, OUTCOMES)

# Sort keys within a partition.
STEP_SK_PREFIX = "step#"
LEASE_SK = "lease"
LEDGER_CAMPAIGN_SK_PREFIX = "campaign#"
LEDGER_TOTAL_SK = "total"
# The ASL's placeholder for the results table in its DynamoDB PutItem tasks (the stack and the local
# runtime substitute it, as they do the ...FunctionArn ones).
RESULTS_TABLE_PLACEHOLDER = "ResultsTableName"
# The outcome items' sort keys and failure attribute: pgarena.model.layout (the campaign reads them).


def _key(pk: str, sk: str) -> dict[str, AttributeValueTypeDef]:
    return marshal({PARTITION_KEY: pk, SORT_KEY: sk})


def summary_key(campaign_id: str, step_id: str) -> dict[str, AttributeValueTypeDef]:
    return _key(SUMMARIES.pk(campaign_id), f"{STEP_SK_PREFIX}{step_id}")


def lease_item_key(server: str) -> dict[str, AttributeValueTypeDef]:
    """The lease item of one server (its address and port, pgarena.campaign.leases.lease_key)."""
    return _key(LEASES.pk(server), LEASE_SK)


def barrier_key(campaign_id: str, group_id: str) -> dict[str, AttributeValueTypeDef]:
    return _key(BARRIERS.pk(campaign_id), group_id)


def campaign_claim_key(campaign_id: str) -> dict[str, AttributeValueTypeDef]:
    return _key(CLAIMS.pk(campaign_id), "execution")


def worker_slot_key(campaign_id: str, slot: str) -> dict[str, AttributeValueTypeDef]:
    """A slot's item, in a partition of its own: each idle worker reads its slot every SLOT_POLL_S, and a
    campaign's slots in one partition (40 targets x 40 shards: 32,000 reads a second) would pass a
    partition's 3,000 reads a second."""
    return _key(WORKERS.pk(f"{campaign_id}#{slot}"), slot)


def history_key(campaign: str, started_at: str, campaign_id: str) -> dict[str, AttributeValueTypeDef]:
    """A run's index item: sorted by when it started within its campaign's partition."""
    return _key(HISTORY.pk(campaign), f"{started_at}#{campaign_id}")


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
PLAN = ObjectKind("the plan", (layout.plan_key("*"),))
COST_DECISION = ObjectKind("the cost decision", (layout.cost_key("*"),))
PREFLIGHT_STEPS = ObjectKind("preflight's steps", (layout.preflight_key("*", "*", "*"),))
DECISIONS = ObjectKind("an adaptive campaign's decisions", (layout.decisions_key("*"),))
# Listed to find which preflights answered (a missing object reads as AccessDenied without ListBucket).
CAMPAIGN_STATE = ObjectKind("a campaign's state files", (layout.state_prefix("*"),))
# A step's progress series: the worker writes it beside the states' records, its summary's item points to it.
PROGRESS = ObjectKind("progress series", (layout.progress_key("*", "*"),))
REPORTS = ObjectKind("reports", tuple(layout.report_key("*", f"*{suffix}") for suffix in layout.REPORT_SUFFIXES))
SCHEDULE_MATRICES = ObjectKind("schedule matrices", (layout.matrix_key("*"),))
CA_BUNDLES = ObjectKind("CA bundles", (f"{layout.CA_BUNDLE_PREFIX}*",))
# A run's CloudWatch answer, which finalize reads and keeps beside the step's raw output (only that file:
# the workers' raw output stays theirs).
MANAGED_METRICS = ObjectKind("managed metrics", (layout.managed_metrics_key("*", "*"),))


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
    DECIDE = "decide"
    FINALIZE_STOPPED = "finalize_stopped"
    START_CAMPAIGN = "start_campaign"
    TASK_STOPPED = "task_stopped"
    WORKER = "worker"
    SCHEDULER = "scheduler"
    STATE_MACHINE = "state_machine"


A = Action
# What each component does on the table and the bucket, read from its boto3 calls. Transactions
# (the ledger's TransactWriteItems) are authorized per item as PutItem / UpdateItem.
ACCESS: Mapping[Component, tuple[Grant, ...]] = MappingProxyType(
    {
        # Refuses a campaign id in use (ResultStore.campaign_traces: one listing of the campaign's
        # prefix, one query per campaign partition), claims it (CampaignState.claim_id: a conditional
        # put, so that of two executions given one id at once, one is refused), then keeps the plan (CampaignState.put_plan: a
        # retried Validate reads the plan's owner back).
        Component.VALIDATE: (
            TableGrant(CLAIMS, (A.PUT_ITEM,)),
            BucketGrant(CAMPAIGN_FILES, (A.LIST_BUCKET,)),
            TableGrant(SUMMARIES, (A.QUERY,)),
            TableGrant(BARRIERS, (A.QUERY,)),
            TableGrant(OUTCOMES, (A.QUERY,)),
            BucketGrant(PLAN, (A.GET_OBJECT, A.PUT_OBJECT)),
        ),
        # Ledger.book / record_refusal: reads the month's total and the campaign's entry, puts the
        # entry, adds to the total; the plan in, the decision out.
        Component.COST_GUARD: (
            TableGrant(LEDGER, (A.GET_ITEM, A.PUT_ITEM, A.UPDATE_ITEM)),
            BucketGrant(PLAN, (A.GET_OBJECT,)),
            BucketGrant(COST_DECISION, (A.PUT_OBJECT,)),
        ),
        # LeaseStore.acquire: read, then a conditional put; the target's record beside its raw output;
        # the plan in, the target's steps out.
        Component.PREFLIGHT: (
            TableGrant(LEASES, (A.GET_ITEM, A.PUT_ITEM)),
            BucketGrant(PREFLIGHT_EVIDENCE, (A.PUT_OBJECT,)),
            BucketGrant(PLAN, (A.GET_OBJECT,)),
            BucketGrant(PREFLIGHT_STEPS, (A.PUT_OBJECT,)),
            BucketGrant(CA_BUNDLES, (A.GET_OBJECT,)),  # an endpoint's sslrootcert in the bucket
        ),
        # The shard's step from preflight's steps, offered to the slot's warm worker (WorkerSlots.offer,
        # taken, withdraw: conditional updates and reads); ecs:RunTask and iam:PassRole (compute grants,
        # not here) when none takes it. A target preflighted on its site: its placement from the plan.
        Component.LAUNCH_WORKER: (
            BucketGrant(PREFLIGHT_STEPS, (A.GET_OBJECT,)),
            TableGrant(WORKERS, (A.GET_ITEM, A.UPDATE_ITEM)),
            BucketGrant(PLAN, (A.GET_OBJECT,)),
        ),
        # The lease given back under the key the target's preflight made (its answer; else one made from
        # the plan), the target's workers' slots closed (WorkerSlots.close: a conditional update, then a
        # read of one closed already).
        Component.RELEASE_LEASE: (
            TableGrant(LEASES, (A.GET_ITEM, A.PUT_ITEM)),
            BucketGrant(PLAN, (A.GET_OBJECT,)),
            BucketGrant(PREFLIGHT_STEPS, (A.GET_OBJECT,)),
            TableGrant(WORKERS, (A.GET_ITEM, A.UPDATE_ITEM)),
        ),
        # finalize: the workers' slots closed (WorkerSlots.close, read: when each worker left), the plan,
        # the cost decision and the outcomes (CampaignState), ResultStore.summaries (query), each sharded
        # step's series (read), what lost workers left (list), Ledger.settle (read, update), then
        # results.json and the reports, then the run's index item and the campaign's earlier runs (alerts).
        Component.AGGREGATE: (
            TableGrant(WORKERS, (A.GET_ITEM, A.UPDATE_ITEM)),
            TableGrant(SUMMARIES, (A.QUERY,)),
            TableGrant(OUTCOMES, (A.QUERY,)),
            TableGrant(LEDGER, (A.GET_ITEM, A.UPDATE_ITEM)),
            BucketGrant(RAW_OUTPUT, (A.GET_OBJECT, A.LIST_BUCKET)),
            BucketGrant(PROGRESS, (A.GET_OBJECT,)),
            BucketGrant(PLAN, (A.GET_OBJECT,)),
            BucketGrant(COST_DECISION, (A.GET_OBJECT,)),
            BucketGrant(PREFLIGHT_STEPS, (A.GET_OBJECT,)),
            BucketGrant(DECISIONS, (A.GET_OBJECT,)),
            BucketGrant(CAMPAIGN_STATE, (A.LIST_BUCKET,)),
            BucketGrant(RESULTS, (A.PUT_OBJECT, A.GET_OBJECT)),
            BucketGrant(REPORTS, (A.PUT_OBJECT,)),
            # The run's index item (HistoryIndex.record), then the campaign's runs (a query) and their
            # results.json (read), to find the change points this run found first (pgarena.campaign.alerting).
            TableGrant(HISTORY, (A.PUT_ITEM, A.QUERY)),
            BucketGrant(MANAGED_METRICS, (A.PUT_OBJECT,)),  # each run's CloudWatch answer (SERVICE_ACTIONS: the read)
        ),
        # An adaptive campaign's results so far, read as aggregate reads them (nothing written but the
        # decisions, read back to add the next): the plan, the outcomes, the summaries and series.
        Component.DECIDE: (
            TableGrant(SUMMARIES, (A.QUERY,)),
            TableGrant(OUTCOMES, (A.QUERY,)),
            BucketGrant(RAW_OUTPUT, (A.GET_OBJECT, A.LIST_BUCKET)),
            BucketGrant(PROGRESS, (A.GET_OBJECT,)),
            BucketGrant(PLAN, (A.GET_OBJECT,)),
            BucketGrant(COST_DECISION, (A.GET_OBJECT,)),
            BucketGrant(PREFLIGHT_STEPS, (A.GET_OBJECT,)),
            BucketGrant(DECISIONS, (A.GET_OBJECT, A.PUT_OBJECT)),
            BucketGrant(CAMPAIGN_STATE, (A.LIST_BUCKET,)),
        ),
        # An execution stopped, failed or timed out ends through the same finalize as aggregate's (its
        # workers' slots closed first), and gives its leases back (LeaseStore.release: read, then a
        # conditional put). Stopped before
        # Validate answered, it first looks whether its campaign id is another's (campaign_traces).
        Component.FINALIZE_STOPPED: (
            TableGrant(WORKERS, (A.GET_ITEM, A.UPDATE_ITEM)),
            BucketGrant(CAMPAIGN_FILES, (A.LIST_BUCKET,)),
            TableGrant(BARRIERS, (A.QUERY,)),
            TableGrant(SUMMARIES, (A.QUERY,)),
            TableGrant(OUTCOMES, (A.QUERY,)),
            TableGrant(LEDGER, (A.GET_ITEM, A.UPDATE_ITEM)),
            TableGrant(LEASES, (A.GET_ITEM, A.PUT_ITEM)),
            BucketGrant(RAW_OUTPUT, (A.GET_OBJECT, A.LIST_BUCKET)),
            BucketGrant(PROGRESS, (A.GET_OBJECT,)),
            BucketGrant(PLAN, (A.GET_OBJECT,)),
            BucketGrant(COST_DECISION, (A.GET_OBJECT,)),
            BucketGrant(PREFLIGHT_STEPS, (A.GET_OBJECT,)),
            BucketGrant(DECISIONS, (A.GET_OBJECT,)),
            BucketGrant(CAMPAIGN_STATE, (A.LIST_BUCKET,)),
            BucketGrant(RESULTS, (A.PUT_OBJECT, A.GET_OBJECT)),
            BucketGrant(REPORTS, (A.PUT_OBJECT,)),
            # The run's index item (HistoryIndex.record), then the campaign's runs (a query) and their
            # results.json (read), to find the change points this run found first (pgarena.campaign.alerting).
            TableGrant(HISTORY, (A.PUT_ITEM, A.QUERY)),
            BucketGrant(MANAGED_METRICS, (A.PUT_OBJECT,)),  # each run's CloudWatch answer (SERVICE_ACTIONS: the read)
        ),
        Component.START_CAMPAIGN: (BucketGrant(SCHEDULE_MATRICES, (A.GET_OBJECT,)),),
        # Fails the step a stopped worker task left unanswered (SendTaskFailure, granted by the stack): the one
        # its slot names (WorkerSlots.read) for a worker that ran; writes no results.
        Component.TASK_STOPPED: (TableGrant(WORKERS, (A.GET_ITEM,)),),
        # ResultStore.put_summary (its progress series, then a conditional put), wait_at_barrier (update,
        # read), raw output uploaded tagged; its slot (WorkerSlots: registered, then conditional updates and
        # reads while it waits for the next step). A worker that preflights its target on its
        # site does what the preflight function does: Component.PREFLIGHT's grants on leases, plan and records.
        Component.WORKER: (
            TableGrant(SUMMARIES, (A.PUT_ITEM,)),
            TableGrant(LEASES, (A.GET_ITEM, A.PUT_ITEM)),
            BucketGrant(PREFLIGHT_EVIDENCE, (A.PUT_OBJECT,)),
            BucketGrant(PLAN, (A.GET_OBJECT,)),
            BucketGrant(PREFLIGHT_STEPS, (A.PUT_OBJECT,)),
            BucketGrant(PROGRESS, (A.PUT_OBJECT,)),
            BucketGrant(CA_BUNDLES, (A.GET_OBJECT,)),
            TableGrant(WORKERS, (A.GET_ITEM, A.UPDATE_ITEM)),
            TableGrant(BARRIERS, (A.UPDATE_ITEM, A.GET_ITEM)),
            BucketGrant(RAW_OUTPUT, (A.PUT_OBJECT, A.PUT_OBJECT_TAGGING)),
        ),
        # Starts executions and invokes start_campaign; touches no results.
        Component.SCHEDULER: (),
        # The campaign state machine's own DynamoDB PutItem tasks (Target Finished, Record Target
        # Failure, Record Step Failure); its Lambda invocations are granted by the stack.
        Component.STATE_MACHINE: (TableGrant(OUTCOMES, (A.PUT_ITEM,)),),
    }
)


class ServiceAction(StrEnum):
    """Calls on other AWS services whose IAM action takes no resource: granted on "*"."""

    # The service authorization reference lists no resource type for it (nor a condition key to narrow it).
    GET_METRIC_DATA = "cloudwatch:GetMetricData"


# Who calls which of them: finalize (Aggregate And Rank, and an execution stopped) reads the CloudWatch
# metrics of the targets that name their DB instance (pgarena.campaign.managed_metrics), after the last run,
# when the runs' last minutes are published. The stack grants exactly these (pgarena_cdk), and the local
# runtime's enforced IAM takes them from its template.
SERVICE_ACTIONS: Mapping[Component, frozenset[ServiceAction]] = MappingProxyType(
    {
        Component.AGGREGATE: frozenset({ServiceAction.GET_METRIC_DATA}),
        Component.FINALIZE_STOPPED: frozenset({ServiceAction.GET_METRIC_DATA}),
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
    """Whether the map lets `component` do `action` on `key` (see grant_covers; a service action on any key)."""
    if action in SERVICE_ACTIONS.get(component, frozenset()):
        return True
    return any(action in grant.actions and grant_covers(grant, key) for grant in ACCESS[component])


class WorkerRole(StrEnum):
    """The roles a worker task is started with: its task definition's and RunTask's override."""

    TASK = "the home task role"  # Component.WORKER's grants: every site's workers run as it (the override)
    EXECUTION = "the home execution role"  # ECS pulls the image and ships the logs
    SITE_TASK = "a site task definition's role"  # named so it can be passed; it may do nothing
    SITE_EXECUTION = "a site's execution role"


# Who hands which worker roles to ECS (iam:PassRole, to ecs-tasks.amazonaws.com only): RunTask checks every
# role the task definition and the overrides name. The stack grants exactly these, by ARN at home and by
# name in each site's region (pgarena.aws.deployment); not table or bucket access, so not in ACCESS.
PASSED_ROLES: Mapping[Component, frozenset[WorkerRole]] = MappingProxyType({Component.LAUNCH_WORKER: frozenset(WorkerRole)})


# Who publishes the change points a run found first (pgarena.aws.alerts): events:PutEvents on the stack's
# alert bus, and sns:Publish on its topic when it has one. The stack grants exactly these (not table or
# bucket access, so not in ACCESS); the local runtime enforces them as it does the rest (pgarena.local.iam).
PUBLISHES_ALERTS: frozenset[Component] = frozenset({Component.AGGREGATE, Component.FINALIZE_STOPPED})
