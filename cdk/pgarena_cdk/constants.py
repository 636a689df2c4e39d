"""Names, sizes and defaults of the pgarena deployment. Units are in the names."""

from typing import NamedTuple

from pgarena.aws import deployment
from pgarena.aws.access import Component
from pgarena.model import sites
from pgarena.planning import fixed_cost

SERVICE_NAME = "pgarena"
STACK_ID = deployment.STACK_NAME  # `pgarena run --aws` finds the stack by this name

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
# Worker sites in other regions: [{"region": "eu-west-1"}, {"region": ..., "vpcId": ..., "subnetIds": [...], ...}]
CONTEXT_SITES = sites.SITES_CONTEXT_KEY
CONTEXT_EXTERNAL_SITES = sites.EXTERNAL_SITES_CONTEXT_KEY
# The home stack's name (default STACK_ID): the sites' stacks and every fixed resource name derive from it,
# so that two deployments can share an account (`pgarena run --aws --stack-name` finds it).
CONTEXT_STACK_NAME = "pgarena:stackName"
# Change-point alerts (pgarena.aws.alerts): the EventBridge bus of the events (default: the account's default
# bus), and an SNS topic for a message each: an existing one's ARN, or `true` for one the stack creates.
CONTEXT_ALERT_BUS = "pgarena:alertBus"
CONTEXT_ALERT_TOPIC_ARN = "pgarena:alertTopicArn"
CONTEXT_ALERTS = "pgarena:alerts"

# Defaults used when the context does not set a value.
DEFAULT_WORKER_CPU_UNITS = 1024
DEFAULT_WORKER_MEMORY_MIB = 2048
DEFAULT_LOG_RETENTION_DAYS = 30
DEFAULT_RAW_OUTPUT_EXPIRATION_DAYS = 90

# Asset paths, relative to the repository root.
STATE_MACHINE_ASL = "statemachines/campaign.asl.json"

# The worker image's build context, staged at synth by pgarena.worker_image (the code the Dockerfile
# copies and the dependencies' wheels), so that unrelated changes do not change the image's hash.
WORKER_IMAGE_ASSET_DIR = "build/worker-image/asset"
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
    # The worker's compiled log scanner (and its source): built for the image, never imported by a function.
    "**/*.so",
    "**/*.c",
]

# Results: what lives where in the bucket and the table, and who may touch it, is pgarena.aws.access.
ACCESS_LOG_EXPIRATION_DAYS = 90
ABORT_INCOMPLETE_UPLOAD_DAYS = 7
ACCESS_LOG_PREFIX_RESULTS = "results-bucket/"
FLOW_LOG_PREFIX = "vpc-flow-logs/"

# Placement: the VPC created when no VPC is given in the context.
VPC_MAX_AZS = 2
VPC_NAT_GATEWAYS = fixed_cost.STACK_NAT_GATEWAYS  # `pgarena estimate` prices these by the month
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
    # Its grants on the results table and bucket (pgarena.aws.access.ACCESS).
    component: Component


VALIDATE = FunctionSpec(
    "ValidateFunction", "functions/validate/handler.handler", "ValidateFunctionArn", 512, 30, Component.VALIDATE
)
# Preflight connects to the target, then may wait up to the matrix's lease_wait_s (at most 600 s,
# pgarena.matrix) for slots another campaign holds: Lambda's longest timeout covers both.
PREFLIGHT = FunctionSpec(
    "PreflightFunction", "functions/preflight/handler.handler", "PreflightFunctionArn", 512, 900, Component.PREFLIGHT
)
LAUNCH_WORKER = FunctionSpec(
    "LaunchWorkerFunction", "functions/launch_worker/handler.handler", "LaunchWorkerFunctionArn", 512, 60, Component.LAUNCH_WORKER
)
RELEASE_LEASE = FunctionSpec(
    "ReleaseLeaseFunction", "functions/release_lease/handler.handler", "ReleaseLeaseFunctionArn", 256, 30, Component.RELEASE_LEASE
)
# Aggregate reads every step summary of a campaign and ranks them in memory.
AGGREGATE = FunctionSpec(
    "AggregateFunction", "functions/aggregate/handler.handler", "AggregateFunctionArn", 1024, 300, Component.AGGREGATE
)
# Decide More Phases builds an adaptive campaign's results so far (every summary, as Aggregate does) after each
# repetition past min, and says whether another is needed.
DECIDE = FunctionSpec("DecideFunction", "functions/decide/handler.handler", "DecideFunctionArn", 1024, 300, Component.DECIDE)
# The cost guard prices the plan and books it in the month's ledger (pgarena.ledger).
COST_GUARD = FunctionSpec(
    "CostGuardFunction", "functions/cost_guard/handler.handler", "CostGuardFunctionArn", 256, 30, Component.COST_GUARD
)
# Started by EventBridge when an execution ends ABORTED, FAILED or TIMED_OUT (no ASL placeholder): reads the
# execution's history, writes results.json with what finished, settles the ledger, releases the leases.
FINALIZE_STOPPED = FunctionSpec(
    "FinalizeStoppedFunction", "functions/finalize_stopped/handler.handler", "", 1024, 300, Component.FINALIZE_STOPPED
)
# Started by EventBridge when a worker's task stops (no ASL placeholder): one that never ran fails its step
# at once (SendTaskFailure with ECS's stoppedReason) instead of at the heartbeat timeout.
TASK_STOPPED = FunctionSpec("TaskStoppedFunction", "functions/task_stopped/handler.handler", "", 256, 30, Component.TASK_STOPPED)
# The execution status changes that never reach Aggregate And Rank.
STOPPED_STATUSES = ("ABORTED", "FAILED", "TIMED_OUT")
# Started by EventBridge Scheduler, not by the state machine (no ASL placeholder): reads a schedule's
# matrix from the results bucket and starts the campaign's execution.
START_CAMPAIGN = FunctionSpec(
    "StartCampaignFunction", "functions/start_campaign/handler.handler", "", 256, 30, Component.START_CAMPAIGN
)

# Schedules (EventBridge Scheduler): a schedule's matrix is inline in the context or an object
# under pgarena.model.layout.SCHEDULE_MATRIX_PREFIX of the results bucket.
SCHEDULE_RETRY_ATTEMPTS = 2
SCHEDULE_MAX_EVENT_AGE_S = 3600

POWERTOOLS_LOG_LEVEL = "INFO"

# Output names (those `pgarena run --aws` reads are named in pgarena.remote.execution).
OUTPUT_STATE_MACHINE_ARN = deployment.OUTPUT_STATE_MACHINE_ARN
OUTPUT_RESULTS_BUCKET = deployment.OUTPUT_RESULTS_BUCKET
OUTPUT_RESULTS_TABLE = deployment.OUTPUT_RESULTS_TABLE
OUTPUT_WORKER_CLUSTER_ARN = deployment.OUTPUT_WORKER_CLUSTER_ARN
OUTPUT_WORKER_SECURITY_GROUPS = "WorkerSecurityGroupIds"
OUTPUT_WORKER_SUBNETS = "WorkerSubnetIds"
OUTPUT_NAT_EGRESS_IPS = "NatEgressIps"
OUTPUT_ALERT_TOPIC_ARN = "AlertTopicArn"
OUTPUT_WORKER_SITE_REGIONS = deployment.OUTPUT_WORKER_SITE_REGIONS
OUTPUT_EXTERNAL_SITES = deployment.OUTPUT_EXTERNAL_SITES

# The worker image's platform (built linux/amd64): every worker task definition says so, Fargate's and
# the EXTERNAL one (ECS Anywhere machines must be x86_64 Linux).
WORKER_CPU_ARCHITECTURE = "X86_64"
WORKER_OS_FAMILY = "LINUX"

# A worker site's stack: one per region of pgarena:sites, named after the home stack (`<stack>-Site-<region>`).
SITE_STACK_ID_INFIX = "-Site-"
