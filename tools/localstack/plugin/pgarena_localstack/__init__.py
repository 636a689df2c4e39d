"""LocalStack's Lambda provider with Invoke forwarded to pgarena's local runtime (PROVIDER_OVERRIDE_LAMBDA=pgarena).

LocalStack runs Lambda code only in Docker containers with its own init binary. Here its Step Functions
interpreter's `lambda:invoke` tasks reach the runtime's Lambda endpoint instead, where the real handlers run:
the file named by PGARENA_LAMBDA_FORWARD_FILE gives the endpoint's URL and the run's key to sign with
(pgarena.local.hosts.LocalStackHost writes it). Every other Lambda operation is LocalStack's own.

Loading it also makes LocalStack's interpreter count a task's heartbeats and answer from its scheduling, as
AWS does and as pgarena.local.interpreter makes moto's (whose interpreter is LocalStack's, vendored): the
token exists before the launching Lambda is invoked, but its heartbeat wait only once that Lambda has
returned, and a beat in between is refused with InvalidToken. A warm worker handed its step while the
launch function still runs beats, or even answers, in between.
"""

import json
import os
from pathlib import Path
from typing import IO, Any

import boto3
from botocore.config import Config
from localstack.aws.api import RequestContext
from localstack.aws.api.lambda_ import InvocationResponse
from localstack.services.lambda_.provider import LambdaProvider
from localstack.services.plugins import Service, aws_provider
from localstack.services.stepfunctions.asl.eval.callback.callback import CallbackEndpoint, HeartbeatEndpoint

FORWARD_ENV = "PGARENA_LAMBDA_FORWARD_FILE"
# As long as a Lambda function may run; the endpoint answers when the handler returns.
INVOKE_TIMEOUT_S = 900


def _accept_early_heartbeat(method: Any) -> Any:
    def beat(self: CallbackEndpoint) -> bool:
        if self._heartbeat_endpoint is None:  # the task is scheduled, its wait not yet begun: nothing to extend
            return True
        return bool(method(self))

    return beat


def _answered_at_once(method: Any) -> Any:
    def setup(self: CallbackEndpoint, heartbeat_seconds: int) -> HeartbeatEndpoint:
        wait = method(self, heartbeat_seconds)
        if self.get_outcome() is not None:  # the task answered before its wait began
            wait.notify()
        return wait

    return setup


CallbackEndpoint.notify_heartbeat = _accept_early_heartbeat(CallbackEndpoint.notify_heartbeat)
CallbackEndpoint.setup_heartbeat_endpoint = _answered_at_once(CallbackEndpoint.setup_heartbeat_endpoint)


class ForwardingLambdaProvider(LambdaProvider):
    def invoke(  # noqa: PLR0913  # LocalStack's parameters: its dispatcher passes them by name
        self,
        context: RequestContext,
        function_name: str,
        invocation_type: str | None = None,
        log_type: str | None = None,
        client_context: str | None = None,
        durable_execution_name: str | None = None,
        payload: IO[bytes] | None = None,
        qualifier: str | None = None,
        tenant_id: str | None = None,
        **kwargs: Any,
    ) -> InvocationResponse:
        forward = json.loads(Path(os.environ[FORWARD_ENV]).read_text())
        client = boto3.client(
            "lambda",
            region_name=context.region,
            endpoint_url=forward["url"],
            aws_access_key_id=forward["access_key_id"],
            aws_secret_access_key=forward["secret_access_key"],
            config=Config(read_timeout=INVOKE_TIMEOUT_S, retries={"max_attempts": 1}),
        )
        answer = client.invoke(
            FunctionName=function_name,
            InvocationType=invocation_type or "RequestResponse",
            Payload=payload.read() if payload else b"{}",
        )
        response = InvocationResponse(StatusCode=answer["StatusCode"], Payload=answer["Payload"].read())
        if "FunctionError" in answer:
            response["FunctionError"] = answer["FunctionError"]
        return response


@aws_provider(api="lambda", name="pgarena")
def lambda_forwarding() -> Service:
    return Service.for_provider(ForwardingLambdaProvider())
