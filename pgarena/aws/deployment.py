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
# resources by token, so each site's cluster, task family and execution role have fixed names: the home
# stack grants launch_worker exactly those, and the site's stack writes the rest (subnets and security
# groups, which only it knows) to an SSM parameter in its region that launch_worker reads at launch.
SITE_CLUSTER_NAME = "pgarena-workers"
SITE_TASK_FAMILY = "pgarena-worker"
SITE_PARAMETER_PREFIX = "/pgarena/sites/"


def site_parameter_name(region: str) -> str:
    return f"{SITE_PARAMETER_PREFIX}{region}"


def site_execution_role_name(region: str) -> str:
    """IAM names are account-wide: one execution role per site region (at most 64 characters)."""
    return f"pgarena-worker-execution-{region}"


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
