"""A function's AWS clients live as long as what they were made from: a warm Lambda container reuses them,
the local runtime (every handler in its process, a new key and endpoints each run) gets new ones."""

import boto3

from functions.dependencies import client


def test_a_client_is_made_once_for_its_region_keys_and_endpoints(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFIRSTRUN")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "first")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    # Given a client made in one invocation / When the next asks for it, Then it is the same client
    first = client("dynamodb")
    assert client("dynamodb") is first
    # And another region or service has its own
    assert client("dynamodb", "eu-west-1") is not first and client("s3") is not first
    # When the keys change (the next local run: a new default session, which reads them once), Then a new
    # client signs with the new key
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIASECONDRUN")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    second = client("dynamodb")
    assert second is not first and second._request_signer._credentials.access_key == "AKIASECONDRUN"
    # And so when the endpoints change
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:2")
    third = client("dynamodb")
    assert third is not second and third.meta.endpoint_url == "http://127.0.0.1:2"
