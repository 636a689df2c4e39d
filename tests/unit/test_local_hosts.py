"""The local runtime's state machine host: LocalStack's tells its Lambda provider where Invoke goes, in a
file only this user reads, for as long as the runtime runs; IAM enforcement stays moto's."""

import json
import os
import stat
from contextlib import ExitStack

import pytest

from pgarena.local.hosts import LocalStackHost
from pgarena.local.runtime import LocalRuntime
from pgarena.local.signing import RunKeys, new_credentials


def test_localstack_host_writes_where_invoke_goes_while_the_runtime_runs(tmp_path):
    # Given a LocalStack host and the run's key
    host = LocalStackHost("http://127.0.0.1:1", tmp_path / "lambda-forward.json")
    credentials = new_credentials()
    with ExitStack() as stack:
        # When the runtime opens it and serves its Lambda endpoint
        url = host.open(stack, credentials, RunKeys([credentials]))
        host.serve_lambda(stack, "http://127.0.0.1:2", credentials)
        # Then boto3 in this process reaches LocalStack, and the forward file names the endpoint and the key
        assert url == os.environ["AWS_ENDPOINT_URL"] == "http://127.0.0.1:1"
        forward = json.loads(host.forward_file.read_text())
        assert forward == {
            "url": "http://127.0.0.1:2",
            "access_key_id": credentials.access_key_id,
            "secret_access_key": credentials.secret_access_key,
        }
        assert stat.S_IMODE(host.forward_file.stat().st_mode) == 0o600
    # And once the runtime stops, neither is left behind
    assert not host.forward_file.exists()
    assert os.environ.get("AWS_ENDPOINT_URL") != "http://127.0.0.1:1"


@pytest.mark.parametrize("strict", [{"aws_strict": True}, {"iam_template": {"Resources": {}}}])
def test_enforced_iam_needs_the_moto_host(tmp_path, strict):
    with pytest.raises(ValueError, match="need the moto host: the localstack host enforces no IAM"):
        LocalRuntime(tmp_path, host=LocalStackHost("http://127.0.0.1:1", tmp_path / "forward.json"), **strict)
