"""Before `pgarena run --aws` starts: the plan's busiest moment (pgarena.planning.peak) against the
account's Fargate vCPU and Lambda concurrency quotas (pgarena.aws.quotas, pgarena.remote.capacity)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from pgarena.aws.quotas import FARGATE_VCPU_QUOTA_CODE, Need, Quotas, quota_warnings, read_quotas
from pgarena.planning.campaign import parse_campaign
from pgarena.planning.peak import peak_workers
from pgarena.planning.planner import plan_campaign
from pgarena.remote.capacity import capacity_warnings

TASK_DEFINITION = "arn:aws:ecs:us-east-1:123456789012:task-definition/PgarenaWorker:3"


def _matrix(targets: int, workers: int, concurrency: int, clients: list[int]) -> dict[str, Any]:
    endpoint = {"host": "db.example.com", "port": 5432, "dbname": "postgres", "user": "bench", "password_env": "PW"}
    return {
        "campaign": "peak",
        "target_concurrency": concurrency,
        "targets": [{"name": f"t{i}", "provider": "self-hosted", "endpoint": endpoint} for i in range(targets)],
        "workloads": [
            {
                "name": "sel",
                "tool": "pgbench",
                "init": {"scale": 1},
                "run": {"clients": clients, "jobs": 1, "duration_s": 10, "workers": workers},
            }
        ],
    }


@pytest.mark.parametrize(
    ("targets", "workers", "concurrency", "clients", "peak"),
    [
        (1, 1, 1, [4], 1),  # one worker at a time
        (3, 4, 1, [8, 16], 4),  # one target at a time, its largest step 4 shards
        (3, 4, 2, [8, 16], 8),  # two targets at once
        (3, 8, 5, [2, 16], 24),  # concurrency past the targets: all three; 8 workers need 8 clients
    ],
)
def test_the_peak_is_the_concurrent_targets_largest_steps(targets, workers, concurrency, clients, peak):
    plan = plan_campaign(parse_campaign(_matrix(targets, workers, concurrency, clients)), "c1")
    assert peak_workers(plan) == peak


def test_a_peak_past_either_quota_is_said_with_its_fix():
    # Given 40 workers of 1 vCPU against a fresh account's quotas (a raised vCPU quota of 32, 10 Lambda executions)
    warnings = quota_warnings(Need(workers=40, worker_vcpu=1.0), Quotas(fargate_vcpu=32, lambda_concurrency=10))

    # Then both are named, with their codes and what to do
    fargate, lambda_ = warnings
    assert "40 workers at once (40 vCPU" in fargate and FARGATE_VCPU_QUOTA_CODE in fargate and "Service Quotas" in fargate
    assert "10 unreserved Lambda concurrent executions" in lambda_ and "lower workers or target_concurrency" in lambda_


def test_a_peak_within_the_quotas_says_nothing():
    assert quota_warnings(Need(workers=4, worker_vcpu=0.5), Quotas(fargate_vcpu=6, lambda_concurrency=1000)) == []


def _clients():
    quotas = boto3.client("service-quotas", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    lambda_ = boto3.client("lambda", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    return quotas, lambda_


def test_a_quota_never_raised_is_read_as_aws_default():
    quotas, lambda_ = _clients()
    with Stubber(quotas) as q, Stubber(lambda_) as lam:
        key = {"ServiceCode": "fargate", "QuotaCode": FARGATE_VCPU_QUOTA_CODE}
        q.add_client_error("get_service_quota", service_error_code="NoSuchResourceException", expected_params=key)
        q.add_response("get_aws_default_service_quota", {"Quota": {"Value": 6.0}}, key)
        lam.add_response("get_account_settings", {"AccountLimit": {"UnreservedConcurrentExecutions": 10}}, {})
        read = read_quotas(quotas, lambda_)
    assert (read.fargate_vcpu, read.lambda_concurrency, read.unread) == (6.0, 10, [])


def test_a_quota_that_cannot_be_read_is_said_not_fatal():
    quotas, lambda_ = _clients()
    with Stubber(quotas) as q, Stubber(lambda_) as lam:
        q.add_client_error("get_service_quota", service_error_code="AccessDeniedException")
        lam.add_response("get_account_settings", {"AccountLimit": {"UnreservedConcurrentExecutions": 900}}, {})
        warnings = quota_warnings(Need(workers=2, worker_vcpu=1.0), read_quotas(quotas, lambda_))
    assert len(warnings) == 1 and "could not read the Fargate vCPU quota" in warnings[0] and "AccessDenied" in warnings[0]


def test_run_aws_reads_the_workers_size_from_the_stack_and_warns_past_the_quota():
    # Given a deployed stack whose worker has 2 vCPU, a 4-worker campaign, and a 6-vCPU account
    campaign = parse_campaign(_matrix(1, 4, 1, [8]))
    cloudformation = boto3.client("cloudformation", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    ecs = boto3.client("ecs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    quotas, lambda_ = _clients()
    with Stubber(cloudformation) as cf, Stubber(ecs) as e, Stubber(quotas) as q, Stubber(lambda_) as lam:
        resource = {
            "LogicalResourceId": "ComputeTaskDefinition",
            "PhysicalResourceId": TASK_DEFINITION,
            "ResourceType": "AWS::ECS::TaskDefinition",
            "Timestamp": "2026-11-25T00:00:00Z",
            "ResourceStatus": "CREATE_COMPLETE",
        }
        cf.add_response("describe_stack_resources", {"StackResources": [resource]}, {"StackName": "Pgarena"})
        e.add_response("describe_task_definition", {"taskDefinition": {"cpu": "2048"}}, {"taskDefinition": TASK_DEFINITION})
        q.add_response("get_service_quota", {"Quota": {"Value": 6.0}})
        lam.add_response("get_account_settings", {"AccountLimit": {"UnreservedConcurrentExecutions": 1000}}, {})

        # When checking before the run
        warnings = capacity_warnings(campaign, "Pgarena", cloudformation, ecs, quotas, lambda_)

    # Then 4 workers x 2 vCPU = 8 > 6 is said; Lambda's pool is wide enough
    (warning,) = warnings
    assert "4 workers at once (8 vCPU at 2 each)" in warning and "quota of 6" in warning
