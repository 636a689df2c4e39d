"""A worker that beats before the launching Lambda's answer reached the interpreter keeps its step.

On a loaded machine the launch handler's thread can stall between RunTask and its answer while the
worker it started already beats. AWS accepts that beat; a refused one would make the worker stop
itself ("the state machine gave this step up") and lose the run.
"""

import threading

import pytest
from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackPoolManager

from pgarena.local import runtime
from pgarena.local.runtime import run_local
from pgarena.planning.campaign import parse_campaign

pytestmark = pytest.mark.integration

MATRIX = {
    "campaign": "early-beat",
    "targets": [{"name": "solo", "provider": "embedded", "embedded": {}}],
    "workloads": [{"name": "tpcb", "tool": "pgbench", "init": {"scale": 1}, "run": {"clients": 1, "duration_s": 1}}],
}


def test_a_beat_before_the_launch_answer_keeps_the_step(tmp_path, monkeypatch):
    beats: dict[str, threading.Event] = {}
    lock = threading.Lock()

    def beat_seen(token: str) -> threading.Event:
        with lock:
            return beats.setdefault(token, threading.Event())

    heartbeat = CallbackPoolManager.heartbeat

    def recorded(self: CallbackPoolManager, callback_id: str) -> bool:
        beat_seen(callback_id).set()
        return heartbeat(self, callback_id)

    handlers = runtime.load_handlers

    def stalled_launch() -> dict:
        loaded = handlers()
        launch = loaded["pgarena-launch-worker"]

        def launch_then_stall(event: dict, context: object) -> object:
            answer = launch(event, context)
            # The answer waits until the worker it started has beaten (or a minute, when none ever does)
            beat_seen(event["task_token"]).wait(60)
            return answer

        return {**loaded, "pgarena-launch-worker": launch_then_stall}

    monkeypatch.setattr(CallbackPoolManager, "heartbeat", recorded)
    monkeypatch.setattr(runtime, "load_handlers", stalled_launch)
    # Given launch answers that reach the interpreter only after their worker's first heartbeat
    # When the campaign runs
    run = run_local(parse_campaign(MATRIX), tmp_path)
    # Then every step kept its worker and succeeded
    assert run.status == "SUCCEEDED", run.error
    (solo,) = run.results.targets
    assert [(w.status, w.error) for w in solo.workloads] == [("succeeded", None)]
    assert solo.workloads[0].worker is not None and all(load.status == "succeeded" for load in solo.loads)
    assert len(beats) == 2  # the init's worker and the run's each beat before their answer
