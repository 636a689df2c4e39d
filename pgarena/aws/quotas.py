"""The account's quotas a campaign's burst meets: Fargate's vCPU count (all running tasks' vCPUs) and
Lambda's concurrency (each shard's launch is an invocation, all of a step's at once). Read before
`pgarena run --aws` starts; a shortfall is a warning (a quota can be raised meanwhile), said with its fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_service_quotas import ServiceQuotasClient

FARGATE_SERVICE_CODE = "fargate"
# "Fargate On-Demand vCPU resource count" (Fargate Spot has its own, L-36FBB829).
FARGATE_VCPU_QUOTA_CODE = "L-3032A538"
FARGATE_SPOT_VCPU_QUOTA_CODE = "L-36FBB829"


class Quotas(BaseModel):
    """What the account allows; None where it could not be read (`unread` says why)."""

    fargate_vcpu: float | None = None
    lambda_concurrency: int | None = None
    unread: list[str] = []


class Need(BaseModel):
    """What the campaign's busiest moment asks for."""

    workers: int
    worker_vcpu: float
    spot: bool = False

    @property
    def vcpu(self) -> float:
        return self.workers * self.worker_vcpu


def fargate_vcpu_quota(client: ServiceQuotasClient, spot: bool = False) -> float:
    """The applied quota, else (never changed in this account) AWS's default."""
    code = FARGATE_SPOT_VCPU_QUOTA_CODE if spot else FARGATE_VCPU_QUOTA_CODE
    try:
        return client.get_service_quota(ServiceCode=FARGATE_SERVICE_CODE, QuotaCode=code)["Quota"]["Value"]
    except client.exceptions.NoSuchResourceException:
        return client.get_aws_default_service_quota(ServiceCode=FARGATE_SERVICE_CODE, QuotaCode=code)["Quota"]["Value"]


def lambda_concurrency(client: LambdaClient) -> int:
    """Concurrent executions the stack's functions may use: the account's unreserved pool."""
    return client.get_account_settings()["AccountLimit"]["UnreservedConcurrentExecutions"]


def _why(error: Exception) -> str:
    """An error in one line: its code and message, never a page of HTML a stand-in may answer with."""
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        message = str(error.response.get("Error", {}).get("Message", ""))
        operation = error.operation_name
        return f"{operation}: {code}" + (f": {message[:200]}" if message and not message.lstrip().startswith("<") else "")
    return f"{type(error).__name__}: {error}"


def read_quotas(service_quotas: ServiceQuotasClient, lambda_: LambdaClient, spot: bool = False) -> Quotas:
    quotas = Quotas()
    try:
        quotas.fargate_vcpu = fargate_vcpu_quota(service_quotas, spot)
    except (ClientError, BotoCoreError) as error:  # servicequotas:GetServiceQuota not granted, or no route
        quotas.unread.append(f"the Fargate vCPU quota ({_why(error)})")
    try:
        quotas.lambda_concurrency = lambda_concurrency(lambda_)
    except (ClientError, BotoCoreError) as error:
        quotas.unread.append(f"Lambda's concurrency ({_why(error)})")
    return quotas


def quota_warnings(need: Need, quotas: Quotas) -> list[str]:
    """What the campaign's peak would pass, each with its fix. Pure."""
    warnings = []
    code = FARGATE_SPOT_VCPU_QUOTA_CODE if need.spot else FARGATE_VCPU_QUOTA_CODE
    if quotas.fargate_vcpu is not None and need.vcpu > quotas.fargate_vcpu:
        warnings.append(
            f"the campaign runs up to {need.workers} workers at once ({need.vcpu:g} vCPU at {need.worker_vcpu:g} each), "
            f"past the account's Fargate vCPU quota of {quotas.fargate_vcpu:g} ({FARGATE_SERVICE_CODE} {code}): "
            "launches past it are retried, then fail their shards; ask for more in Service Quotas, or lower "
            "workers or target_concurrency"
        )
    if quotas.lambda_concurrency is not None and need.workers > quotas.lambda_concurrency:
        warnings.append(
            f"up to {need.workers} worker launches at once, past the account's {quotas.lambda_concurrency} unreserved "
            "Lambda concurrent executions: launches are throttled and retried with backoff; ask for more "
            "(Service Quotas, lambda L-B99A9384), or lower workers or target_concurrency"
        )
    warnings.extend(f"could not read {what}: the campaign starts unchecked against it" for what in quotas.unread)
    return warnings
