"""External sites (ECS Anywhere): machines in another cloud, next to the databases there, registered to the
home cluster and given the `pgarena.site` attribute; launch_worker places a target's workers on them.

What it creates, once for all sites (the placement constraint tells them apart):
- the instance role the machines' SSM and ECS agents act as (an SSM activation names it);
- an EXTERNAL task definition: the worker image, the home task role and execution role, the size of the
  Fargate workers, bridge network (a machine outside AWS has no subnets), Linux on x86_64 only (the image
  is amd64: ECS places its tasks on x86_64 machines only, never on an ARM64 one where it cannot start);
- per site, an SSM parameter recording it (what launch_worker uses and how a machine joins), and outputs
  with the commands that create an activation and register a machine (docs/guide/05-deploy.md, Sites).

There is no CloudFormation resource for an SSM activation (its code is shown once, at creation), so the
user runs `aws ssm create-activation` with the command in the stack's outputs.
"""

from __future__ import annotations

import json
from pathlib import Path

from aws_cdk import ArnFormat, CfnElement, CfnOutput, Fn, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from pgarena.model.sites import SITE_ATTRIBUTE
from pgarena_cdk import constants
from pgarena_cdk.compute_construct import ComputeConstruct, add_worker_container
from pgarena_cdk.nag import acknowledge
from pgarena_cdk.settings import DeploySettings

EXTERNAL_SITE_PARAMETER_PREFIX = "/pgarena/"
# What the ECS agent calls on its cluster and its own container instance (the ECS part of
# AmazonEC2ContainerServiceforEC2Role, without CreateCluster, ECR or logs: the task's execution role pulls
# the image and ships the logs).
AGENT_ACTIONS = [
    "ecs:RegisterContainerInstance",
    "ecs:DeregisterContainerInstance",
    "ecs:UpdateContainerInstancesState",
    "ecs:Poll",
    "ecs:StartTelemetrySession",
    "ecs:Submit*",
]


def external_site_parameter_name(site: str, stack_name: str = constants.STACK_ID) -> str:
    """Named after the stack too: SSM names are regional, and two deployments may share a region."""
    return f"{EXTERNAL_SITE_PARAMETER_PREFIX}{stack_name}/external-sites/{site}"


class ExternalSitesConstruct(Construct):
    def __init__(self, scope: Construct, id_: str, settings: DeploySettings, repo_root: Path, compute: ComputeConstruct) -> None:
        super().__init__(scope, id_)
        self.sites = list(settings.external_sites)
        self.stack_name = settings.stack_name
        self.instance_role = self._build_instance_role(compute.cluster)
        self.task_definition = self._build_task_definition(settings, repo_root, compute)
        for site in self.sites:
            self._record(site, compute.cluster)
        self._build_outputs(compute.cluster)

    def _build_instance_role(self, cluster: ecs.Cluster) -> iam.Role:
        """What a registered machine's agents act as: SSM's managed-instance core, and the ECS agent's calls
        on this cluster and its own container instances only."""
        role = iam.Role(
            self,
            "InstanceRole",
            assumed_by=iam.ServicePrincipal("ssm.amazonaws.com"),
            description="pgarena external site: the SSM and ECS agents of machines registered through ECS Anywhere",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSSMManagedInstanceCore")],
        )
        instances = Stack.of(self).format_arn(
            service="ecs",
            resource="container-instance",
            resource_name=f"{cluster.cluster_name}/*",
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )
        role.add_to_policy(iam.PolicyStatement(actions=AGENT_ACTIONS, resources=[cluster.cluster_arn, instances]))
        # DiscoverPollEndpoint names no resource (where the agent is told to poll).
        role.add_to_policy(iam.PolicyStatement(actions=["ecs:DiscoverPollEndpoint"], resources=["*"]))
        resource = cluster.node.default_child
        if not isinstance(resource, CfnElement):  # the cluster is the stack's own, so it has its resource
            raise ValueError(f"{cluster.node.path} is not a cluster defined in this stack")
        cluster_id = Stack.of(self).get_logical_id(resource)
        acknowledge(
            role,
            "AwsSolutions-IAM4",
            "AmazonSSMManagedInstanceCore is what ECS Anywhere requires of an external instance's role (the SSM "
            "agent's registration and sessions); the ECS agent's own calls are granted inline on this cluster only.",
            finding="Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore",
        )
        reasons = {
            "Resource::*": "ecs:DiscoverPollEndpoint supports no resource-level permission.",
            "Action::ecs:Submit*": "The ECS agent's state reports (task, container, attachment), on this cluster only.",
            f"Resource::arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:container-instance/<{cluster_id}>/*": (
                "Container instances register at run time: their ids are unknown at deploy; this cluster's only."
            ),
        }
        for finding, reason in reasons.items():
            acknowledge(role, "AwsSolutions-IAM5", reason, finding=finding)
        return role

    def _build_task_definition(
        self, settings: DeploySettings, repo_root: Path, compute: ComputeConstruct
    ) -> ecs.ExternalTaskDefinition:
        """The worker as an EXTERNAL task: the same image, roles and logs as on Fargate, the same size, on
        Linux x86_64 machines only (the image is built for linux/amd64)."""
        task_definition = ecs.ExternalTaskDefinition(
            self,
            "ExternalWorkerTask",
            network_mode=ecs.NetworkMode.BRIDGE,
            task_role=compute.task_role,
            execution_role=compute.execution_role,
        )
        # ExternalTaskDefinition takes no runtime platform; CloudFormation's resource does. Without it ECS
        # would place the amd64 image on an ARM64 machine too, where every task crashes at start.
        resource = task_definition.node.default_child
        if not isinstance(resource, ecs.CfnTaskDefinition):
            raise TypeError(f"{task_definition.node.path} has no task definition resource")
        resource.runtime_platform = ecs.CfnTaskDefinition.RuntimePlatformProperty(
            cpu_architecture=constants.WORKER_CPU_ARCHITECTURE, operating_system_family=constants.WORKER_OS_FAMILY
        )
        # Memory and CPU per container, as the Fargate workers' task (1024 units a vCPU): sites compare
        # databases, never worker sizes.
        add_worker_container(
            task_definition,
            repo_root,
            compute.log_group,
            memory_limit_mib=settings.worker_memory_mib,
            cpu=settings.worker_cpu_units,
        )
        return task_definition

    def _record(self, site: str, cluster: ecs.ICluster) -> None:
        """The site as a parameter: what its machines carry and what launch_worker starts there."""
        value = {
            "site": site,
            "cluster_arn": cluster.cluster_arn,
            "task_definition_arn": self.task_definition.task_definition_arn,
            "launch_type": "EXTERNAL",
            "attribute": {SITE_ATTRIBUTE: site},
            "instance_role": self.instance_role.role_name,
        }
        ssm.StringParameter(
            self,
            f"Site{''.join(part.capitalize() for part in site.split('-'))}Parameter",
            parameter_name=external_site_parameter_name(site, self.stack_name),
            string_value=Stack.of(self).to_json_string(value),
            description=f"pgarena external site {site}: machines registered through ECS Anywhere with {SITE_ATTRIBUTE}={site}",
        )

    def _build_outputs(self, cluster: ecs.ICluster) -> None:
        stack = Stack.of(self)
        # What `pgarena validate --stack` and `run --aws` check placement.site against.
        CfnOutput(
            stack,
            constants.OUTPUT_EXTERNAL_SITES,
            value=",".join(self.sites),
            description="external sites (ECS Anywhere): targets reach them with placement.site",
        )
        CfnOutput(stack, "ExternalInstanceRoleName", value=self.instance_role.role_name)
        CfnOutput(
            stack,
            "ExternalSiteActivationCommand",
            description="run once per machine to register (prints ActivationId and ActivationCode)",
            value=Fn.join(
                "",
                [
                    "aws ssm create-activation --iam-role ",
                    self.instance_role.role_name,
                    f" --registration-limit 1 --region {stack.region} --default-instance-name pgarena-SITE",
                ],
            ),
        )
        CfnOutput(
            stack,
            "ExternalSiteInstallCommand",
            description="run on the machine (replace SITE, ID and CODE): ECS Anywhere's install script, then the site's attribute",
            value=Fn.join(
                "",
                [
                    "curl -fsSLo /tmp/ecs-anywhere-install.sh "
                    '"https://amazon-ecs-agent.s3.amazonaws.com/ecs-anywhere-install-latest.sh" && '
                    "sudo mkdir -p /etc/ecs && echo 'ECS_INSTANCE_ATTRIBUTES="
                    + json.dumps({SITE_ATTRIBUTE: "SITE"}, separators=(",", ":"))
                    + "' | sudo tee -a /etc/ecs/ecs.config && "
                    f"sudo bash /tmp/ecs-anywhere-install.sh --region {stack.region} --cluster ",
                    cluster.cluster_name,
                    " --activation-id ID --activation-code CODE",
                ],
            ),
        )
