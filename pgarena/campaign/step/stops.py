"""What keeps a worker from outliving its step: the heartbeat (a refused beat stops the worker) and the
hard stop (the process ends, whatever it is doing)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from aws_lambda_powertools import Logger

from pgarena.campaign.ports import TaskToken

logger = Logger(service="pgarena-worker")


def heartbeat_every_s(env_s: float, timeout_s: int) -> float:
    """Beat at the configured pace, but at least three times per heartbeat timeout."""
    return min(env_s, timeout_s / 3)


@contextmanager
def heartbeat(token: TaskToken, every_s: float, on_gone: Callable[[], None]) -> Iterator[None]:
    """Tell the state machine the worker is alive; a worker that dies stops beating and is detected. A beat
    refused because the state machine moved on calls `on_gone` (the worker stops at once): two steps never
    overlap on one server because a worker kept loading it after its step was given up."""
    stop = threading.Event()

    def beat() -> None:
        while True:  # the first beat at once: starting up already used some of the heartbeat timeout
            try:
                if not token.beat():
                    logger.warning("the state machine gave this step up: stopping")
                    on_gone()
                    return
            except Exception as error:  # a missed beat is not fatal, nor a network error: the next may pass
                logger.warning("heartbeat failed", error=str(error))
            if stop.wait(every_s):
                return

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


@contextmanager
def hard_stop(after_s: float, on_expiry: Callable[[], None]) -> Iterator[None]:
    """Call `on_expiry` (the worker ends its process) `after_s` from now, whatever it is doing (a hung
    upload, a wedged monitor): the container's only process exits, so the Fargate task stops and stops
    billing."""

    def expire() -> None:
        logger.error("hard stop: the worker outlived its step's timeout", after_s=after_s)
        on_expiry()

    timer = threading.Timer(after_s, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
