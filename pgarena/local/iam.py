"""IAM as AWS applies it, for the local runtime: each component calls moto with its own role's policies.

From the synthesized CloudFormation template, one IAM user per component role (each function's role,
the worker's task role, the scheduler's role) is created in moto with that role's policies, the
template's intrinsics resolved to the local table and bucket; its access keys are what the
component's process runs with. `enforced()` then switches moto's authorization on.

What moto (5.2, moto/iam/access_control.py and moto/core/authorization.py) evaluates:
- Switch: `settings.INITIAL_NO_AUTH_ACTION_COUNT` (the env var of that name, read at import; in
  server mode also POST /moto-api/reset-auth). It is one process-wide setting, so it governs the
  in-process mock and a ThreadedMotoServer alike: once on, every request must be SigV4-signed by a
  known IAM user's key (or an assumed role's) and its action allowed by that user's policies.
- Actions: `Action`/`NotAction` with wildcards, Allow and explicit Deny, inline and attached
  policies of the user and its groups.
- Resources: only where a service names one. S3 does (bucket ARN, object ARN), so object key
  patterns are enforced. DynamoDB does not (moto checks it against "*", so a grant on a table ARN
  never matches); `_authorize_dynamodb` below supplies the table's ARN, and authorizes
  TransactWriteItems / TransactGetItems per item as AWS does (PutItem, UpdateItem, ...). Secrets
  Manager (the secret's ARN) and Step Functions (the state machine's or execution's ARN; the task
  token calls are "*" in AWS too), SSM (the parameter's ARN: a worker site's, read by launch_worker),
  EventBridge (PutEvents: the bus's ARN) and SNS (the topic's ARN: finalize's alerts) get theirs the
  same way. CloudWatch's actions are checked under IAM's prefix (`cloudwatch:`, where moto would take
  its signing name, `monitoring:`), against "*" as in AWS. Any other service is checked on the
  action alone, against "*": a grant scoped to a resource ARN never matches there.
  (Lambda and ECS are the runtime's own endpoints, not moto: Invoke, RunTask and PassRole are
  not authorized locally.)
- Conditions: NOT evaluated for identity policies. moto passes no request context to them and only
  implements StringEquals (for trust policies), ignoring other operators. So
  `dynamodb:LeadingKeys` (which partition prefix a component may touch) and `s3:prefix` (which
  listing prefix) are not enforced locally: a conditioned statement acts as if unconditioned, which
  can only allow more, never deny what AWS allows. The access map's own test
  (tests/infrastructure/test_access.py) pins those conditions in the template instead.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from pgarena.aws.access import Component
from pgarena.model.matrix import MAX_STARTED_TOGETHER

# A CloudFormation template or an IAM policy document, as parsed JSON.
Json = dict[str, Any]

PARTITION = "aws"
USER_PREFIX = "pgarena-local-"
# The runtime itself (the operator starting executions, Step Functions' service calls) acts as
# this user: everything allowed, as the account that deploys the stack may.
RUNTIME_USER = f"{USER_PREFIX}runtime"
# A Lambda handler named in the template as functions/<folder>/handler.handler.
_HANDLER = re.compile(r"^functions/(?P<name>[a-z_]+)/handler\.handler$")


class TemplateError(ValueError):
    """The template lacks what the local IAM needs (a component's role, a resource it names)."""


@dataclass(frozen=True)
class Credentials:
    """An IAM user's long-term keys (no session token: moto refuses one with a user's key)."""

    user: str
    access_key_id: str
    secret_access_key: str

    def env(self) -> dict[str, str]:
        """The process environment that makes boto3 sign as this user (AWS_SESSION_TOKEN must be unset)."""
        return {"AWS_ACCESS_KEY_ID": self.access_key_id, "AWS_SECRET_ACCESS_KEY": self.secret_access_key}


@dataclass(frozen=True)
class LocalNames:
    """What the template's table and bucket are called locally, and where the account lives."""

    bucket: str
    table: str
    account: str
    region: str
    state_machine: str

    def state_machine_arn(self) -> str:
        return f"arn:{PARTITION}:states:{self.region}:{self.account}:stateMachine:{self.state_machine}"

    def table_arn(self) -> str:
        return f"arn:{PARTITION}:dynamodb:{self.region}:{self.account}:table/{self.table}"

    def bucket_arn(self) -> str:
        return f"arn:{PARTITION}:s3:::{self.bucket}"


@dataclass(frozen=True)
class LocalIam:
    """The keys of every component present in the template, and of the runtime itself."""

    components: Mapping[Component, Credentials]
    runtime: Credentials


def _get_att_id(value: Any) -> str | None:
    """The logical id in `{"Fn::GetAtt": [id, "Arn"]}`, else None."""
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return str(value["Fn::GetAtt"][0])
    return None


def component_roles(template: Json) -> dict[Component, str]:
    """The role (logical id) each component runs with, read from the resources that use it.

    Functions by their handler path (the folder names a Component), the worker by the task
    definition's task role, the scheduler by its schedules' target role, the state machine by its own.
    """
    roles: dict[Component, str] = {}
    for logical_id, body in template["Resources"].items():
        props = body.get("Properties", {})
        if body["Type"] == "AWS::Lambda::Function":
            match = _HANDLER.match(str(props.get("Handler", "")))
            if match and match["name"] in Component.__members__.values():
                roles[Component(match["name"])] = _role_id(props.get("Role"), logical_id)
        elif body["Type"] == "AWS::ECS::TaskDefinition":
            roles[Component.WORKER] = _role_id(props.get("TaskRoleArn"), logical_id)
        elif body["Type"] == "AWS::Scheduler::Schedule":
            roles[Component.SCHEDULER] = _role_id(props.get("Target", {}).get("RoleArn"), logical_id)
        elif body["Type"] == "AWS::StepFunctions::StateMachine":
            roles[Component.STATE_MACHINE] = _role_id(props.get("RoleArn"), logical_id)
    return roles


def _role_id(value: Any, user: str) -> str:
    role = _get_att_id(value)
    if role is None:
        raise TemplateError(f"{user}: its role is not a role of this template ({value!r})")
    return role


def role_policies(template: Json, role_id: str) -> dict[str, Json]:
    """Every policy document attached to the role: AWS::IAM::Policy resources naming it, and its inline policies."""
    resources = template["Resources"]
    if role_id not in resources:
        raise TemplateError(f"role {role_id} is not in the template")
    policies: dict[str, Json] = {}
    for logical_id, body in resources.items():
        if body["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in body["Properties"].get("Roles", []):
            policies[logical_id] = body["Properties"]["PolicyDocument"]
    for policy in resources[role_id].get("Properties", {}).get("Policies", []):
        policies[f"{role_id}{policy['PolicyName']}"] = policy["PolicyDocument"]
    # ManagedPolicyArns (AWS managed policies) are left out: the functions' roles carry explicit
    # log statements instead, and none of them grants anything on the results table or bucket.
    return policies


def _results_resources(template: Json) -> tuple[str, str]:
    """The logical ids of the results bucket and table: what the functions get as RESULTS_BUCKET / RESULTS_TABLE."""
    found: dict[str, str] = {}
    for body in template["Resources"].values():
        if body["Type"] != "AWS::Lambda::Function":
            continue
        variables = body["Properties"].get("Environment", {}).get("Variables", {})
        for name in ("RESULTS_BUCKET", "RESULTS_TABLE"):
            if isinstance(variables.get(name), dict) and "Ref" in variables[name]:
                found[name] = variables[name]["Ref"]
    if len(found) != 2:
        raise TemplateError("no function's environment names the results bucket and table (RESULTS_BUCKET, RESULTS_TABLE)")
    return found["RESULTS_BUCKET"], found["RESULTS_TABLE"]


def resolve(value: Any, template: Json, names: LocalNames) -> Any:
    """`value` with CloudFormation's intrinsics replaced by local names: the results table and bucket
    are the runtime's; any other resource (a log group, the state machine) gets an ARN that names
    nothing local, so that a grant on it allows nothing here."""
    bucket_id, table_id = _results_resources(template)
    pseudo = {
        "AWS::Partition": PARTITION,
        "AWS::Region": names.region,
        "AWS::AccountId": names.account,
        "AWS::URLSuffix": "amazonaws.com",
    }
    refs = {bucket_id: names.bucket, table_id: names.table}
    arns = {bucket_id: names.bucket_arn(), table_id: names.table_arn()}
    attributes: dict[tuple[str, str], str] = {}
    for logical_id, body in template["Resources"].items():
        if body["Type"] == "AWS::StepFunctions::StateMachine":  # one: the campaign's (a Ref is its ARN)
            refs[logical_id] = arns[logical_id] = names.state_machine_arn()
            # finalize_stopped's grant on the executions is built from the state machine's name
            attributes[(logical_id, "Name")] = names.state_machine

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if set(node) == {"Ref"}:
            ref = node["Ref"]
            return pseudo.get(ref) or refs.get(ref) or _elsewhere(ref, names)
        if set(node) == {"Fn::GetAtt"}:
            logical_id, attribute = node["Fn::GetAtt"]
            if (logical_id, attribute) in attributes:
                return attributes[(logical_id, attribute)]
            return arns[logical_id] if attribute == "Arn" and logical_id in arns else _elsewhere(logical_id, names)
        if set(node) == {"Fn::Join"}:
            separator, parts = node["Fn::Join"]
            return separator.join(str(walk(part)) for part in parts)
        return {key: walk(item) for key, item in node.items()}

    return walk(value)


def _elsewhere(logical_id: str, names: LocalNames) -> str:
    # Shaped as an ARN (moto validates policy documents), of a service that has nothing local.
    return f"arn:{PARTITION}:cloudformation:{names.region}:{names.account}:stack/not-local/{logical_id}"


def provision(iam_client: Any, template: Json, names: LocalNames) -> LocalIam:
    """Create the users, their policies (the template's, resolved) and keys. Run before `enforced()`."""
    components: dict[Component, Credentials] = {}
    for component, role_id in sorted(component_roles(template).items()):
        user = f"{USER_PREFIX}{component}"
        iam_client.create_user(UserName=user)
        for policy_name, document in role_policies(template, role_id).items():
            iam_client.put_user_policy(
                UserName=user, PolicyName=policy_name, PolicyDocument=json.dumps(resolve(document, template, names))
            )
        components[component] = _keys(iam_client, user)
    iam_client.create_user(UserName=RUNTIME_USER)
    everything = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    iam_client.put_user_policy(UserName=RUNTIME_USER, PolicyName="everything", PolicyDocument=json.dumps(everything))
    return LocalIam(components=components, runtime=_keys(iam_client, RUNTIME_USER))


def _keys(iam_client: Any, user: str) -> Credentials:
    key = iam_client.create_access_key(UserName=user)["AccessKey"]
    return Credentials(user=user, access_key_id=key["AccessKeyId"], secret_access_key=key["SecretAccessKey"])


# DynamoDB operations that AWS authorizes per item, as the single-item action.
_TRANSACT_ITEM_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


def dynamodb_requests(action: str, body: Json, region: str, account: str) -> list[tuple[str, str]]:
    """The (action, table ARN) pairs AWS authorizes for one DynamoDB request."""

    def arn(table: str) -> str:
        return table if table.startswith("arn:") else f"arn:{PARTITION}:dynamodb:{region}:{account}:table/{table}"

    if action == "TransactWriteItems":
        return [
            (_TRANSACT_ITEM_ACTIONS[kind], arn(spec["TableName"]))
            for item in body.get("TransactItems", [])
            for kind, spec in item.items()
        ]
    if action == "TransactGetItems":
        return [("GetItem", arn(item["Get"]["TableName"])) for item in body.get("TransactItems", [])]
    if action in ("BatchGetItem", "BatchWriteItem"):
        return [(action, arn(table)) for table in body.get("RequestItems", {})]
    table = body.get("TableName") or body.get("TableArn") or body.get("ResourceArn")
    return [(action, arn(table) if table else "*")]


def _item_request(item_action: str, **request: Any) -> Any:
    """moto's IAMRequest for one item's action (a transaction's Put is authorized as PutItem)."""
    from moto.iam.access_control import IAMRequest

    return IAMRequest(**{**request, "action": item_action})


# moto answers a refused caller with query-protocol (XML) errors, which a JSON-protocol client
# (DynamoDB, Step Functions, Secrets Manager) reads as a bare "403"; AWS names these instead.
_JSON_ERRORS = {
    "AccessDenied": "AccessDeniedException",
    "InvalidClientTokenId": "UnrecognizedClientException",
    "SignatureDoesNotMatch": "InvalidSignatureException",
}


def _as_json_error(error: Exception, resource: str) -> Exception:
    from moto.core.exceptions import JsonRESTError

    error_type = getattr(error, "error_type", "")
    if error_type not in _JSON_ERRORS:
        return error
    message = getattr(error, "message", str(error))
    if error_type == "AccessDenied":
        message = f"{message} on resource: {resource}"
    return JsonRESTError(_JSON_ERRORS[error_type], message)


def _authorize_json(self: Any, resource: str = "*") -> None:
    # Replaces _authenticate_and_authorize_normal_action of the JSON-protocol services below.
    try:
        self._authenticate_and_authorize_action(_request_class(), resource)
    except Exception as error:
        raise _as_json_error(error, resource) from error


def _authorize_dynamodb(self: Any, resource: str = "*") -> None:
    # Replaces DynamoHandler's: moto would check every request against "*".
    for item_action, table_arn in dynamodb_requests(self._get_action(), self.body, self.region, self.current_account):
        try:
            self._authenticate_and_authorize_action(partial(_item_request, item_action), table_arn)
        except Exception as error:
            raise _as_json_error(error, table_arn) from error


def _iam_named(prefix: str, **request: Any) -> Any:
    """moto's IAMRequest whose action carries IAM's service prefix: moto takes the signing name (CloudWatch
    signs as "monitoring"), where IAM names the action "cloudwatch:GetMetricData"."""
    iam_request = _request_class()(**request)
    iam_request._action = f"{prefix}:{iam_request._action.split(':', 1)[1]}"
    return iam_request


def _authorize_cloudwatch(self: Any, resource: str = "*") -> None:
    # Replaces CloudWatchResponse's: its actions take no resource in IAM (checked against "*", as in AWS).
    try:
        self._authenticate_and_authorize_action(partial(_iam_named, "cloudwatch"), resource)
    except Exception as error:
        raise _as_json_error(error, resource) from error


def _request_class() -> Any:
    from moto.iam.access_control import IAMRequest

    return IAMRequest


def _state_machine_resource(self: Any) -> str:
    # AWS authorizes StartExecution on the state machine, Describe*/Stop* on the execution, and the
    # task token calls (SendTask*) on "*".
    return str(self._get_param("stateMachineArn") or self._get_param("executionArn") or "*")


def _secret_resource(self: Any) -> str:
    # Secrets are named by ARN (pgarena.model.matrix's password_secret_arn) or by name.
    secret_id = str(self._get_param("SecretId") or "*")
    if secret_id.startswith("arn:") or secret_id == "*":
        return secret_id
    return f"arn:{PARTITION}:secretsmanager:{self.region}:{self.current_account}:secret:{secret_id}"


def _parameter_resource(self: Any) -> str:
    # An SSM parameter's ARN holds its name without the leading slash: parameter/pgarena/sites/eu-west-1.
    name = self._get_param("Name")
    if not isinstance(name, str) or not name:
        return "*"
    if name.startswith("arn:"):
        return name
    return f"arn:{PARTITION}:ssm:{self.region}:{self.current_account}:parameter/{name.lstrip('/')}"


def _event_bus_resource(self: Any) -> str:
    # AWS authorizes PutEvents on the bus each entry names (its name or ARN; none: the default bus).
    entries = self._get_param("Entries") or [{}]
    bus = str(entries[0].get("EventBusName") or "default")
    if bus.startswith("arn:"):
        return bus
    return f"arn:{PARTITION}:events:{self.region}:{self.current_account}:event-bus/{bus}"


def _topic_resource(self: Any) -> str:
    return str(self._get_param("TopicArn") or "*")


@contextmanager
def enforced() -> Iterator[None]:
    """moto authorizes every request (this process: the in-process mock and any ThreadedMotoServer),
    DynamoDB, Secrets Manager, SSM parameters, EventBridge buses and SNS topics against their resources'
    ARNs; restored on exit."""
    from moto.cloudwatch.responses import CloudWatchResponse
    from moto.core.authorization import enable_iam_authentication
    from moto.dynamodb.responses import DynamoHandler
    from moto.events.responses import EventsHandler
    from moto.secretsmanager.responses import SecretsManagerResponse
    from moto.sns.responses import SNSResponse
    from moto.ssm.responses import SimpleSystemManagerResponse
    from moto.stepfunctions.responses import StepFunctionResponse

    patches = [
        (CloudWatchResponse, "_authenticate_and_authorize_normal_action", _authorize_cloudwatch),
        (DynamoHandler, "_authenticate_and_authorize_normal_action", _authorize_dynamodb),
        (SecretsManagerResponse, "_determine_resource", _secret_resource),
        (SecretsManagerResponse, "_authenticate_and_authorize_normal_action", _authorize_json),
        (SimpleSystemManagerResponse, "_determine_resource", _parameter_resource),
        (SimpleSystemManagerResponse, "_authenticate_and_authorize_normal_action", _authorize_json),
        (StepFunctionResponse, "_determine_resource", _state_machine_resource),
        (EventsHandler, "_determine_resource", _event_bus_resource),
        (EventsHandler, "_authenticate_and_authorize_normal_action", _authorize_json),
        (SNSResponse, "_determine_resource", _topic_resource),
        (StepFunctionResponse, "_authenticate_and_authorize_normal_action", _authorize_json),
    ]
    saved = [(cls, name, cls.__dict__.get(name)) for cls, name, _ in patches]
    for cls, name, replacement in patches:
        setattr(cls, name, replacement)
    try:
        with enable_iam_authentication():
            yield
    finally:
        for cls, name, original in saved:
            if original is None:
                delattr(cls, name)
            else:
                setattr(cls, name, original)


# The modules of moto's Step Functions interpreter that make its clients, by the calls they make.
DYNAMODB_TASKS = "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_dynamodb"
LAMBDA_TASKS = "moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils"


@contextmanager
def state_machine_signing_as(credentials: Credentials, tasks: str = DYNAMODB_TASKS) -> Iterator[None]:
    """moto's Step Functions interpreter signs the calls that `tasks` (DYNAMODB_TASKS, LAMBDA_TASKS) makes
    as `credentials` (the state machine role's user, the run's key) instead of its fixed placeholder key,
    which enforced IAM, and the local Lambda endpoint, would not know."""
    import importlib

    import boto3
    from botocore.config import Config

    module: Any = importlib.import_module(tasks)
    original = module.boto_client_for
    # One client per region and service while this lasts, as a Lambda task in AWS reaches a warm service:
    # moto makes a client per task, and a new session's client loads the service's model anew (about
    # 0.1 CPU-s a step, in the process that runs the interpreter). Clients are thread-safe; sessions are not.
    clients: dict[tuple[str, str], Any] = {}
    lock = threading.Lock()

    # moto calls it by keyword: the parameter names are moto's
    def signed(region: str, service: str, state_credentials: Any = None) -> Any:
        with lock:
            if (region, service) not in clients:
                client = original(region, service, state_credentials)
                session = boto3.session.Session(
                    aws_access_key_id=credentials.access_key_id, aws_secret_access_key=credentials.secret_access_key
                )
                # Room for every task of an inline Map at once (AWS runs at most 40 iterations together).
                config = client.meta.config.merge(Config(max_pool_connections=MAX_STARTED_TOGETHER))
                clients[region, service] = session.client(  # type: ignore[call-overload]  # the service name is a runtime value
                    service, region_name=region, endpoint_url=client.meta.endpoint_url, config=config
                )
            return clients[region, service]

    module.boto_client_for = signed
    try:
        yield
    finally:
        module.boto_client_for = original


def signing_env(env: Mapping[str, str], credentials: Credentials) -> dict[str, str]:
    """`env` (a process environment) with boto3 signing as `credentials`."""
    return {**{k: v for k, v in env.items() if k != "AWS_SESSION_TOKEN"}, **credentials.env()}


@contextmanager
def signing_as(credentials: Credentials) -> Iterator[None]:
    """This process's boto3 clients sign as `credentials` until exit (os.environ, and boto3's default
    session, which caches the credentials it first found)."""
    import os

    import boto3

    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(signing_env(saved, credentials))
    boto3.DEFAULT_SESSION = None
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        boto3.DEFAULT_SESSION = None
