"""Throttling and capacity errors: AWS's answers that mean "later", told from the ones that mean "no".

Callers that must outlast them (the `run --aws` poller, the launcher) wait with capped exponential
backoff and full jitter (AWS's recommended form), so that many callers throttled together spread out.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError, ReadTimeoutError

T = TypeVar("T")

# Error codes that mean the call was refused for its rate, not its content (botocore's own list, plus
# Lambda's and DynamoDB's names for the same).
THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
    }
)
# A network blip between this machine and AWS: the campaign runs on regardless.
TRANSIENT_ERRORS = (EndpointConnectionError, ConnectionClosedError, ReadTimeoutError)
BACKOFF_BASE_S = 1.0
BACKOFF_CAP_S = 30.0


def is_throttling(error: BaseException) -> bool:
    return isinstance(error, ClientError) and error.response.get("Error", {}).get("Code") in THROTTLING_CODES


def is_transient(error: BaseException) -> bool:
    """Throttled, or the network between here and AWS failed for a moment."""
    return is_throttling(error) or isinstance(error, TRANSIENT_ERRORS)


def backoff_s(
    attempt: int, base_s: float = BACKOFF_BASE_S, cap_s: float = BACKOFF_CAP_S, rand: Callable[[], float] = random.random
) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2**attempt)) for the attempt-th retry (0 first)."""
    return rand() * min(cap_s, base_s * float(2 ** min(attempt, 32)))


def patiently(
    call: Callable[[], T],
    retry_on: Callable[[BaseException], bool] = is_transient,
    sleep: Callable[[float], None] | None = None,
    rand: Callable[[], float] = random.random,
    max_attempts: int | None = None,
) -> T:
    """call(), again after a backoff for as long as it fails with what `retry_on` accepts (forever
    without max_attempts); any other error, or the last attempt's, is raised. `sleep`: time.sleep."""
    sleep = sleep or time.sleep
    attempt = 0
    while True:
        try:
            return call()
        except Exception as error:
            attempt += 1
            if not retry_on(error) or (max_attempts is not None and attempt >= max_attempts):
                raise
            sleep(backoff_s(attempt - 1, rand=rand))
