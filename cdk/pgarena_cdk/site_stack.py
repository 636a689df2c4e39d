"""A worker site: the workers' capacity in another region, next to the databases there.

One stack per region of `pgarena:sites`, deployed by `cdk deploy --all` beside the home stack. It holds
what RunTask needs in its region (cluster, task definition, network, log group, execution role) and
nothing of the campaign: the state machine, the bucket and the table stay home, where the workers
report (they run as the home stack's task role, named in RunTask's overrides).

The home stack is environment-agnostic and cannot reference this one's tokens, so the cluster, task
family and roles have names derived from the home stack's name (pgarena.aws.deployment) and the rest is
published in an SSM parameter of this region that launch_worker reads.

A worker task here that stops before it runs is told by ECS to this region's EventBridge only: the stack
has its own rule on its cluster and its own task_stopped function, which fails the step in the home region
the task's overrides name (pgarena.aws.task_stopped; docs/guide/05-deploy.md, "Sites", says why not a
rule forwarding to the home region's bus).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Environment, Stack, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from pgarena.aws.deployment import (
    site_cluster_name,
    site_execution_role_name,
    site_parameter_name,
    site_task_family,
    site_task_role_name,
)
from pgarena_cdk import constants
from pgarena_cdk.compute_construct import build_execution_role, build_worker_task_definition
from pgarena_cdk.orchestration_construct import (
    TASK_STOPPED_WILDCARD,
    FunctionCode,
    build_function,
    dependencies_layer,
    fail_steps_of_unstarted_workers,
    repository_code,
)
from pgarena_cdk.placement_construct import PlacementConstruct
from pgarena_cdk.settings import DeploySettings, SiteSpec


def site_stack_id(region: str, stack_name: str = constants.STACK_ID) -> str:
    return f"{stack_name}{constants.SITE_STACK_ID_INFIX}{region}"


class WorkerSiteStack(Stack):
    def __init__(
        self, scope: Construct, id_: str, site: SiteSpec, settings: DeploySettings, repo_root: Path, **kwargs: Any
    ) -> None:
        super().__init__(
            scope,
            id_,
            description=f"pgarena worker site in {site.region}: workers next to the databases there",
            # The region is fixed (RunTask is regional); the account stays the one deploying, unresolved at synth.
            env=Environment(region=site.region),
            **kwargs,
        )
        Tags.of(self).add("service", constants.SERVICE_NAME)
        self.site = site
        self.home_stack_name = settings.stack_name
        # No bucket here for flow logs: they go to CloudWatch Logs in this region.
        flow_log_group = logs.LogGroup(self, "FlowLogGroup", retention=settings.log_retention)
        self.placement = PlacementConstruct(self, "Placement", site, ec2.FlowLogDestination.to_cloud_watch_logs(flow_log_group))
        self.cluster = ecs.Cluster(
            self,
            "Cluster",
            cluster_name=site_cluster_name(settings.stack_name),
            vpc=self.placement.vpc,
            container_insights_v2=ecs.ContainerInsights.ENABLED,
            enable_fargate_capacity_providers=settings.fargate_spot,
        )
        self.log_group = logs.LogGroup(self, "WorkerLogGroup", retention=settings.log_retention)
        self.execution_role = build_execution_role(self, role_name=site_execution_role_name(site.region, settings.stack_name))
        self.task_role = self._build_task_role(settings.stack_name)
        # The same size as the home stack's workers: sites compare databases, never worker sizes.
        self.task_definition = build_worker_task_definition(
            self,
            settings,
            repo_root,
            self.execution_role,
            self.log_group,
            self.task_role,
            family=site_task_family(settings.stack_name),
        )
        self.parameter = self._publish(settings)
        self.task_stopped_function = self._fail_steps_of_unstarted_workers(settings, repo_root)
        CfnOutput(self, "WorkerClusterArn", value=self.cluster.cluster_arn)
        CfnOutput(self, constants.OUTPUT_WORKER_SECURITY_GROUPS, value=self.placement.security_group_ids_csv)
        CfnOutput(self, constants.OUTPUT_WORKER_SUBNETS, value=self.placement.subnet_ids_csv)

    def _build_task_role(self, stack_name: str) -> iam.Role:
        """The task definition's role, named so that the home stack grants launch_worker iam:PassRole on it
        (CDK's default would be an unnamed role no one may pass). It may do nothing: workers here run as the
        home task role, RunTask's override (IAM is global; the results are home)."""
        return iam.Role(
            self,
            "TaskRole",
            assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            role_name=site_task_role_name(self.site.region, stack_name),
            description="pgarena worker site: the task definition's role; workers run as the home task role (RunTask's override)",
        )

    def _fail_steps_of_unstarted_workers(self, settings: DeploySettings, repo_root: Path) -> lambda_.Function:
        """This region's task_stopped function (the home stack's code and layer) behind the rule on this
        site's cluster: a worker that never starts here fails its step at once, as one at home does."""
        source = FunctionCode(repository_code(repo_root), [dependencies_layer(self, repo_root)], settings.log_retention)
        function = build_function(self, constants.TASK_STOPPED, {}, source, wildcard_reason=TASK_STOPPED_WILDCARD)
        fail_steps_of_unstarted_workers(self, function, self.cluster.cluster_arn)
        return function

    def _publish(self, settings: DeploySettings) -> ssm.StringParameter:
        """The site as launch_worker reads it (pgarena.aws.sites.WorkerSite)."""
        site = {
            "region": self.site.region,
            "cluster_arn": self.cluster.cluster_arn,
            "task_definition_arn": self.task_definition.task_definition_arn,
            "container_name": constants.WORKER_CONTAINER_NAME,
            "subnets": [subnet.subnet_id for subnet in self.placement.subnets],
            "security_groups": [group.security_group_id for group in self.placement.security_groups],
            "launch_type": constants.LAUNCH_TYPE,
            "capacity_provider": constants.SPOT_CAPACITY_PROVIDER if settings.fargate_spot else "",
            "assign_public_ip": constants.ASSIGN_PUBLIC_IP,
        }
        return ssm.StringParameter(
            self,
            "SiteParameter",
            parameter_name=site_parameter_name(self.site.region, self.home_stack_name),
            string_value=self.to_json_string(site),
            description="pgarena worker site: what launch_worker needs to start workers in this region",
        )
