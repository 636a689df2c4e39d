"""Where the local runtime's state machine runs: the AWS stand-in its ASL interpreter, S3 and DynamoDB live in.

The runtime (pgarena.local.runtime) serves Lambda and ECS itself and reaches everything else through
boto3. A host provides the rest and routes the interpreter's Lambda tasks to the runtime's Lambda endpoint:

- MotoHost: moto in this process (its Step Functions interpreter) and moto's server for the runtime's
  processes; the default.
- LocalStackHost: a LocalStack already running at a URL (its own, independent ASL interpreter), with
  pgarena's Lambda provider override (tools/localstack/) forwarding Invoke to the runtime's endpoint.
"""

from __future__ import annotations

import json
import os
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pgarena.local import iam as local_iam
from pgarena.local.environ import patched_environ
from pgarena.local.iam import Credentials
from pgarena.local.signing import RunKeys


class StateMachineHost(Protocol):
    name: str

    def open(self, stack: ExitStack, credentials: Credentials, keys: RunKeys) -> str:
        """Make the stand-in answer this process's boto3 clients until `stack` closes; return the URL the
        runtime's processes (workers, functions run elsewhere) reach it at."""

    def serve_lambda(self, stack: ExitStack, lambda_url: str, credentials: Credentials) -> None:
        """Route the interpreter's Lambda tasks to the Lambda endpoint at lambda_url, signed with credentials."""


class MotoHost:
    """moto's mock in this process and its server on 127.0.0.1, answering only the run's keys."""

    name = "moto"

    def open(self, stack: ExitStack, credentials: Credentials, keys: RunKeys) -> str:
        from moto import mock_aws  # moto patches botocore when imported: only for the host that uses it

        from pgarena.local.interpreter import as_aws
        from pgarena.local.moto_server import MotoServer

        # moto's own fake credentials would replace the run's key in this process's environment.
        stack.enter_context(
            mock_aws(config={"stepfunctions": {"execute_state_machine": True}, "core": {"mock_credentials": False}})
        )
        stack.enter_context(as_aws())
        return stack.enter_context(MotoServer(keys)).url

    def serve_lambda(self, stack: ExitStack, lambda_url: str, credentials: Credentials) -> None:
        # moto's Lambda tasks reach AWS_ENDPOINT_URL_LAMBDA (set by the runtime), signed with the run's key
        # (moto's own is a fixed placeholder the endpoint would refuse).
        stack.enter_context(local_iam.state_machine_signing_as(credentials, local_iam.LAMBDA_TASKS))


# What pgarena's LocalStack Lambda provider reads at each Invoke (tools/localstack/pgarena_localstack).
LAMBDA_FORWARD_ENV = "PGARENA_LAMBDA_FORWARD_FILE"


@dataclass(frozen=True)
class LocalStackHost:
    """A LocalStack running at `url` whose Lambda provider is pgarena's forwarder: it reads where to
    forward, and the key to sign with, from `forward_file` (its LAMBDA_FORWARD_ENV) at each Invoke."""

    url: str
    forward_file: Path
    name: str = "localstack"

    def open(self, stack: ExitStack, credentials: Credentials, keys: RunKeys) -> str:
        stack.enter_context(patched_environ({"AWS_ENDPOINT_URL": self.url}))
        return self.url

    def serve_lambda(self, stack: ExitStack, lambda_url: str, credentials: Credentials) -> None:
        forward = {
            "url": lambda_url,
            "access_key_id": credentials.access_key_id,
            "secret_access_key": credentials.secret_access_key,
        }
        # The run's key: readable by this user only, gone when the runtime stops.
        fd = os.open(self.forward_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(forward, out)
        stack.callback(self.forward_file.unlink, missing_ok=True)
