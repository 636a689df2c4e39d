"""A campaign's worker tasks in every site it may have launched them in: found and stopped (Ctrl-C in
`pgarena run --aws`, the local runtime's cancel).

Where to look comes from what the stack publishes, not from the campaign's recorded launches: the home
cluster (its Fargate workers and the external sites' EXTERNAL tasks, which launch_worker starts there too)
and, for each region of the stack's `WorkerSiteRegions` output, the cluster that region's site parameter
names (the parameter launch_worker launches from). A launch is recorded nowhere before RunTask answers (and
a warm worker's slot only once it claims a step), so a task started while Ctrl-C is pressed would be missed;
ListTasks finds every task ECS knows, PROVISIONING and PENDING ones included (desiredStatus RUNNING).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from pgarena.aws.deployment import STARTED_BY
from pgarena.aws.launch import container_environment, step_field
from pgarena.aws.sites import SiteReadError, WorkerSite
from pgarena.model.sites import SiteMap

if TYPE_CHECKING:
    from mypy_boto3_ecs import ECSClient

# DescribeTasks takes at most 100 tasks.
DESCRIBE_BATCH = 100


@dataclass(frozen=True)
class WorkerCluster:
    """A cluster the campaign's workers may run in, and its region (ECS is regional)."""

    region: str
    cluster_arn: str


@dataclass
class StoppedWorkers:
    """The tasks StopTask was sent to, by cluster, and each site that could not be looked at, with why."""

    tasks: dict[WorkerCluster, list[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(len(arns) for arns in self.tasks.values())

    def describe(self) -> str:
        """`stopped 3 worker task(s): 2 in us-east-1, 1 in eu-west-1`."""
        by_region: dict[str, int] = {}
        for cluster, arns in self.tasks.items():
            by_region[cluster.region] = by_region.get(cluster.region, 0) + len(arns)
        where = ", ".join(f"{n} in {region}" for region, n in by_region.items() if n)
        return f"stopped {self.count} worker task(s)" + (f": {where}" if where else "")


def worker_clusters(
    sites: SiteMap, home_cluster_arn: str, site_in: Callable[[str], WorkerSite]
) -> tuple[list[WorkerCluster], list[str]]:
    """The home cluster, then each region site's cluster as its parameter names it; a site whose parameter
    cannot be read is a problem said (its workers stop at their next heartbeat), not the end of the stop."""
    clusters = [WorkerCluster(sites.home_region, home_cluster_arn)]
    problems = []
    for region in sorted(sites.regions - {sites.home_region}):
        try:
            clusters.append(WorkerCluster(region, site_in(region).cluster_arn))
        except (SiteReadError, ClientError, BotoCoreError) as error:
            problems.append(f"the worker site in {region} could not be read, its workers are left to stop on their own: {error}")
    return clusters, problems


def campaign_tasks(ecs: ECSClient, cluster_arn: str, campaign_id: str) -> list[str]:
    """The ARNs of the campaign's workers still running in one cluster: pgarena's tasks whose step belongs to it."""
    arns = [
        arn
        for page in ecs.get_paginator("list_tasks").paginate(cluster=cluster_arn, startedBy=STARTED_BY, desiredStatus="RUNNING")
        for arn in page["taskArns"]
    ]
    found = []
    for i in range(0, len(arns), DESCRIBE_BATCH):
        for task in ecs.describe_tasks(cluster=cluster_arn, tasks=arns[i : i + DESCRIBE_BATCH])["tasks"]:
            if step_field(container_environment(task.get("overrides", {})), "campaign_id") == campaign_id:
                found.append(task["taskArn"])
    return found


def stop_campaign_workers(
    ecs_in: Callable[[str], ECSClient], clusters: list[WorkerCluster], campaign_id: str, reason: str
) -> StoppedWorkers:
    """StopTask for each of the campaign's running workers in every cluster, through that cluster's region
    (each worker records its step as cancelled and uploads its output). A cluster ECS will not answer for is
    a problem said; the others are still stopped."""
    stopped = StoppedWorkers()
    for cluster in clusters:
        ecs = ecs_in(cluster.region)
        done = stopped.tasks.setdefault(cluster, [])
        try:
            for task in campaign_tasks(ecs, cluster.cluster_arn, campaign_id):
                ecs.stop_task(cluster=cluster.cluster_arn, task=task, reason=reason)
                done.append(task)
        except (ClientError, BotoCoreError) as error:
            stopped.problems.append(f"the workers in {cluster.cluster_arn} could not all be stopped: {error}")
    return stopped
