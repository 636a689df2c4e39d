"""The Fargate worker: one task per benchmark step, started by the launch_worker function."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from pgarena import worker_image
from pgarena.aws.access import Component
from pgarena_cdk import constants
from pgarena_cdk.nag import acknowledge
from pgarena_cdk.permissions import grant_access, grant_read_pgarena_secrets
from pgarena_cdk.placement_construct import PlacementConstruct
from pgarena_cdk.settings import DeploySettings


class ComputeConstruct(Construct):
    """The cluster and the worker's task definition, the single source of truth for the container's shape.

    The task role (what the benchmark code may do) is kept apart from the execution role (what
    ECS needs to pull the image and ship logs).
    """

    def __init__(  # noqa: PLR0913  # the constructs and resources it wires together
        self,
        scope: Construct,
        id_: str,
        settings: DeploySettings,
        repo_root: Path,
        placement: PlacementConstruct,
        bucket: s3.IBucket,
        table: dynamodb.ITable,
    ) -> None:
        super().__init__(scope, id_)
        self.cluster = self._build_cluster(settings, placement)
        self.task_role = self._build_task_role(bucket, table)
        self.execution_role = self._build_execution_role()
        self.log_group = logs.LogGroup(self, "WorkerLogGroup", retention=settings.log_retention)
        self.task_definition = self._build_task_definition(settings, repo_root)
        self.container_name = constants.WORKER_CONTAINER_NAME
        # RunTask takes a capacity provider strategy or a launch type, never both: with Spot on,
        # launch_worker is given CAPACITY_PROVIDER and must prefer it to LAUNCH_TYPE.
        self.capacity_provider = constants.SPOT_CAPACITY_PROVIDER if settings.fargate_spot else None

    def _build_cluster(self, settings: DeploySettings, placement: PlacementConstruct) -> ecs.Cluster:
        return ecs.Cluster(
            self,
            "Cluster",
            vpc=placement.vpc,
            container_insights_v2=ecs.ContainerInsights.ENABLED,
            enable_fargate_capacity_providers=settings.fargate_spot,
        )

    def _build_task_role(self, bucket: s3.IBucket, table: dynamodb.ITable) -> iam.Role:
        role = iam.Role(
            self,
            "TaskRole",
            assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            description="pgarena worker: writes raw output and its step summary, meets its shards, answers the task token",
        )
        grant_access(role, Component.WORKER, table, bucket)
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"],
                resources=["*"],
            )
        )
        grant_read_pgarena_secrets(role, self)
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            "Task-token callbacks (states:SendTaskSuccess/Failure/Heartbeat) do not support resource-level "
            "permissions; the token itself is the authorization.",
            finding="Resource::*",
        )
        return role

    def _build_execution_role(self) -> iam.Role:
        return build_execution_role(self)

    def _build_task_definition(self, settings: DeploySettings, repo_root: Path) -> ecs.FargateTaskDefinition:
        return build_worker_task_definition(self, settings, repo_root, self.execution_role, self.log_group, self.task_role)


def build_execution_role(scope: Construct, role_name: str | None = None) -> iam.Role:
    """What ECS needs to start a worker: pull the image, ship the container's logs."""
    role = iam.Role(
        scope,
        "ExecutionRole",
        assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
        description="pgarena worker: ECS pulls the image and ships the container's logs",
        role_name=role_name,
    )
    acknowledge(
        role,
        "AwsSolutions-IAM5",
        "ecr:GetAuthorizationToken does not support resource-level permissions; image pulls themselves are "
        "scoped to the asset repository.",
        finding="Resource::*",
    )
    return role


def build_worker_task_definition(  # noqa: PLR0913  # the task definition's parts, each a resource of its own
    scope: Construct,
    settings: DeploySettings,
    repo_root: Path,
    execution_role: iam.IRole,
    log_group: logs.ILogGroup,
    task_role: iam.IRole | None = None,
    family: str | None = None,
) -> ecs.FargateTaskDefinition:
    """The worker's task definition, the same in the home stack and every worker site (size, image, logs)."""
    task_definition = ecs.FargateTaskDefinition(
        scope,
        "WorkerTask",
        cpu=settings.worker_cpu_units,
        memory_limit_mib=settings.worker_memory_mib,
        task_role=task_role,
        execution_role=execution_role,
        family=family,
        runtime_platform=ecs.RuntimePlatform(
            operating_system_family=ecs.OperatingSystemFamily.LINUX,
            cpu_architecture=ecs.CpuArchitecture.X86_64,
        ),
    )
    add_worker_container(task_definition, repo_root, log_group)
    return task_definition


def add_worker_container(
    task_definition: ecs.TaskDefinition,
    repo_root: Path,
    log_group: logs.ILogGroup,
    memory_limit_mib: int | None = None,
    cpu: int | None = None,
) -> ecs.ContainerDefinition:
    """The worker container: the one image (an asset of the stack, so every task definition of it pulls the
    same), its logs in `log_group`. Memory and CPU for task definitions that set none of their own (EXTERNAL)."""
    # Synth stages the build context (pip downloads the wheels once per requirements, no Docker);
    # `cdk deploy` builds and pushes the image, to each region's asset repository. The local runtime's
    # container workers build the same.
    context = worker_image.stage_context(repo_root, repo_root / constants.WORKER_IMAGE_ASSET_DIR)
    image = ecs.ContainerImage.from_asset(
        str(context),
        file=worker_image.DOCKERFILE,
        platform=ecr_assets.Platform.LINUX_AMD64,
    )
    return task_definition.add_container(
        constants.WORKER_CONTAINER_NAME,
        container_name=constants.WORKER_CONTAINER_NAME,
        image=image,
        memory_limit_mib=memory_limit_mib,
        cpu=cpu,
        logging=ecs.LogDrivers.aws_logs(stream_prefix=constants.WORKER_LOG_STREAM_PREFIX, log_group=log_group),
    )
