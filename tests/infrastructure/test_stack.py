"""The stack as synthesized from cdk.json alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match

from pgarena.aws import access
from pgarena.aws.access import RESULTS_TABLE_PLACEHOLDER
from pgarena.aws.settings import LauncherEnv, ResultsEnv
from pgarena.aws.store import RAW_TAG
from pgarena_cdk import constants
from pgarena_cdk.nag import add_security_checks
from tests.infrastructure import template as cfn

pytestmark = pytest.mark.infrastructure

REPO_ROOT = Path(__file__).resolve().parents[2]
ASL_FILE = REPO_ROOT / constants.STATE_MACHINE_ASL
HANDLERS = {
    "functions/validate/handler.handler",
    "functions/preflight/handler.handler",
    "functions/launch_worker/handler.handler",
    "functions/release_lease/handler.handler",
    "functions/aggregate/handler.handler",
    "functions/cost_guard/handler.handler",
    "functions/decide/handler.handler",
}
# Started by EventBridge, not by the state machine: the state machine may not invoke it.
FINALIZE_STOPPED_HANDLER = "functions/finalize_stopped/handler.handler"
TASK_STOPPED_HANDLER = "functions/task_stopped/handler.handler"


def _get_att_targets(value) -> list[str]:
    """Logical ids named by Fn::GetAtt anywhere inside a template value."""
    if isinstance(value, dict):
        if "Fn::GetAtt" in value:
            return [value["Fn::GetAtt"][0]]
        return [target for item in value.values() for target in _get_att_targets(item)]
    if isinstance(value, list):
        return [target for item in value for target in _get_att_targets(item)]
    return []


def _results_bucket(synth) -> dict:
    return synth.resources[cfn.logical_id(synth, "AWS::S3::Bucket", "ResultsBucket")]["Properties"]


# --- Results ---------------------------------------------------------------------------------


def test_results_bucket_is_encrypted(default_synth):
    # Given the default synth / When reading the results bucket
    encryption = _results_bucket(default_synth)["BucketEncryption"]

    # Then every object is encrypted at rest with S3-managed keys
    assert encryption["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}


def test_results_bucket_blocks_public_access(default_synth):
    # Given the default synth / When reading the results bucket
    block = _results_bucket(default_synth)["PublicAccessBlockConfiguration"]

    # Then all four public-access switches are on
    assert block == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }


def test_results_bucket_refuses_requests_without_tls(default_synth):
    # Given the results bucket's policy
    bucket_id = cfn.logical_id(default_synth, "AWS::S3::Bucket", "ResultsBucket")
    (policy,) = [
        body["Properties"]["PolicyDocument"]
        for body in default_synth.resources_of_type("AWS::S3::BucketPolicy").values()
        if body["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]

    # When looking for the deny on insecure transport
    denies = [
        s
        for s in policy["Statement"]
        if s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
    ]

    # Then every S3 action is denied without TLS
    assert [d["Action"] for d in denies] == ["s3:*"]


def test_results_bucket_is_versioned(default_synth):
    # Given the default synth / When reading the results bucket
    versioning = _results_bucket(default_synth)["VersioningConfiguration"]

    # Then it keeps every version of an object
    assert versioning == {"Status": "Enabled"}


def test_results_bucket_logs_access_to_a_separate_bucket(default_synth):
    # Given the default synth / When reading the results bucket's logging
    destination = _results_bucket(default_synth)["LoggingConfiguration"]["DestinationBucketName"]

    # Then access logs go to the log bucket
    assert destination == {"Ref": cfn.logical_id(default_synth, "AWS::S3::Bucket", "AccessLogBucket")}


def test_raw_output_expires_after_configured_days(default_synth):
    # Given the context's expiry for raw output
    days = json.loads((REPO_ROOT / "cdk.json").read_text())["context"][constants.CONTEXT_RAW_OUTPUT_EXPIRATION_DAYS]

    # When reading the lifecycle rule that expires raw output
    rules = _results_bucket(default_synth)["LifecycleConfiguration"]["Rules"]
    (rule,) = [r for r in rules if r.get("Id") == "ExpireRawOutput"]

    # Then objects tagged as the store tags raw output (and their old versions) expire after that many days
    ((key, value),) = [(f["Key"], f["Value"]) for f in rule["TagFilters"]]
    assert f"{key}={value}" == RAW_TAG
    assert (rule["ExpirationInDays"], rule["NoncurrentVersionExpiration"]["NoncurrentDays"]) == (days, days)


def test_table_has_point_in_time_recovery(default_synth):
    # Given the default synth / When reading the table
    default_synth.template.has_resource_properties(
        "AWS::DynamoDB::Table",
        # Then point-in-time recovery is on
        {"PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True}},
    )


def test_table_is_encrypted_with_aws_managed_key(default_synth):
    # Given the default synth / When reading the table
    default_synth.template.has_resource_properties(
        "AWS::DynamoDB::Table",
        # Then server-side encryption uses the AWS-managed KMS key (no customer key given)
        {"SSESpecification": {"SSEEnabled": True, "KMSMasterKeyId": Match.absent()}},
    )


def test_table_keys_are_pk_and_sk_strings_on_demand(default_synth):
    # Given the default synth / When reading the table
    default_synth.template.has_resource_properties(
        "AWS::DynamoDB::Table",
        # Then it has the string keys pgarena.store writes, billed per request
        {
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )


# --- Functions -------------------------------------------------------------------------------


def test_one_function_per_handler(default_synth):
    # Given the default synth
    functions = default_synth.resources_of_type("AWS::Lambda::Function").values()

    # When listing their handlers
    handlers = sorted(body["Properties"]["Handler"] for body in functions)

    # Then there is exactly one function per handler
    assert handlers == sorted(HANDLERS | {FINALIZE_STOPPED_HANDLER, TASK_STOPPED_HANDLER})


def test_functions_run_python_312_traced_with_powertools_service_name(default_synth):
    # Given the default synth / When reading each function's runtime, tracing and service name
    shapes = {
        handler: (
            cfn.function(default_synth, handler)["Runtime"],
            cfn.function(default_synth, handler)["TracingConfig"]["Mode"],
            cfn.function(default_synth, handler)["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"],
        )
        for handler in HANDLERS
    }

    # Then all run Python 3.12 with active tracing and the pgarena service name
    assert set(shapes.values()) == {("python3.12", "Active", "pgarena")}


def test_every_handler_module_is_in_the_code_asset(default_synth):
    # Given the staged code asset of each function
    modules = {}
    for handler in HANDLERS:
        asset_hash = cfn.function(default_synth, handler)["Code"]["S3Key"].removesuffix(".zip")
        module = handler.rsplit(".", 1)[0] + ".py"
        modules[handler] = (default_synth.asset_dir(asset_hash) / module).is_file()

    # When looking for each handler's module / Then every one is there
    assert modules == {handler: True for handler in HANDLERS}


def test_function_code_asset_holds_only_functions_and_pgarena(default_synth):
    # Given the code asset of a function
    code = cfn.function(default_synth, "functions/validate/handler.handler")["Code"]
    asset_hash = code["S3Key"].removesuffix(".zip")

    # When listing the staged directory
    entries = sorted(path.name for path in default_synth.asset_dir(asset_hash).iterdir())

    # Then only the handlers and the library are in it
    assert entries == ["functions", "pgarena"]


def test_launch_worker_environment_satisfies_launcher_settings(default_synth):
    # Given the environment CDK gives launch_worker
    variables = cfn.function(default_synth, "functions/launch_worker/handler.handler")["Environment"]["Variables"]

    # When validating it with the handler's own settings model (every required name present)
    names = {field.alias for field in LauncherEnv.model_fields.values()}

    # Then every name the handler reads is set (AWS_REGION, the home region, by Lambda itself)
    assert names - set(variables) == {"AWS_REGION"}


def test_launch_worker_fixed_settings(default_synth):
    # Given the environment CDK gives launch_worker
    variables = cfn.function(default_synth, "functions/launch_worker/handler.handler")["Environment"]["Variables"]

    # When reading the fixed values
    fixed = {name: variables[name] for name in ("WORKER_CONTAINER_NAME", "LAUNCH_TYPE", "ASSIGN_PUBLIC_IP")}

    # Then they name the worker container and a private Fargate launch
    assert fixed == {"WORKER_CONTAINER_NAME": "worker", "LAUNCH_TYPE": "FARGATE", "ASSIGN_PUBLIC_IP": "DISABLED"}


def test_launch_worker_targets_the_created_subnets_and_security_group(default_synth):
    # Given the environment CDK gives launch_worker
    variables = cfn.function(default_synth, "functions/launch_worker/handler.handler")["Environment"]["Variables"]
    group_id = cfn.logical_id(default_synth, "AWS::EC2::SecurityGroup", "WorkerSecurityGroup")

    # When reading the placement variables
    subnets = variables["WORKER_SUBNETS"]["Fn::Join"]

    # Then the two private subnets are joined with commas and the worker group is given
    assert subnets[0] == "," and len(subnets[1]) == 2
    assert all("WorkersSubnet" in ref["Ref"] for ref in subnets[1])
    assert variables["WORKER_SECURITY_GROUPS"] == {"Fn::GetAtt": [group_id, "GroupId"]}


@pytest.mark.parametrize(
    "handler",
    [
        "functions/preflight/handler.handler",
        "functions/release_lease/handler.handler",
        "functions/aggregate/handler.handler",
    ],
)
def test_results_environment_satisfies_results_settings(default_synth, handler):
    # Given the environment CDK gives a function that reads or writes results or leases
    variables = cfn.function(default_synth, handler)["Environment"]["Variables"]

    # When comparing with the handlers' settings model (PGARENA_LEASE_DIR is the local runtimes' only)
    names = {field.alias for field in ResultsEnv.model_fields.values() if field.is_required()}

    # Then every name it needs is set, and the local-only file leases are not
    assert names - set(variables) == set()
    assert "PGARENA_LEASE_DIR" not in variables


def test_preflight_runs_where_the_workers_run(default_synth):
    # Given the default synth (a created VPC) / When reading preflight's VPC configuration and launch_worker's
    vpc_config = cfn.function(default_synth, "functions/preflight/handler.handler")["VpcConfig"]
    launcher = cfn.function(default_synth, "functions/launch_worker/handler.handler")["Environment"]["Variables"]

    # Then preflight uses the workers' subnets and security groups: it reaches a private database as they
    # do, and leaves through the same NAT
    assert vpc_config["SubnetIds"] == _joined(launcher["WORKER_SUBNETS"])
    assert vpc_config["SecurityGroupIds"] == _joined(launcher["WORKER_SECURITY_GROUPS"])


def _joined(value) -> list:
    """The items of a comma-joined template value (CDK writes a one-item join as the item itself)."""
    return value["Fn::Join"][1] if isinstance(value, dict) and "Fn::Join" in value else [value]


def test_outputs_name_what_a_database_firewall_must_allow(default_synth):
    outputs = default_synth.template.to_json()["Outputs"]
    (eip,) = default_synth.resources_of_type("AWS::EC2::EIP")
    assert _joined(outputs["NatEgressIps"]["Value"]) == [{"Ref": eip}]
    assert "WorkerSecurityGroupIds" in outputs and "WorkerSubnetIds" in outputs


# --- State machine ---------------------------------------------------------------------------


def _state_machine(synth) -> dict:
    (body,) = synth.resources_of_type("AWS::StepFunctions::StateMachine").values()
    return body["Properties"]


def test_definition_substitutions_match_the_asl_placeholders(default_synth):
    # Given the placeholders the ASL file uses
    placeholders = set(re.findall(r"\$\{(\w+)\}", ASL_FILE.read_text()))

    # When reading the state machine's substitutions
    substitutions = _state_machine(default_synth)["DefinitionSubstitutions"]

    # Then the keys are exactly those placeholders
    assert placeholders and set(substitutions) == placeholders


def test_each_placeholder_points_at_its_function_or_the_results_table(default_synth):
    # Given the state machine's substitutions
    substitutions = dict(_state_machine(default_synth)["DefinitionSubstitutions"])

    # When resolving each to the function or table it names
    table = substitutions.pop(RESULTS_TABLE_PLACEHOLDER)
    resolved = {key: value["Fn::GetAtt"][0] for key, value in substitutions.items()}

    # Then the table is the results table (its PutItem tasks record outcomes), each other placeholder the
    # ARN of the function of the same name
    (table_id,) = default_synth.resources_of_type("AWS::DynamoDB::Table")
    assert table == {"Ref": table_id}
    assert resolved == {
        "ValidateFunctionArn": cfn.function_logical_id(default_synth, "functions/validate/handler.handler"),
        "PreflightFunctionArn": cfn.function_logical_id(default_synth, "functions/preflight/handler.handler"),
        "LaunchWorkerFunctionArn": cfn.function_logical_id(default_synth, "functions/launch_worker/handler.handler"),
        "ReleaseLeaseFunctionArn": cfn.function_logical_id(default_synth, "functions/release_lease/handler.handler"),
        "AggregateFunctionArn": cfn.function_logical_id(default_synth, "functions/aggregate/handler.handler"),
        "CostGuardFunctionArn": cfn.function_logical_id(default_synth, "functions/cost_guard/handler.handler"),
        "DecideFunctionArn": cfn.function_logical_id(default_synth, "functions/decide/handler.handler"),
    }


def test_template_does_not_inline_the_asl(default_synth):
    # Given the synthesized template
    state_machine = _state_machine(default_synth)

    # When looking for the definition
    text = json.dumps(default_synth.template.to_json())

    # Then the definition is an uploaded asset, and no state name appears in the template
    assert "DefinitionString" not in state_machine and "DefinitionS3Location" in state_machine
    assert "Validate And Plan" not in text


def test_state_machine_may_invoke_exactly_its_functions(default_synth):
    # Given the state machine role's statements
    role_id = _state_machine(default_synth)["RoleArn"]["Fn::GetAtt"][0]
    statement = cfn.statement_with(cfn.statements_of_role(default_synth, role_id), "lambda:InvokeFunction")

    # When resolving every resource to the function it names
    resources = cfn.as_list(statement["Resource"])
    named = {logical_id for resource in resources for logical_id in _get_att_targets(resource)}

    # Then only the campaign's functions are named, and no resource is a wildcard
    assert named == {cfn.function_logical_id(default_synth, h) for h in HANDLERS}
    assert not any("*" in json.dumps(r) for r in resources)


def test_state_machine_logs_all_events_without_execution_data(default_synth):
    # Given the default synth / When reading the state machine's logging configuration
    logging = _state_machine(default_synth)["LoggingConfiguration"]

    # Then every event is logged to a log group, without inputs and outputs
    assert (logging["Level"], logging["IncludeExecutionData"]) == ("ALL", False)
    assert "CloudWatchLogsLogGroup" in logging["Destinations"][0]


def test_state_machine_is_standard_and_traced(default_synth):
    # Given the default synth / When reading the state machine
    state_machine = _state_machine(default_synth)

    # Then it is a STANDARD workflow with X-Ray tracing
    assert (state_machine["StateMachineType"], state_machine["TracingConfiguration"]) == ("STANDARD", {"Enabled": True})


# --- Worker ----------------------------------------------------------------------------------


def _launch_worker_statements(synth) -> list[dict]:
    return cfn.statements_of_function(synth, "functions/launch_worker/handler.handler")


def test_launch_worker_may_run_only_the_worker_task_on_its_cluster(default_synth):
    # Given launch_worker's statements
    statement = cfn.statement_with(_launch_worker_statements(default_synth), "ecs:RunTask")

    # When reading the RunTask grant
    task_id = cfn.logical_id(default_synth, "AWS::ECS::TaskDefinition", "WorkerTask")
    cluster_id = cfn.logical_id(default_synth, "AWS::ECS::Cluster", "Cluster")

    # Then it names the worker task definition, on the pgarena cluster only
    assert statement["Resource"] == {"Ref": task_id}
    assert statement["Condition"] == {"ArnEquals": {"ecs:cluster": {"Fn::GetAtt": [cluster_id, "Arn"]}}}


def test_launch_worker_may_pass_only_the_task_and_execution_roles(default_synth):
    # Given launch_worker's statements
    statement = cfn.statement_with(_launch_worker_statements(default_synth), "iam:PassRole")

    # When reading the PassRole grant
    task = _task_definition(default_synth)
    expected = [task["TaskRoleArn"], task["ExecutionRoleArn"]]

    # Then exactly the worker's two roles can be passed, and only to ECS tasks
    assert sorted(map(json.dumps, cfn.as_list(statement["Resource"]))) == sorted(map(json.dumps, expected))
    assert statement["Condition"] == {"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}}


def _task_definition(synth) -> dict:
    (body,) = synth.resources_of_type("AWS::ECS::TaskDefinition").values()
    return body["Properties"]


def test_worker_task_roles_are_separate(default_synth):
    # Given the worker task definition / When comparing its roles
    task = _task_definition(default_synth)

    # Then the task role and the execution role are different roles
    assert task["TaskRoleArn"] != task["ExecutionRoleArn"]


def test_worker_container_shape_comes_from_context(default_synth):
    # Given cdk.json's worker size
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]

    # When reading the task definition
    task = _task_definition(default_synth)
    (container,) = task["ContainerDefinitions"]

    # Then CPU and memory are the context's, and the container is "worker" logging with awslogs
    assert (task["Cpu"], task["Memory"]) == (
        str(context[constants.CONTEXT_WORKER_CPU_UNITS]),
        str(context[constants.CONTEXT_WORKER_MEMORY_MIB]),
    )
    assert (container["Name"], container["LogConfiguration"]["LogDriver"]) == ("worker", "awslogs")


def test_worker_image_context_holds_only_what_the_dockerfile_copies(default_synth):
    # Given the worker image's asset hash (the image tag)
    image = _task_definition(default_synth)["ContainerDefinitions"][0]["Image"]["Fn::Sub"]
    asset_hash = image.rsplit(":", 1)[1]

    # When listing its staged build context
    entries = sorted(path.name for path in default_synth.asset_dir(asset_hash).iterdir())

    # Then only the package, the worker, the project files (setup.py builds the log scanner) and the
    # dependencies' wheels are sent to Docker: no scanner built here (the image compiles its own)
    assert entries == ["README.md", "pgarena", "pyproject.toml", "setup.py", "wheels", "workers"]
    assert any(default_synth.asset_dir(asset_hash).glob("wheels/pydantic-*.whl"))
    assert any(default_synth.asset_dir(asset_hash).glob("pgarena/tools/pgbench/_txlog.c"))
    assert not any(default_synth.asset_dir(asset_hash).rglob("*.so"))


def test_worker_task_role_grants(default_synth):
    # Given the worker's task role statements
    role_id = _task_definition(default_synth)["TaskRoleArn"]["Fn::GetAtt"][0]
    statements = cfn.statements_of_role(default_synth, role_id)

    # When collecting actions per resource
    grants = {json.dumps(s["Resource"]): sorted(cfn.as_list(s["Action"])) for s in statements}

    # Then it answers the token and reads pgarena/ secrets (its table and bucket grants: test_access.py)
    assert grants[json.dumps("*")] == ["states:SendTaskFailure", "states:SendTaskHeartbeat", "states:SendTaskSuccess"]
    (secrets,) = [resource for resource in grants if "secret:pgarena/*" in resource]
    assert grants[secrets] == ["secretsmanager:GetSecretValue"]


def test_worker_may_use_the_start_barrier(default_synth):
    # Given the worker's task role statements (sharded steps and consolidation phases meet at a barrier)
    role_id = _task_definition(default_synth)["TaskRoleArn"]["Fn::GetAtt"][0]
    updates = [s for s in cfn.statements_of_role(default_synth, role_id) if "dynamodb:UpdateItem" in cfn.as_list(s["Action"])]

    # When reading the grants / Then it checks in (UpdateItem) and polls (GetItem) barrier items, and its
    # own slot's items (warm workers) apart: no update on any other key
    grants = {
        tuple(s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]): sorted(cfn.as_list(s["Action"]))
        for s in updates
    }
    assert grants == {
        (access.BARRIERS.leading_keys,): ["dynamodb:GetItem", "dynamodb:UpdateItem"],
        # registered with an update, as every other change of its slot: the step the slot holds is kept
        (access.WORKERS.leading_keys,): ["dynamodb:GetItem", "dynamodb:UpdateItem"],
    }


def test_cluster_has_container_insights(default_synth):
    # Given the default synth / When reading the cluster
    default_synth.template.has_resource_properties(
        "AWS::ECS::Cluster",
        # Then Container Insights is enabled
        {"ClusterSettings": [{"Name": "containerInsights", "Value": "enabled"}]},
    )


# --- Placement and outputs -------------------------------------------------------------------


def test_created_vpc_has_two_azs_and_one_nat_gateway(default_synth):
    # Given the default synth (no pgarena:vpcId) / When counting the network resources
    counts = {
        type_: len(default_synth.resources_of_type(type_))
        for type_ in ("AWS::EC2::VPC", "AWS::EC2::NatGateway", "AWS::EC2::Subnet", "AWS::EC2::VPCEndpoint")
    }

    # Then one VPC spans two AZs (a public and a private subnet each) behind a single NAT gateway, with
    # two (gateway) endpoints
    assert counts == {"AWS::EC2::VPC": 1, "AWS::EC2::NatGateway": 1, "AWS::EC2::Subnet": 4, "AWS::EC2::VPCEndpoint": 2}


def test_s3_and_dynamodb_are_reached_through_free_gateway_endpoints_from_the_workers_subnets(default_synth):
    # Given the created VPC's endpoints and the workers' (private) subnets' route tables
    endpoints = default_synth.resources_of_type("AWS::EC2::VPCEndpoint").values()
    private_tables = {
        body["Properties"]["RouteTableId"]["Ref"]
        for body in default_synth.resources_of_type("AWS::EC2::SubnetRouteTableAssociation").values()
        if "Workers" in body["Properties"]["SubnetId"]["Ref"]
    }

    # Then each is a Gateway endpoint (no hourly charge, no interface) in every worker subnet's route table
    services = {}
    for body in endpoints:
        props = body["Properties"]
        name = props["ServiceName"]["Fn::Join"][1][-1] if isinstance(props["ServiceName"], dict) else props["ServiceName"]
        services[name.rsplit(".", 1)[-1]] = props
    assert set(services) == {"s3", "dynamodb"}
    for props in services.values():
        assert props["VpcEndpointType"] == "Gateway"
        assert private_tables <= {table["Ref"] for table in props["RouteTableIds"]}


def test_outputs_name_state_machine_bucket_and_table(default_synth):
    # Given the default synth / When reading the outputs
    outputs = default_synth.template.to_json()["Outputs"]

    # Then the state machine ARN, the bucket, the table and the workers' cluster (what `pgarena run --aws`
    # reads) are exported by name
    assert {
        constants.OUTPUT_STATE_MACHINE_ARN,
        constants.OUTPUT_RESULTS_BUCKET,
        constants.OUTPUT_RESULTS_TABLE,
        constants.OUTPUT_WORKER_CLUSTER_ARN,
    } <= set(outputs)


# --- cdk-nag ---------------------------------------------------------------------------------


def test_cdk_nag_leaves_no_unacknowledged_finding(default_synth):
    # Given the synthesis of the app with AwsSolutionsChecks
    report = json.loads((default_synth.outdir / "validation-report.json").read_text())

    # When reading the validation outcome / Then synthesis passed and no plugin reported anything
    assert default_synth.validation_error is None, str(default_synth.validation_error)
    assert report["pluginReports"] == []


def test_every_acknowledgement_carries_a_reason(default_synth):
    # Given the acknowledgements recorded in the cloud assembly
    metadata = json.loads((default_synth.outdir / f"{default_synth.stack.artifact_id}.metadata.json").read_text())
    acknowledged = {
        (path, rule): reason
        for path, entries in metadata.items()
        for entry in entries
        if entry["type"] == "aws:cdk:acknowledged-rules"
        for rule, reason in entry["data"].items()
        if "AwsSolutions-" in rule
    }

    # When checking their reasons / Then there are some, and each explains itself in a sentence
    assert acknowledged
    assert {key: reason for key, reason in acknowledged.items() if len(reason) < 40} == {}


def test_cdk_nag_fails_synthesis_on_an_unacknowledged_finding(tmp_path: Path):
    # Given an app with a bucket that breaks AwsSolutions-S1 and -S10, checked the way pgarena is
    app = App(outdir=str(tmp_path))
    s3.Bucket(Stack(app, "Careless"), "Bucket")
    add_security_checks(app)

    # When synthesizing / Then the findings fail it (so the passing synth above means something)
    with pytest.raises(RuntimeError, match="AwsSolutions-S1"):
        app.synth()


def test_a_stopped_failed_or_timed_out_execution_is_finalized(default_synth):
    # Given the EventBridge rule and the function it starts
    (rule,) = [
        r
        for r in default_synth.resources_of_type("AWS::Events::Rule").values()
        if r["Properties"]["EventPattern"]["source"] == ["aws.states"]
    ]
    pattern, targets = rule["Properties"]["EventPattern"], rule["Properties"]["Targets"]
    function_id = cfn.logical_id(default_synth, "AWS::Lambda::Function", "FinalizeStoppedFunction")
    (machine_id,) = default_synth.resources_of_type("AWS::StepFunctions::StateMachine")

    # Then every ending that skips Aggregate And Rank of this state machine reaches finalize_stopped
    assert pattern["source"] == ["aws.states"] and pattern["detail-type"] == ["Step Functions Execution Status Change"]
    assert sorted(pattern["detail"]["status"]) == ["ABORTED", "FAILED", "TIMED_OUT"]
    assert pattern["detail"]["stateMachineArn"] == [{"Ref": machine_id}]
    assert [t["Arn"] for t in targets] == [{"Fn::GetAtt": [function_id, "Arn"]}]
    # and it may read those executions' histories
    statement = cfn.statement_with(
        cfn.statements_of_function(default_synth, FINALIZE_STOPPED_HANDLER), "states:GetExecutionHistory"
    )
    assert cfn.as_list(statement["Action"]) == ["states:GetExecutionHistory"]


def test_a_worker_task_that_stops_in_the_stacks_cluster_reaches_task_stopped(default_synth):
    # Given the EventBridge rule on ECS's task state changes and the function it starts
    (rule,) = [
        r
        for r in default_synth.resources_of_type("AWS::Events::Rule").values()
        if r["Properties"]["EventPattern"]["source"] == ["aws.ecs"]
    ]
    pattern, targets = rule["Properties"]["EventPattern"], rule["Properties"]["Targets"]
    function_id = cfn.logical_id(default_synth, "AWS::Lambda::Function", "TaskStoppedFunction")
    (cluster_id,) = default_synth.resources_of_type("AWS::ECS::Cluster")

    # Then a stopped task of pgarena's (RunTask's startedBy) in the stack's cluster reaches task_stopped,
    # whatever its stop code and whether it started: one that ran and stopped mid-step fails its step too
    assert pattern["detail-type"] == ["ECS Task State Change"]
    assert pattern["detail"] == {
        "clusterArn": [{"Fn::GetAtt": [cluster_id, "Arn"]}],
        "lastStatus": ["STOPPED"],
        "startedBy": ["pgarena"],
    }
    assert [t["Arn"] for t in targets] == [{"Fn::GetAtt": [function_id, "Arn"]}]
    # and it may fail a step (the token is the authorization) and read the workers' slots (the step a stopped
    # worker held), and do nothing else with Step Functions, the table or the bucket
    statements = cfn.statements_of_function(default_synth, TASK_STOPPED_HANDLER)
    actions = {a for st in statements for a in cfn.as_list(st["Action"])}
    assert {a for a in actions if a.startswith(("states:", "dynamodb:", "s3:"))} == {"states:SendTaskFailure", "dynamodb:GetItem"}
    read = cfn.statement_with(statements, "dynamodb:GetItem")
    assert read["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["worker#*"]}}
