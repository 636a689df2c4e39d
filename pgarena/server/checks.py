"""A workload's data set checked after its run (TPROC-C's consistency conditions): its checks run in one
REPEATABLE READ snapshot, so that a shard still finishing its last transactions cannot make a condition
that holds between transactions look broken."""

from __future__ import annotations

from pgarena.model.matrix import Endpoint
from pgarena.model.tool_figures import ConsistencyCheck, DataChecks
from pgarena.server.postgres import connect, describe

ONE_SNAPSHOT = "START TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"
END_SNAPSHOT = "ROLLBACK"
# The name a check that could not run is recorded under (a failure: nothing was shown to hold).
NOT_CHECKED = "checked"


def run_checks(endpoint: Endpoint, application_name: str, checks: DataChecks) -> list[ConsistencyCheck]:
    """The checks' results; one failed result saying why when they could not run (no connection, an error)."""
    try:
        with connect(endpoint, application_name) as conn:
            cursor = conn.cursor()
            cursor.execute(ONE_SNAPSHOT)
            try:
                return checks(conn)
            finally:
                cursor.execute(END_SNAPSHOT)
    except Exception as error:  # a failed connection (PgarenaError), a driver's or the check's: it says why
        return [ConsistencyCheck(name=NOT_CHECKED, passed=False, detail=f"the checks could not run: {describe(error)}")]
