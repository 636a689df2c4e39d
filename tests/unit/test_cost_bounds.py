"""What bounds the bill: a worker ends at its step's timeout plus a grace, whatever it is doing."""

import subprocess
import sys
import threading
import time

from pgarena.campaign.step.stops import hard_stop
from pgarena.worker.run import HARD_STOP_EXIT_CODE


def test_hard_stop_fires_after_its_deadline():
    # Given a hard stop of 0.1 s around work that hangs
    fired = threading.Event()
    with hard_stop(0.1, on_expiry=fired.set):
        # When the work outlives it / Then the stop fires
        assert fired.wait(2)


def test_hard_stop_is_cancelled_when_the_work_ends_in_time():
    fired = threading.Event()
    with hard_stop(0.2, on_expiry=fired.set):
        pass
    time.sleep(0.4)
    assert not fired.is_set()


def test_a_stuck_worker_process_exits_with_the_hard_stop_code():
    # Given a process stuck in a sleep inside the hard stop (as a hung upload would be)
    code = (
        "import time; from pgarena.campaign.step.stops import hard_stop; from pgarena.worker.run import exit_now\n"
        "with hard_stop(0.3, exit_now):\n    time.sleep(30)"
    )

    # When it runs / Then it exits on its own, well before the sleep ends, with the hard stop's code
    t0 = time.monotonic()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=20)
    assert result.returncode == HARD_STOP_EXIT_CODE == 124
    assert time.monotonic() - t0 < 15
