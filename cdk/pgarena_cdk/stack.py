"""The one pgarena stack, composed of its constructs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Fn, Stack, Tags
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from pgarena_cdk import constants
from pgarena_cdk.compute_construct import ComputeConstruct
from pgarena_cdk.external_sites_construct import ExternalSitesConstruct
from pgarena_cdk.orchestration_construct import OrchestrationConstruct
from pgarena_cdk.placement_construct import PlacementConstruct
from pgarena_cdk.results_construct import ResultsConstruct
from pgarena_cdk.schedules_construct import SchedulesConstruct
from pgarena_cdk.settings import DeploySettings


class PgarenaStack(Stack):
    def __init__(self, scope: Construct, id_: str, settings: DeploySettings, repo_root: Path, **kwargs: Any) -> None:
        super().__init__(scope, id_, description="pgarena: serverless PostgreSQL benchmark coordinator", **kwargs)
        self._settings = settings
        Tags.of(self).add("service", constants.SERVICE_NAME)
        # The worker sites' stacks, set by the app (pgarena_cdk.application.build) beside this one.
        self.site_stacks: list[Stack] = []

        self.results = ResultsConstruct(self, "Results", settings)
        flow_logs = ec2.FlowLogDestination.to_s3(self.results.access_log_bucket, constants.FLOW_LOG_PREFIX)
        self.placement = PlacementConstruct(self, "Placement", settings, flow_logs)
        self.compute = ComputeConstruct(
            self,
            "Compute",
            settings,
            repo_root,
            self.placement,
            bucket=self.results.bucket,
            table=self.results.table,
        )
        # Machines in other clouds registered to the cluster (ECS Anywhere), when the context names any.
        self.external_sites = (
            ExternalSitesConstruct(self, "EcsAnywhere", settings, repo_root, self.compute) if settings.external_sites else None
        )
        self.orchestration = OrchestrationConstruct(
            self,
            "Orchestration",
            settings,
            repo_root,
            self.placement,
            self.compute,
            bucket=self.results.bucket,
            table=self.results.table,
            external_sites=self.external_sites,
        )
        self.schedules = SchedulesConstruct(
            self,
            "Schedules",
            settings.schedules,
            state_machine=self.orchestration.state_machine,
            bucket=self.results.bucket,
            add_function=self.orchestration.add_function,
        )
        self._build_outputs()

    def _build_outputs(self) -> None:
        CfnOutput(self, constants.OUTPUT_STATE_MACHINE_ARN, value=self.orchestration.state_machine.state_machine_arn)
        CfnOutput(self, constants.OUTPUT_RESULTS_BUCKET, value=self.results.bucket.bucket_name)
        CfnOutput(self, constants.OUTPUT_RESULTS_TABLE, value=self.results.table.table_name)
        # Ctrl-C in `pgarena run --aws` stops the campaign's worker tasks in this cluster.
        CfnOutput(self, constants.OUTPUT_WORKER_CLUSTER_ARN, value=self.compute.cluster.cluster_arn)
        # What a database's firewall must allow: the workers' (and preflight's) security groups, for
        # RDS/Aurora security-group rules, and the NAT's public IPs, for Cloud SQL / Azure allow-lists.
        CfnOutput(
            self,
            constants.OUTPUT_WORKER_SECURITY_GROUPS,
            value=self.placement.security_group_ids_csv,
            description="security groups of the workers and preflight: allow them in the targets' inbound rules",
        )
        CfnOutput(self, constants.OUTPUT_WORKER_SUBNETS, value=self.placement.subnet_ids_csv)
        # What `pgarena validate --stack` and `run --aws` check placements against (absent: home only;
        # CloudFormation refuses an empty output).
        if self._settings.site_regions:
            CfnOutput(
                self,
                constants.OUTPUT_WORKER_SITE_REGIONS,
                value=",".join(self._settings.site_regions),
                description="regions with a worker site besides this stack's own",
            )
        if (topic := self.orchestration.alert_topic) is not None:
            CfnOutput(
                self,
                constants.OUTPUT_ALERT_TOPIC_ARN,
                value=topic.topic_arn,
                description="the SNS topic of the change-point alerts: subscribe to it",
            )
        if ips := self.placement.nat_egress_ips:
            CfnOutput(
                self,
                constants.OUTPUT_NAT_EGRESS_IPS,
                value=Fn.join(",", ips),
                description="public IPs the workers and preflight connect from: add them to Cloud SQL / Azure allow-lists",
            )
