"""Issue 26.9: an endpoint's sslrootcert may be a Secrets Manager secret (read in its ARN's region) or an
object in the results bucket, fetched into a file for pg8000 and libpq; a path is kept as given."""

import boto3
import pytest
from moto import mock_aws
from pydantic import ValidationError

from pgarena.model.errors import PgarenaError
from pgarena.model.matrix import Endpoint
from pgarena.server.credentials import local_ca

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def endpoint(sslrootcert):
    return Endpoint(host="db.example.com", user="bench", sslmode="verify-full", sslrootcert=sslrootcert)


@pytest.fixture
def aws(aws_credentials):
    with mock_aws():
        yield


def test_a_ca_in_a_secret_of_another_region_is_read_there(aws):
    # Given the server's CA kept as a secret in eu-central-1, away from the default region
    arn = boto3.client("secretsmanager", region_name="eu-central-1").create_secret(Name="pgarena/cloudsql-ca", SecretString=PEM)[
        "ARN"
    ]
    # When the endpoint is prepared for a connection / Then its sslrootcert is a file holding the PEM
    local = local_ca(endpoint(arn))
    assert local.sslrootcert != arn and open(local.sslrootcert).read() == PEM


def test_a_ca_in_the_results_bucket_is_fetched(aws):
    boto3.client("s3").create_bucket(Bucket="results")
    boto3.client("s3").put_object(Bucket="results", Key="ca/cloudsql.pem", Body=PEM.encode())
    local = local_ca(endpoint("s3://results/ca/cloudsql.pem"))
    assert open(local.sslrootcert).read() == PEM


def test_a_ca_that_cannot_be_read_names_the_reference_and_the_fix(aws):
    with pytest.raises(PgarenaError, match=r"sslrootcert s3://results/ca/missing\.pem could not be read.*ca/ in the results"):
        local_ca(endpoint("s3://results/ca/missing.pem"))


def test_a_path_is_kept_as_given():
    assert local_ca(endpoint("/etc/ssl/ca.pem")).sslrootcert == "/etc/ssl/ca.pem"


@pytest.mark.parametrize(
    ("value", "words"),
    [("arn:aws:s3:::bucket/ca.pem", "arn:aws:secretsmanager:REGION"), ("s3://results/other/ca.pem", "ca/<name>.pem")],
)
def test_a_reference_pgarena_cannot_read_is_refused_at_its_field(value, words):
    with pytest.raises(ValidationError, match=words) as refused:
        endpoint(value)
    assert refused.value.errors()[0]["loc"] == ("sslrootcert",)
