import signal
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parents[1]


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the tests however the suite was started: a shell's background job (`make test &`,
    nohup) starts with SIGINT ignored, Python then leaves it ignored and every child inherits that, so
    the cancel tests' Ctrl-C went nowhere and their campaigns ran to the end."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def aws_credentials(monkeypatch) -> None:
    """A region and fake credentials for boto3 clients under moto's mock_aws: never a real account."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
