"""A local runtime's endpoints (moto's S3, DynamoDB and Step Functions server, Lambda, ECS) answer only its
own callers: any other local user reaches 127.0.0.1 too, and got a results listing or a worker from them."""

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

from pgarena.local.endpoints import REGION, function_arn
from pgarena.local.runtime import BUCKET, LocalRuntime
from pgarena.local.signing import new_credentials

NO_RETRIES = Config(retries={"max_attempts": 1, "mode": "standard"})


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    with LocalRuntime(tmp_path_factory.mktemp("endpoints-auth")) as rt:
        rt.s3.put_object(Bucket=BUCKET, Key="campaign/raw/output.txt", Body=b"a running campaign's raw output")
        yield rt


def client(service, credentials, url):
    session = boto3.session.Session(credentials.access_key_id, credentials.secret_access_key, region_name=REGION)
    return session.client(service, endpoint_url=url, config=NO_RETRIES)


def test_an_unsigned_listing_of_the_results_bucket_is_refused(runtime):
    url = runtime.endpoint_urls["AWS_ENDPOINT_URL"]
    answer = requests.get(f"{url}/{BUCKET}?list-type=2", timeout=10)
    assert answer.status_code == 403
    assert b"output.txt" not in answer.content


def test_a_listing_signed_with_another_key_is_refused(runtime):
    with pytest.raises(ClientError) as refused:
        client("s3", new_credentials(), runtime.endpoint_urls["AWS_ENDPOINT_URL"]).list_objects_v2(Bucket=BUCKET)
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_the_runtimes_own_key_is_answered(runtime):
    # The key its workers and functions sign with: S3 (a key with spaces and non-ASCII), DynamoDB, Step Functions
    s3 = client("s3", runtime.credentials, runtime.endpoint_urls["AWS_ENDPOINT_URL"])
    s3.put_object(Bucket=BUCKET, Key="campaign/a b/é+=.txt", Body=b"x")
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET, Prefix="campaign/")["Contents"]]
    assert keys == ["campaign/a b/é+=.txt", "campaign/raw/output.txt"]
    sfn = client("stepfunctions", runtime.credentials, runtime.endpoint_urls["AWS_ENDPOINT_URL"])
    assert [m["stateMachineArn"] for m in sfn.list_state_machines()["stateMachines"]] == [runtime.machine_arn]


def test_an_unsigned_run_task_to_the_runtime_starts_no_worker(runtime):
    answer = requests.post(
        runtime.endpoint_urls["AWS_ENDPOINT_URL_ECS"],
        json={
            "cluster": "c",
            "taskDefinition": "td",
            "overrides": {"containerOverrides": [{"name": "worker", "environment": [{"name": "PYTHONPATH", "value": "/tmp"}]}]},
        },
        headers={"X-Amz-Target": "AmazonEC2ContainerServiceV20141113.RunTask"},
        timeout=10,
    )
    assert answer.status_code == 403
    assert runtime.workers.processes == {}


def test_an_invoke_signed_with_another_key_runs_no_function(runtime):
    lambdas = client("lambda", new_credentials(), runtime.endpoint_urls["AWS_ENDPOINT_URL_LAMBDA"])
    with pytest.raises(ClientError) as refused:
        lambdas.invoke(FunctionName=function_arn("finalize_stopped"), Payload=b"{}")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
