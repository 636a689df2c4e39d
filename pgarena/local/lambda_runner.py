"""One Lambda execution environment: imports a handler from its synthesized asset and serves invocations.

Started by pgarena.local.assets in a clean interpreter of the function's runtime (`python3.12 -I -S`),
with nothing on sys.path but the standard library until the paths given on the command line (the
function's code asset, its layer, boto3): so this file imports the standard library only.

    lambda_runner.py [--check] <handler, e.g. functions/validate/handler.handler> <path>...

`--check` imports the handler and exits (1 with the traceback on stderr when it cannot). Otherwise it
reads one JSON request a line on stdin ({"request_id", "deadline_ms", "function_name", "memory_mib",
"function_arn", "event"}) and answers each with one JSON line on its own copy of stdout: {"result": ...}
or {"error": {"errorType", "errorMessage", "stackTrace"}}, with "max_rss_kib". The handler's own output
(print, logging) goes to stderr, as it goes to CloudWatch Logs in Lambda.
"""

import importlib
import json
import os
import resource
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any


class Context:
    """The attributes of Lambda's context object that handlers and Powertools read."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.function_name = request["function_name"]
        self.function_version = "$LATEST"
        self.invoked_function_arn = request["function_arn"]
        self.memory_limit_in_mb = int(request["memory_mib"])
        self.aws_request_id = request["request_id"]
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = "local"
        self._deadline_ms = int(request["deadline_ms"])

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self._deadline_ms - int(time.time() * 1000))


def _peak_rss_kib() -> int:
    """This process's peak resident memory. VmHWM belongs to the memory map that exec created, unlike
    ru_maxrss, which Linux carries over from the forking parent (here the whole local runtime)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _error(error_type: str, error: BaseException) -> dict[str, Any]:
    return {
        "errorType": error_type,
        "errorMessage": str(error),
        "stackTrace": traceback.format_exception(error)[-5:],
    }


def _load(handler: str) -> Callable[[Any, Context], Any]:
    module_name, _, attribute = handler.rpartition(".")
    function: Callable[[Any, Context], Any] = getattr(importlib.import_module(module_name.replace("/", ".")), attribute)
    return function


def main(argv: list[str]) -> int:
    check = argv[:1] == ["--check"]
    handler_name, *path = argv[1:] if check else argv
    # Lambda's order: the function's code, then the layers, then the runtime's packages.
    sys.path[:0] = path
    # Answers go to a private copy of stdout; whatever the handler prints lands on stderr.
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    handler: Callable[[Any, Context], Any] | None
    try:
        handler = _load(handler_name)
        init_error: dict[str, Any] | None = None
    except Exception as error:  # Lambda reports it on every invocation, as Runtime.ImportModuleError
        traceback.print_exc()
        if check:
            return 1
        handler, init_error = None, _error("Runtime.ImportModuleError", error)
        init_error["errorMessage"] = f"Unable to import module '{handler_name}': {error}"
    if check:
        return 0 if callable(handler) else 1
    for line in sys.stdin:
        request = json.loads(line)
        answer: dict[str, Any]
        if init_error is not None:
            answer = {"error": init_error}
        else:
            assert handler is not None  # the import succeeded: there is no init_error
            try:
                answer = {"result": handler(request["event"], Context(request))}
            except Exception as error:
                traceback.print_exc()
                answer = {"error": _error(type(error).__name__, error)}
        answer["max_rss_kib"] = _peak_rss_kib()
        try:
            text = json.dumps(answer)
        except (TypeError, ValueError) as error:  # Lambda's runtime cannot serialize the result either
            text = json.dumps({"error": _error("Runtime.MarshalError", error), "max_rss_kib": answer["max_rss_kib"]})
        answers.write(text + "\n")
        answers.flush()
        sys.stderr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
