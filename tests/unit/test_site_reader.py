"""A worker site's parameter as launch_worker reads it (pgarena.aws.sites.ssm_site_reader): kept a short
while, re-read once that passed, so a redeployed site reaches a warm Lambda container; named after the stack."""

import boto3
import pytest
from moto import mock_aws

from pgarena.aws.deployment import site_parameter_name
from pgarena.aws.sites import SITE_MAX_AGE_S, SiteReadError, WorkerSite, ssm_site_reader

FAR = "eu-west-1"


def _site(revision: int) -> WorkerSite:
    return WorkerSite(
        region=FAR,
        cluster_arn=f"arn:aws:ecs:{FAR}:123456789012:cluster/Other-workers",
        task_definition_arn=f"arn:aws:ecs:{FAR}:123456789012:task-definition/Other-worker:{revision}",
        subnets=["subnet-far"],
        security_groups=["sg-far"],
    )


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def ssm():
    with mock_aws():
        yield boto3.client("ssm", region_name=FAR)


def _publish(ssm, stack: str, site: WorkerSite) -> None:
    ssm.put_parameter(Name=site_parameter_name(FAR, stack), Value=site.model_dump_json(), Type="String", Overwrite=True)


def test_a_redeployed_site_is_read_again_once_the_kept_read_is_old(ssm):
    # Given a warm container that read the site of stack "Other" (revision 1)
    clock = Clock()
    read = ssm_site_reader(lambda region: boto3.client("ssm", region_name=region), "Other", clock=clock)
    _publish(ssm, "Other", _site(1))
    assert read(FAR).task_definition_arn.endswith(":1")

    # When the site is redeployed (revision 2): within the kept time the read is reused (no SSM call per launch)
    _publish(ssm, "Other", _site(2))
    clock.now += SITE_MAX_AGE_S / 2
    assert read(FAR).task_definition_arn.endswith(":1")

    # Then once it is older than that, the next launch reads the new revision
    clock.now += SITE_MAX_AGE_S
    assert read(FAR).task_definition_arn.endswith(":2")


def test_the_parameter_read_is_the_stack_s_own(ssm):
    # Given two deployments in one account, each with a site in the same region
    _publish(ssm, "Pgarena", _site(1))
    _publish(ssm, "Other", _site(7))

    # Then each stack's launcher reads its own site's parameter
    def ssm_in(region: str):
        return boto3.client("ssm", region_name=region)

    assert ssm_site_reader(ssm_in)(FAR).task_definition_arn.endswith(":1")
    assert ssm_site_reader(ssm_in, "Other")(FAR).task_definition_arn.endswith(":7")
    with pytest.raises(SiteReadError, match=site_parameter_name(FAR, "Third")):
        ssm_site_reader(ssm_in, "Third")(FAR)
