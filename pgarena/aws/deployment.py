"""What the CDK app and the runtime both name: the stack and its outputs, the worker sites' resources,
the rule on stopped worker tasks (a schedule's execution input is pgarena.model.schedule's). The CDK app
imports this module, the access map, the models and the planning, and nothing else of the runtime
(pyproject.toml's import contracts)."""

from __future__ import annotations

from typing import Any

# The deployed stack (cdk/pgarena_cdk: STACK_ID and the outputs it exports under these names).
STACK_NAME = "Pgarena"
OUTPUT_STATE_MACHINE_ARN = "StateMachineArn"
OUTPUT_RESULTS_BUCKET = "ResultsBucketName"
OUTPUT_RESULTS_TABLE = "ResultsTableName"
OUTPUT_WORKER_CLUSTER_ARN = "WorkerClusterArn"
# The regions with a worker site besides the stack's own, comma-separated (none: the output is empty).
OUTPUT_WORKER_SITE_REGIONS = "WorkerSiteRegions"
# The external sites (ECS Anywhere) by name, comma-separated (none: the output is absent).
OUTPUT_EXTERNAL_SITES = "ExternalSites"

# Worker sites in other regions. The home stack (environment-agnostic) cannot reference another region's
# resources by token, so each site's cluster, task family and roles have names derived from the stack's
# name (IAM names are account-wide, ECS and SSM names regional: the stack name lets deployments share an
# account): the home stack grants launch_worker exactly those, and the site's stack writes the rest (subnets
# and security groups, which only it knows) to an SSM parameter in its region that launch_worker reads at
# launch (its STACK_NAME variable names the stack).
SITE_PARAMETER_PREFIX = "/pgarena/"
# The longest stack name whose derived names fit IAM's 64 characters with any region's name (14 at most).
STACK_NAME_MAX_LENGTH = 32
STACK_NAME_PATTERN = rf"^[A-Za-z][A-Za-z0-9-]{{0,{STACK_NAME_MAX_LENGTH - 1}}}$"


def site_cluster_name(stack_name: str = STACK_NAME) -> str:
    return f"{stack_name}-workers"


def site_task_family(stack_name: str = STACK_NAME) -> str:
    return f"{stack_name}-worker"


def site_parameter_name(region: str, stack_name: str = STACK_NAME) -> str:
    return f"{SITE_PARAMETER_PREFIX}{stack_name}/sites/{region}"


def site_execution_role_name(region: str, stack_name: str = STACK_NAME) -> str:
    """IAM names are account-wide: one execution role per stack and site region (at most 64 characters)."""
    return f"{stack_name}-worker-execution-{region}"


def site_task_role_name(region: str, stack_name: str = STACK_NAME) -> str:
    """The site task definition's own role. Workers run as the home task role (RunTask's override), but
    RunTask passes the task definition's role too: launch_worker is granted iam:PassRole on this name."""
    return f"{stack_name}-worker-task-{region}"


# The default stack's (the local runtime's stand-in sites and the tests use these).
SITE_CLUSTER_NAME = site_cluster_name()
SITE_TASK_FAMILY = site_task_family()


# RunTask's startedBy: what the stack's rule on stopped tasks (task_stopped) and Ctrl-C's ListTasks pick out.
STARTED_BY = "pgarena"
ECS_SOURCE = "aws.ecs"
TASK_STATE_CHANGE = "ECS Task State Change"


def rule_pattern(cluster_arn: str) -> dict[str, Any]:
    """The EventBridge pattern of the rule on one cluster's stopped worker tasks: the home stack's on its
    cluster, each site stack's on its own (cdk/pgarena_cdk), and the local stand-in's routing."""
    return {
        "source": [ECS_SOURCE],
        "detail-type": [TASK_STATE_CHANGE],
        "detail": {"clusterArn": [cluster_arn], "lastStatus": ["STOPPED"], "startedBy": [STARTED_BY]},
    }


# The EventBridge bus finalize publishes its change-point alerts on, unless the deploy names another
# (pgarena:alertBus): the account's default bus, which every account has.
DEFAULT_ALERT_BUS = "default"
