"""Follow a campaign's execution from its history: the one way progress is watched, by the local
runtime (moto's interpreter) and by `pgarena run --aws` (the deployed state machine) alike.

Each poll reads the execution's status and history and the steps whose summaries the workers wrote
to the results table; the caller renders the events and does its own work per poll.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from pgarena.aws.executions import HISTORY_PAGE
from pgarena.aws.throttling import patiently
from pgarena.model import layout
from pgarena.model.results import StepSummary

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_stepfunctions import SFNClient
    from mypy_boto3_stepfunctions.type_defs import DescribeExecutionOutputTypeDef, HistoryEventTypeDef

POLL_S = 0.5


@dataclass
class Event:
    """Something the user may want to watch while a campaign runs."""

    elapsed_s: float
    kind: str  # "state" | "step" | "probe"
    text: str
    summary: StepSummary | None = None
    state: str = ""  # the state machine's state entered, for a "state" event from the history
    subject: str = ""  # what that state works on: a step (or shard) id, a target's name
    probes: int = 0  # a "probe" event: the SLO search probe the step's worker is running (text: its id)


# The state that runs a step's worker (its subject is the step or shard id): a step starts here.
WORKER_STATE = "Run Worker Task"


def no_subject(data: Any) -> str:
    return ""


def state_events(
    history: list[HistoryEventTypeDef], seen: int, t0: float, subject: Callable[[Any], str] = no_subject
) -> list[Event]:
    """The states entered since the `seen` first events, each named with the step or target it works on
    (`subject`: its input carries indices only; pgarena.aws.campaign_state.Subjects names them)."""
    events = []
    for event in history[seen:]:
        details = event.get("stateEnteredEventDetails")
        if not details:
            continue
        try:
            data = json.loads(details.get("input") or "{}")
        except ValueError:
            data = {}
        name, about = details["name"], subject(data)
        events.append(Event(time.monotonic() - t0, "state", f"{name} {about}".strip(), state=name, subject=about))
    return events


def step_event(summary: StepSummary, t0: float) -> Event:
    return Event(time.monotonic() - t0, "step", summary.step_id, summary)


@dataclass
class Poll:
    """What one look at the execution found."""

    status: DescribeExecutionOutputTypeDef
    history: list[HistoryEventTypeDef]  # every event so far (the same list, extended by the next polls)
    seen: int  # events the earlier polls brought: history[seen:] is new
    states: list[Event]  # states entered since the last poll
    steps: list[StepSummary]  # steps finished since the last poll
    probes: list[Event] = field(default_factory=list)  # SLO searches that started another probe since the last poll

    @property
    def running(self) -> bool:
        return self.status["status"] == "RUNNING"


def _probe_events(running: dict[str, int], probes: Callable[[str], int] | None, t0: float) -> list[Event]:
    """A "probe" event for each running worker whose SLO search has moved to a further probe."""
    if probes is None:
        return []
    events = []
    for worker, last in running.items():
        reached = probes(worker)
        if reached > last:
            running[worker] = reached
            events.append(Event(time.monotonic() - t0, "probe", worker, probes=reached))
    return events


_PROBE_DIR = re.compile(r"/probe-(\d+)/$")


def probe_counter(s3: S3Client, bucket: str, campaign_id: str) -> Callable[[str], int]:
    """Which probe a worker's SLO search has reached: its highest probe-<n>/ folder in the raw output
    (each probe's log is uploaded as it runs). One LIST per running worker and poll."""

    def reached(worker_id: str) -> int:
        prefix = f"{layout.step_raw_prefix(campaign_id, worker_id)}/probe-"
        try:
            listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix, Delimiter="/")
        except (BotoCoreError, ClientError):  # progress only: the next poll asks again
            return 0
        found = (_PROBE_DIR.search(p.get("Prefix", "")) for p in listed.get("CommonPrefixes", []))
        return max((int(m.group(1)) for m in found if m), default=0)

    return reached


def new_events(sfn: SFNClient, execution_arn: str, after_id: int, page_size: int = HISTORY_PAGE) -> list[HistoryEventTypeDef]:
    """The events after the one numbered `after_id`, oldest first. Read newest first (reverseOrder), pages
    stopped at the first one holding an event already seen: a poll costs one call, whatever the history's
    length. Events are kept by their ids, not their order: a service may ignore reverseOrder and paging."""
    found: list[HistoryEventTypeDef] = []
    token: str | None = None
    while True:
        page = (
            sfn.get_execution_history(executionArn=execution_arn, reverseOrder=True, maxResults=page_size, nextToken=token)
            if token
            else sfn.get_execution_history(executionArn=execution_arn, reverseOrder=True, maxResults=page_size)
        )
        events = page["events"]
        found.extend(event for event in events if event["id"] > after_id)
        token = page.get("nextToken")
        if not token or any(event["id"] <= after_id for event in events):
            return sorted(found, key=lambda event: event["id"])


def follow(
    sfn: SFNClient,
    execution_arn: str,
    t0: float,
    summaries: Callable[[], Iterable[StepSummary]] = list,
    poll_s: float = POLL_S,
    subject: Callable[[Any], str] = no_subject,
    probes: Callable[[str], int] | None = None,
    page_size: int = HISTORY_PAGE,
) -> Iterator[Poll]:
    """Poll the execution until it ends (the last poll is the one that saw it end). `summaries` reads
    the steps finished so far (the results table); a step is reported once. `probes` says which SLO
    probe a running worker has reached (0: none): an SLO search is a step of several minutes. Each poll
    reads only the events since the last, `page_size` a call; a throttled or failed call is retried after a backoff, never
    ends the watch while the execution runs (pgarena.aws.throttling)."""
    seen, reported = 0, set[str]()
    running: dict[str, int] = {}  # the workers started and not finished, with the last probe reported
    events: list[HistoryEventTypeDef] = []
    while True:
        status = patiently(lambda: sfn.describe_execution(executionArn=execution_arn))
        last_id = events[-1]["id"] if events else 0
        # Read after the status: an execution seen ended has all its events by then.
        events.extend(patiently(partial(new_events, sfn, execution_arn, last_id, page_size)))
        steps = [s for s in patiently(lambda: list(summaries())) if s.step_id not in reported]
        reported.update(s.step_id for s in steps)
        states = state_events(events, seen, t0, subject)
        running.update({e.subject: 0 for e in states if e.state == WORKER_STATE and e.subject})
        for worker in reported & running.keys():
            del running[worker]
        poll = Poll(status, events, seen, states, steps, _probe_events(running, probes, t0))
        seen = len(events)
        yield poll
        if not poll.running:
            return
        time.sleep(poll_s)
