"""The campaign state machine (ASL kept in statemachines/) and the functions it invokes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from pgarena.aws.access import PASSED_ROLES, PUBLISHES_ALERTS, RESULTS_TABLE_PLACEHOLDER, SERVICE_ACTIONS, Component, WorkerRole
from pgarena.aws.deployment import (
    rule_pattern,
    site_cluster_name,
    site_execution_role_name,
    site_parameter_name,
    site_task_family,
    site_task_role_name,
)
from pgarena_cdk import constants
from pgarena_cdk.bundling import dependencies_layer_code, history_layer_code
from pgarena_cdk.compute_construct import ComputeConstruct
from pgarena_cdk.external_sites_construct import ExternalSitesConstruct
from pgarena_cdk.nag import acknowledge
from pgarena_cdk.permissions import grant_access, grant_read_pgarena_secrets
from pgarena_cdk.placement_construct import PlacementConstruct
from pgarena_cdk.settings import DeploySettings

RUNTIME = lambda_.Runtime.PYTHON_3_12
# x86_64: hdrhistogram publishes no aarch64 wheels, and the tests import-test the bundles on this
# (x86_64) machine with the runtime's interpreter.
ARCHITECTURE = lambda_.Architecture.X86_64


TASK_STOPPED_WILDCARD = (
    "Task-token callbacks (states:SendTaskFailure) do not support resource-level permissions; "
    "the token read from the stopped task's overrides is the authorization."
)


@dataclass(frozen=True)
class FunctionCode:
    """What every pgarena function is built from: the repository's code, the dependencies layer, and how long
    its logs are kept."""

    code: lambda_.Code
    layers: list[lambda_.ILayerVersion]
    log_retention: logs.RetentionDays


def repository_code(repo_root: Path) -> lambda_.Code:
    return lambda_.Code.from_asset(str(repo_root), exclude=constants.LAMBDA_CODE_EXCLUDE)


def _layer(scope: Construct, id_: str, code: lambda_.Code, description: str) -> lambda_.LayerVersion:
    return lambda_.LayerVersion(
        scope,
        id_,
        code=code,
        compatible_runtimes=[RUNTIME],
        compatible_architectures=[ARCHITECTURE],
        description=description,
    )


def dependencies_layer(scope: Construct, repo_root: Path) -> lambda_.LayerVersion:
    code = dependencies_layer_code(repo_root, RUNTIME, ARCHITECTURE)
    return _layer(scope, "DependenciesLayer", code, "pgarena's third-party dependencies (pyproject.toml), bundled at synth")


def history_layer(scope: Construct, repo_root: Path) -> lambda_.LayerVersion:
    code = history_layer_code(repo_root, RUNTIME, ARCHITECTURE)
    return _layer(
        scope, "ChangePointLayer", code, "ruptures, numpy and scipy (pyproject.toml's history extra): finalize's change points"
    )


def build_function(  # noqa: PLR0913  # the function's spec, settings, code, network and wildcard's reason
    scope: Construct,
    spec: constants.FunctionSpec,
    environment: dict[str, str],
    source: FunctionCode,
    placement: PlacementConstruct | None = None,
    wildcard_reason: str | None = None,
) -> lambda_.Function:
    """A pgarena function: its own role and log group, active tracing, the layer; in `placement`'s subnets when given."""
    log_group = logs.LogGroup(scope, f"{spec.construct_id}LogGroup", retention=source.log_retention)
    # An explicit role instead of the AWSLambdaBasicExecutionRole managed policy: logs go to this
    # function's own log group only.
    role = iam.Role(
        scope,
        f"{spec.construct_id}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"pgarena {spec.handler}",
    )
    log_group.grant_write(role)
    wildcard_reasons = ["X-Ray trace segments and telemetry (active tracing) do not support resource-level permissions."]
    if wildcard_reason:
        wildcard_reasons.append(wildcard_reason)
    network: dict[str, Any] = {}  # lambda_.Function keywords, absent outside a VPC
    if placement is not None:
        wildcard_reasons.append(_grant_network_interfaces(role))
        network = {
            "vpc": placement.vpc,
            "vpc_subnets": placement.subnet_selection,
            "security_groups": placement.security_groups,
        }
    function = lambda_.Function(
        scope,
        spec.construct_id,
        runtime=RUNTIME,
        architecture=ARCHITECTURE,
        handler=spec.handler,
        code=source.code,
        layers=source.layers,
        role=role,
        log_group=log_group,
        tracing=lambda_.Tracing.ACTIVE,
        memory_size=spec.memory_mib,
        timeout=Duration.seconds(spec.timeout_s),
        environment={
            "POWERTOOLS_SERVICE_NAME": constants.SERVICE_NAME,
            "POWERTOOLS_LOG_LEVEL": constants.POWERTOOLS_LOG_LEVEL,
            **environment,
        },
        **network,
    )
    acknowledge(role, "AwsSolutions-IAM5", " ".join(wildcard_reasons), finding="Resource::*")
    acknowledge(
        function,
        "AwsSolutions-L1",
        "Pinned to python3.12 on purpose: the dependency layer is built from cp312 wheels, the worker "
        "image runs the same interpreter and the tests import every handler's bundle with it.",
    )
    return function


def _grant_network_interfaces(role: iam.Role) -> str:
    """What Lambda needs to attach a function to subnets; returns the reason for its wildcard."""
    role.add_to_policy(
        iam.PolicyStatement(
            actions=[
                "ec2:CreateNetworkInterface",
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeSubnets",
                "ec2:DeleteNetworkInterface",
                "ec2:AssignPrivateIpAddresses",
                "ec2:UnassignPrivateIpAddresses",
            ],
            resources=["*"],
        )
    )
    return (
        "Lambda's network-interface actions (those of AWSLambdaVPCAccessExecutionRole) are granted on * "
        "as in that managed policy; the function runs in the given subnets only."
    )


def fail_steps_of_unstarted_workers(scope: Construct, function: lambda_.Function, cluster_arn: str) -> events.Rule:
    """The rule on `cluster_arn`'s stopped worker tasks (pgarena.aws.deployment.rule_pattern), to the
    task_stopped `function` of the same region (rules are regional), allowed SendTaskFailure only."""
    function.add_to_role_policy(iam.PolicyStatement(actions=["states:SendTaskFailure"], resources=["*"]))
    pattern = rule_pattern(cluster_arn)
    return events.Rule(
        scope,
        "WorkerTaskStoppedRule",
        description="pgarena: fail at once the step of a worker whose task stopped before it ran",
        event_pattern=events.EventPattern(source=pattern["source"], detail_type=pattern["detail-type"], detail=pattern["detail"]),
        targets=[events_targets.LambdaFunction(function, retry_attempts=2)],
    )


def _role(function: lambda_.Function) -> iam.IRole:
    # Function.role is optional for imported functions; every function here gets its own (_build_function).
    if function.role is None:
        raise ValueError(f"{function.node.path} has no role")
    return function.role


class OrchestrationConstruct(Construct):
    def __init__(  # noqa: PLR0913  # the constructs and resources it wires together
        self,
        scope: Construct,
        id_: str,
        settings: DeploySettings,
        repo_root: Path,
        placement: PlacementConstruct,
        compute: ComputeConstruct,
        bucket: s3.IBucket,
        table: dynamodb.ITable,
        external_sites: ExternalSitesConstruct | None = None,
    ) -> None:
        super().__init__(scope, id_)
        self._settings = settings
        self._table = table
        self._bucket = bucket
        self._code = repository_code(repo_root)
        self._layers = self._build_layers(repo_root)
        # Only the functions that finalize a campaign look for change points: the layer is theirs alone.
        self._history_layers: list[lambda_.ILayerVersion] = [history_layer(self, repo_root)]
        self.alert_topic = self._alert_topic()
        results_env = {"RESULTS_BUCKET": bucket.bucket_name, "RESULTS_TABLE": table.table_name}

        # Preflight connects to the targets from the workers' subnets and security groups: it reaches a
        # private database as they do, and leaves through the same NAT (the IP a firewall allows).
        # Validate And Plan refuses a placement.region no site serves; launch_worker launches in the site's region.
        # So does it an unserved placement.site; launch_worker starts an external site's workers as EXTERNAL tasks.
        sites_env = {
            "WORKER_SITE_REGIONS": ",".join(settings.site_regions),
            "WORKER_EXTERNAL_SITES": ",".join(settings.external_sites),
        }
        self.validate_function = self._build_function(constants.VALIDATE, environment={**results_env, **sites_env})
        self.preflight_function = self._build_function(constants.PREFLIGHT, environment=results_env, placement=placement)
        self.launch_worker_function = self._build_function(
            constants.LAUNCH_WORKER,
            environment={**results_env, **sites_env, **self._launcher_environment(placement, compute, external_sites)},
        )
        self.release_lease_function = self._build_function(constants.RELEASE_LEASE, environment=results_env)
        self.aggregate_function = self._build_function(constants.AGGREGATE, environment=results_env)
        # Its next phases name the targets preflighted on their site, as Validate And Plan's do.
        self.decide_function = self._build_function(constants.DECIDE, environment={**results_env, **sites_env})
        # The guard prices worker time with the task definition's size.
        self.cost_guard_function = self._build_function(
            constants.COST_GUARD,
            environment={
                **results_env,
                "WORKER_CPU_UNITS": str(settings.worker_cpu_units),
                "WORKER_MEMORY_MIB": str(settings.worker_memory_mib),
            },
        )

        grant_read_pgarena_secrets(_role(self.preflight_function), self)
        self._grant_launch_worker(self.launch_worker_function, compute)
        for region in settings.site_regions:
            self._grant_launch_in_site(self.launch_worker_function, compute, region)
        if external_sites is not None:
            # The external task definition, in the home cluster; its roles are the home ones, already passable.
            self.launch_worker_function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["ecs:RunTask"],
                    resources=[external_sites.task_definition.task_definition_arn],
                    conditions={"ArnEquals": {"ecs:cluster": compute.cluster.cluster_arn}},
                )
            )
        self.state_machine = self._build_state_machine(repo_root)
        self.finalize_stopped_function = self._finalize_stopped_executions(results_env)
        self.task_stopped_function = self._fail_steps_of_unstarted_workers(compute)

    @property
    def functions(self) -> dict[constants.FunctionSpec, lambda_.Function]:
        """Every function of the campaign's orchestration: the state machine's and finalize_stopped."""
        return {
            **self.state_machine_functions,
            constants.FINALIZE_STOPPED: self.finalize_stopped_function,
            constants.TASK_STOPPED: self.task_stopped_function,
        }

    @property
    def state_machine_functions(self) -> dict[constants.FunctionSpec, lambda_.Function]:
        return {
            constants.VALIDATE: self.validate_function,
            constants.PREFLIGHT: self.preflight_function,
            constants.LAUNCH_WORKER: self.launch_worker_function,
            constants.RELEASE_LEASE: self.release_lease_function,
            constants.AGGREGATE: self.aggregate_function,
            constants.DECIDE: self.decide_function,
            constants.COST_GUARD: self.cost_guard_function,
        }

    def _finalize_stopped_executions(self, results_env: dict[str, str]) -> lambda_.Function:
        """An execution stopped, failed or timed out never reaches Aggregate And Rank: EventBridge hands its
        status change to finalize_stopped, which ends the campaign as aggregate would."""
        function = self._build_function(constants.FINALIZE_STOPPED, environment=results_env)
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["states:GetExecutionHistory"],
                resources=[
                    Stack.of(self).format_arn(
                        service="states",
                        resource="execution",
                        resource_name=f"{self.state_machine.state_machine_name}:*",
                        arn_format=ArnFormat.COLON_RESOURCE_NAME,
                    )
                ],
            )
        )
        acknowledge(
            _role(function),
            "AwsSolutions-IAM5",
            "GetExecutionHistory on this state machine's executions: their names (campaign ids) are not known at deploy time.",
            finding="Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
            "<OrchestrationCampaignStateMachine81E29F25.Name>:*",
        )
        events.Rule(
            self,
            "StoppedExecutionRule",
            description="pgarena: finalize campaigns whose execution ended without Aggregate And Rank",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail={
                    "status": list(constants.STOPPED_STATUSES),
                    "stateMachineArn": [self.state_machine.state_machine_arn],
                },
            ),
            targets=[events_targets.LambdaFunction(function, retry_attempts=2)],
        )
        return function

    def _fail_steps_of_unstarted_workers(self, compute: ComputeConstruct) -> lambda_.Function:
        """A worker task that stops before its container runs never beats: ECS's task state change hands the
        stop to task_stopped, which fails the step with ECS's stoppedReason (pgarena.aws.task_stopped). This
        rule covers the home cluster (Fargate and the external sites' EXTERNAL tasks); each site stack has its own."""
        function = self._build_function(constants.TASK_STOPPED, environment={}, wildcard_reason=TASK_STOPPED_WILDCARD)
        fail_steps_of_unstarted_workers(self, function, compute.cluster.cluster_arn)
        return function

    def add_function(self, spec: constants.FunctionSpec, environment: dict[str, str]) -> lambda_.Function:
        """A function built like the state machine's (role, log group, tracing, layer) for another caller."""
        return self._build_function(spec, environment=environment)

    def _build_layers(self, repo_root: Path) -> list[lambda_.ILayerVersion]:
        return [dependencies_layer(self, repo_root)]

    def _launcher_environment(
        self, placement: PlacementConstruct, compute: ComputeConstruct, external_sites: ExternalSitesConstruct | None
    ) -> dict[str, str]:
        environment = {
            "CLUSTER_ARN": compute.cluster.cluster_arn,
            "TASK_DEFINITION_ARN": compute.task_definition.task_definition_arn,
            "WORKER_CONTAINER_NAME": compute.container_name,
            "WORKER_SUBNETS": placement.subnet_ids_csv,
            "WORKER_SECURITY_GROUPS": placement.security_group_ids_csv,
            "LAUNCH_TYPE": constants.LAUNCH_TYPE,
            "ASSIGN_PUBLIC_IP": constants.ASSIGN_PUBLIC_IP,
            # FARGATE_SPOT when the stack enables Spot: launch_worker then sends a capacity provider strategy
            "CAPACITY_PROVIDER": compute.capacity_provider or "",
            # Workers in every site run as this role (RunTask's taskRoleArn override)
            "WORKER_TASK_ROLE_ARN": compute.task_role.role_arn,
            # Names the sites' parameters (pgarena.aws.deployment.site_parameter_name)
            "STACK_NAME": self._settings.stack_name,
        }
        # The EXTERNAL task definition, for targets on external sites (none: no such site is served).
        environment["EXTERNAL_TASK_DEFINITION_ARN"] = external_sites.task_definition.task_definition_arn if external_sites else ""
        return environment

    def _build_function(
        self,
        spec: constants.FunctionSpec,
        environment: dict[str, str],
        placement: PlacementConstruct | None = None,
        wildcard_reason: str | None = None,
    ) -> lambda_.Function:
        alerts = spec.component in PUBLISHES_ALERTS
        layers = [*self._layers, *self._history_layers] if alerts else self._layers
        if alerts:
            environment = {**environment, **self._alert_environment()}
        services = sorted(str(action) for action in SERVICE_ACTIONS.get(spec.component, ()))
        if services:
            reason = f"{', '.join(services)} take no resource in IAM (no resource type in the service authorization reference)."
            wildcard_reason = f"{wildcard_reason} {reason}" if wildcard_reason else reason
        function = build_function(
            self,
            spec,
            environment,
            FunctionCode(self._code, layers, self._settings.log_retention),
            placement,
            wildcard_reason,
        )
        # Table and bucket grants come from the access map, never written here; so do the service actions.
        grant_access(_role(function), spec.component, self._table, self._bucket)
        if alerts:
            self._grant_alerts(function)
        if services:
            _role(function).add_to_principal_policy(iam.PolicyStatement(actions=services, resources=["*"]))
        return function

    def _alert_topic(self) -> sns.ITopic | None:
        """The SNS topic of the change-point alerts: the one the context names, one the stack creates
        (`pgarena:alerts`: encrypted with SNS's AWS managed key, TLS only), or none."""
        settings = self._settings
        if settings.alert_topic_arn:
            return sns.Topic.from_topic_arn(self, "AlertTopic", settings.alert_topic_arn)
        if not settings.alerts_topic:
            return None
        return sns.Topic(
            self,
            "AlertTopic",
            display_name="pgarena change points",
            # SNS's AWS managed key: encrypted at rest with no key to administer; its key policy lets this
            # account's principals that may publish use it through SNS, so a publisher needs no KMS grant.
            master_key=kms.Alias.from_alias_name(self, "SnsManagedKey", "alias/aws/sns"),
            enforce_ssl=True,
        )

    def _alert_environment(self) -> dict[str, str]:
        return {
            "ALERT_EVENT_BUS": self._settings.alert_bus,
            "ALERT_TOPIC_ARN": self.alert_topic.topic_arn if self.alert_topic is not None else "",
        }

    def _grant_alerts(self, function: lambda_.Function) -> None:
        """PutEvents on the alert bus, Publish on the alert topic (when there is one): pgarena.aws.access.PUBLISHES_ALERTS."""
        bus = Stack.of(self).format_arn(service="events", resource="event-bus", resource_name=self._settings.alert_bus)
        function.add_to_role_policy(iam.PolicyStatement(actions=["events:PutEvents"], resources=[bus]))
        if self.alert_topic is not None:
            function.add_to_role_policy(iam.PolicyStatement(actions=["sns:Publish"], resources=[self.alert_topic.topic_arn]))

    def _grant_launch_worker(self, function: lambda_.Function, compute: ComputeConstruct) -> None:
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["ecs:RunTask"],
                resources=[compute.task_definition.task_definition_arn],
                conditions={"ArnEquals": {"ecs:cluster": compute.cluster.cluster_arn}},
            )
        )
        home = {WorkerRole.TASK: compute.task_role.role_arn, WorkerRole.EXECUTION: compute.execution_role.role_arn}
        _grant_pass_roles(function, home)

    def _grant_launch_in_site(self, function: lambda_.Function, compute: ComputeConstruct, region: str) -> None:
        """RunTask in a worker site's region, on its named cluster and task family; its task definition's roles
        and the home task role (the override) passed; its parameter read. Names, not tokens: the site is
        another region's stack, its names derived from this stack's (pgarena.aws.deployment)."""
        stack = Stack.of(self)
        name = self._settings.stack_name
        family = site_task_family(name)

        def arn(service: str, resource: str, name: str, region_: str | None = region) -> str:
            return stack.format_arn(service=service, region=region_, resource=resource, resource_name=name)

        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["ecs:RunTask"],
                resources=[arn("ecs", "task-definition", f"{family}:*")],
                conditions={"ArnEquals": {"ecs:cluster": arn("ecs", "cluster", site_cluster_name(name))}},
            )
        )
        site = {
            WorkerRole.TASK: compute.task_role.role_arn,
            WorkerRole.SITE_TASK: arn("iam", "role", site_task_role_name(region, name), region_=""),
            WorkerRole.SITE_EXECUTION: arn("iam", "role", site_execution_role_name(region, name), region_=""),
        }
        _grant_pass_roles(function, site)
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["ssm:GetParameter"],
                resources=[arn("ssm", "parameter", site_parameter_name(region, name).lstrip("/"))],
            )
        )
        acknowledge(
            _role(function),
            "AwsSolutions-IAM5",
            f"RunTask on every revision of the worker site's task family in {region} (a deploy adds revisions), "
            "only in that site's cluster (the ecs:cluster condition).",
            finding=f"Resource::arn:<AWS::Partition>:ecs:{region}:<AWS::AccountId>:task-definition/{family}:*",
        )

    def _build_state_machine(self, repo_root: Path) -> sfn.StateMachine:
        log_group = logs.LogGroup(self, "StateMachineLogGroup", retention=self._settings.log_retention)
        state_machine = sfn.StateMachine(
            self,
            "CampaignStateMachine",
            state_machine_type=sfn.StateMachineType.STANDARD,
            # The ASL stays a file (it also runs in the local runtime); CDK uploads it as an asset.
            definition_body=sfn.DefinitionBody.from_file(str(repo_root / constants.STATE_MACHINE_ASL)),
            definition_substitutions={
                **{spec.asl_placeholder: function.function_arn for spec, function in self.state_machine_functions.items()},
                RESULTS_TABLE_PLACEHOLDER: self._table.table_name,
            },
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
            tracing_enabled=True,
        )
        # A file-loaded definition gets no automatic grants. The ASL invokes unqualified ARNs, so
        # $LATEST is all the role needs.
        for function in self.state_machine_functions.values():
            function.grant_invoke_latest_version(state_machine)
        # Its own DynamoDB PutItem tasks (the outcomes), from the access map like every other role's grants.
        grant_access(state_machine.role, Component.STATE_MACHINE, self._table, self._bucket)
        acknowledge(
            state_machine.role,
            "AwsSolutions-IAM5",
            "CloudWatch Logs delivery (logs:CreateLogDelivery and related) and X-Ray tracing actions do not "
            "support resource-level permissions.",
            finding="Resource::*",
        )
        return state_machine


def _grant_pass_roles(function: lambda_.Function, arns: dict[WorkerRole, str]) -> None:
    """iam:PassRole, to ECS tasks only, on those of these roles the access map lets launch_worker pass."""
    passed = PASSED_ROLES[Component.LAUNCH_WORKER]
    function.add_to_role_policy(
        iam.PolicyStatement(
            actions=["iam:PassRole"],
            resources=[arn for role, arn in arns.items() if role in passed],
            conditions={"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}},
        )
    )
