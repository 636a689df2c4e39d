"""Names, sizes and defaults of the pgarena deployment. Units are in the names."""

from typing import NamedTuple

SERVICE_NAME = "pgarena"
STACK_ID = "Pgarena"

# Context keys (cdk.json or `cdk synth -c key=value`).
CONTEXT_VPC_ID = "pgarena:vpcId"
CONTEXT_SUBNET_IDS = "pgarena:subnetIds"
CONTEXT_SECURITY_GROUP_IDS = "pgarena:securityGroupIds"
CONTEXT_WORKER_CPU_UNITS = "pgarena:workerCpu"
CONTEXT_WORKER_MEMORY_MIB = "pgarena:workerMemoryMiB"
CONTEXT_FARGATE_SPOT = "pgarena:fargateSpot"
CONTEXT_LOG_RETENTION_DAYS = "pgarena:logRetentionDays"
CONTEXT_RAW_OUTPUT_EXPIRATION_DAYS = "pgarena:rawOutputExpirationDays"
CONTEXT_SCHEDULES = "pgarena:schedules"

# Defaults used when the context does not set a value.
DEFAULT_WORKER_CPU_UNITS = 1024
DEFAULT_WORKER_MEMORY_MIB = 2048
DEFAULT_LOG_RETENTION_DAYS = 30
DEFAULT_RAW_OUTPUT_EXPIRATION_DAYS = 90

# Asset paths, relative to the repository root.
WORKER_DOCKERFILE = "workers/Dockerfile"
STATE_MACHINE_ASL = "statemachines/campaign.asl.json"

# The worker image's build context holds only what the Dockerfile copies, so that unrelated
# changes (tests, docs, the CDK app) do not change the image's hash.
WORKER_IMAGE_CONTEXT_EXCLUDE = [
    "*",
    "!pgarena",
    "!workers",
    "!pyproject.toml",
    "!README.md",
    "**/__pycache__",
    "**/*.pyc",
]
# The Lambda code asset holds the handlers and the library they import, nothing else;
# third-party packages come from the layer (pgarena_cdk.bundling).
LAMBDA_CODE_EXCLUDE = [
    "*",
    ".*",
    "!pgarena",
    "!pgarena/**",
    "!functions",
    "!functions/**",
    "**/.*",
    "**/__pycache__",
    "**/*.pyc",
]

# Results: raw tool output is written under <campaign_id>/raw/<step_id>/ (pgarena.plan.Step.raw_prefix).
RAW_OUTPUT_OBJECTS = "*/raw/*"
# S3 lifecycle filters match key prefixes, and raw output sits under a per-campaign prefix,
# so the expiry rule selects raw output by this object tag instead.
RAW_OUTPUT_TAG_KEY = "pgarena-kind"
RAW_OUTPUT_TAG_VALUE = "raw"
ACCESS_LOG_EXPIRATION_DAYS = 90
ABORT_INCOMPLETE_UPLOAD_DAYS = 7
TABLE_PARTITION_KEY = "pk"
TABLE_SORT_KEY = "sk"
ACCESS_LOG_PREFIX_RESULTS = "results-bucket/"
FLOW_LOG_PREFIX = "vpc-flow-logs/"

# Placement: the VPC created when no VPC is given in the context.
VPC_MAX_AZS = 2
VPC_NAT_GATEWAYS = 1
VPC_SUBNET_CIDR_MASK = 24

# Compute: the Fargate worker.
WORKER_CONTAINER_NAME = "worker"
WORKER_LOG_STREAM_PREFIX = "worker"
LAUNCH_TYPE = "FARGATE"
ASSIGN_PUBLIC_IP = "DISABLED"
SPOT_CAPACITY_PROVIDER = "FARGATE_SPOT"
SECRET_NAME_PREFIX = "pgarena/"


# Orchestration: the functions the state machine invokes, one per ASL placeholder.
class FunctionSpec(NamedTuple):
    construct_id: str
    handler: str
    asl_placeholder: str
    memory_mib: int
    timeout_s: int


VALIDATE = FunctionSpec("ValidateFunction", "functions/validate/handler.handler", "ValidateFunctionArn", 512, 30)
# Preflight connects to the target, then may wait up to the matrix's lease_wait_s (at most 600 s,
# pgarena.matrix) for slots another campaign holds: Lambda's longest timeout covers both.
PREFLIGHT = FunctionSpec("PreflightFunction", "functions/preflight/handler.handler", "PreflightFunctionArn", 512, 900)
LAUNCH_WORKER = FunctionSpec(
    "LaunchWorkerFunction", "functions/launch_worker/handler.handler", "LaunchWorkerFunctionArn", 512, 60
)
RELEASE_LEASE = FunctionSpec(
    "ReleaseLeaseFunction", "functions/release_lease/handler.handler", "ReleaseLeaseFunctionArn", 256, 30
)
# Aggregate reads every step summary of a campaign and ranks them in memory.
AGGREGATE = FunctionSpec("AggregateFunction", "functions/aggregate/handler.handler", "AggregateFunctionArn", 1024, 300)
# The cost guard prices the plan and books it in the month's ledger (pgarena.ledger).
COST_GUARD = FunctionSpec("CostGuardFunction", "functions/cost_guard/handler.handler", "CostGuardFunctionArn", 256, 30)
# Started by EventBridge Scheduler, not by the state machine (no ASL placeholder): reads a schedule's
# matrix from the results bucket and starts the campaign's execution.
START_CAMPAIGN = FunctionSpec("StartCampaignFunction", "functions/start_campaign/handler.handler", "", 256, 30)

# The results table holds step summaries (pgarena.store, "campaign#<id>") and connection leases
# (pgarena.leases, "lease#<host:port>"); each function may touch only its own kind of item.
SUMMARY_PARTITION_KEYS = "campaign#*"
LEASE_PARTITION_KEYS = "lease#*"
# The cost ledger (pgarena.ledger, "ledger#<YYYY-MM>"): the cost guard books, aggregate settles.
LEDGER_PARTITION_KEYS = "ledger#*"

# Schedules (EventBridge Scheduler): a schedule's matrix is inline in the context or an object
# under this prefix of the results bucket, which only start_campaign may read.
SCHEDULE_MATRIX_PREFIX = "matrices/"
SCHEDULE_RETRY_ATTEMPTS = 2
SCHEDULE_MAX_EVENT_AGE_S = 3600

POWERTOOLS_LOG_LEVEL = "INFO"

# Output names.
OUTPUT_STATE_MACHINE_ARN = "StateMachineArn"
OUTPUT_RESULTS_BUCKET = "ResultsBucketName"
OUTPUT_RESULTS_TABLE = "ResultsTableName"
