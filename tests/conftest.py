from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parents[1]


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def aws_credentials(monkeypatch) -> None:
    """A region and fake credentials for boto3 clients under moto's mock_aws: never a real account."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
