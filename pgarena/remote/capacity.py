"""Before `pgarena run --aws` starts: the campaign's busiest moment against the account's Fargate vCPU
and Lambda concurrency quotas (pgarena.aws.quotas), the workers' size read from the deployed stack."""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from pgarena.aws.quotas import Need, quota_warnings, read_quotas
from pgarena.model.matrix import Campaign
from pgarena.planning.peak import peak_workers
from pgarena.planning.planner import plan_campaign

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_ecs import ECSClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_service_quotas import ServiceQuotasClient

# The stack's default worker (pgarena:workerCpu), assumed when its task definition cannot be read.
DEFAULT_WORKER_CPU_UNITS = 1024
CPU_UNITS_PER_VCPU = 1024


def stack_worker_vcpu(cloudformation: CloudFormationClient, ecs: ECSClient, stack_name: str) -> float | None:
    """The vCPUs of the stack's worker task definition; None when the stack does not say."""
    try:
        resources = cloudformation.describe_stack_resources(StackName=stack_name)["StackResources"]
        arn = next((r["PhysicalResourceId"] for r in resources if r["ResourceType"] == "AWS::ECS::TaskDefinition"), None)
        if arn is None:
            return None
        cpu = ecs.describe_task_definition(taskDefinition=arn)["taskDefinition"].get("cpu")
    except (ClientError, BotoCoreError):
        return None
    return int(cpu) / CPU_UNITS_PER_VCPU if cpu else None


def capacity_warnings(  # noqa: PLR0913  # the clients it reads with
    campaign: Campaign,
    stack_name: str,
    cloudformation: CloudFormationClient,
    ecs: ECSClient,
    service_quotas: ServiceQuotasClient,
    lambda_: LambdaClient,
) -> list[str]:
    """What the campaign's peak would pass, said before it starts; nothing when it fits."""
    plan = plan_campaign(campaign, f"{campaign.campaign}-capacity")
    vcpu = stack_worker_vcpu(cloudformation, ecs, stack_name)
    notes = []
    if vcpu is None:
        vcpu = DEFAULT_WORKER_CPU_UNITS / CPU_UNITS_PER_VCPU
        notes.append(f"the stack's worker size could not be read: {vcpu:g} vCPU per worker assumed")
    need = Need(workers=peak_workers(plan), worker_vcpu=vcpu)
    return quota_warnings(need, read_quotas(service_quotas, lambda_)) + notes
