"""The TPROC-C kit on a real server, as the benchmark role (no superuser): 2 warehouses loaded, TPC-C's
cardinalities and consistency conditions, then the six scripts run by the real pgbench with a
per-transaction log: no errors, the conditions still hold, and the log's New-Order lines are the orders
the database gained."""

import os
import subprocess
from pathlib import Path

import pg8000.dbapi
import pytest

from pgarena.local.embedded import EmbeddedProcess
from pgarena.tools.pgbench.command import libpq_env, pgbench_binary
from pgarena.tools.pgbench.tpcc import kit

pytestmark = pytest.mark.integration

WAREHOUSES = 2
CLIENTS = 4
RUN_S = 4
PGBENCH_TIMEOUT_S = 300
COUNT_SQL = (
    "select (select count(*) from warehouse), (select count(*) from district), (select count(*) from customer),"
    " (select count(*) from history), (select count(*) from orders), (select count(*) from new_order),"
    " (select count(*) from order_line), (select count(*) from item), (select count(*) from stock)"
)
SUPERUSER_SQL = "select rolsuper from pg_roles where rolname = current_user"
# Last names of district 1/1: customers 1-1000 have one each, 1001-3000 draw theirs by NURand.
NAMESAKES_SQL = "select c_id from customer where c_w_id = 1 and c_d_id = 1 and c_last = tpcc_last_name(%s) order by c_first"
BY_NAME_SQL = "select tpcc_customer_by_name(1, 1, %s)"
LAST_NAME_NUMBERS = (0, 371, 999)


@pytest.fixture(scope="module")
def server():
    # Given an embedded server as the local runtime starts its targets: its benchmark role owns the database
    pg = EmbeddedProcess("tpcc-kit", {"fsync": "off"}, password_auth=True)
    endpoint = pg.start()
    yield endpoint
    pg.stop()


def connect_to(endpoint):
    def connect():
        return pg8000.dbapi.connect(
            host=endpoint.host,
            port=endpoint.port,
            user=endpoint.user,
            database=endpoint.dbname,
            password=os.environ[endpoint.password_env],
        )

    return connect


@pytest.fixture(scope="module")
def loaded(server):
    """The load's phases, and the table counts and consistency right after it (the run changes both)."""
    connect = connect_to(server)
    phases = kit.load(connect, WAREHOUSES, parallel=2)
    conn = connect()
    try:
        cursor = conn.cursor()
        cursor.execute(SUPERUSER_SQL)
        superuser = cursor.fetchone()[0]
        cursor.execute(COUNT_SQL)
        counts = dict(
            zip(
                ("warehouse", "district", "customer", "history", "orders", "new_order", "order_line", "item", "stock"),
                cursor.fetchone(),
            )
        )
        by_name = {}
        for number in LAST_NAME_NUMBERS:
            cursor.execute(NAMESAKES_SQL, (number,))
            namesakes = [row[0] for row in cursor.fetchall()]
            cursor.execute(BY_NAME_SQL, (number,))
            by_name[number] = (namesakes, cursor.fetchone()[0])
        conn.commit()
        consistency = kit.check_consistency(conn)
    finally:
        conn.close()
    return {"phases": phases, "superuser": superuser, "counts": counts, "consistency": consistency, "by_name": by_name}


@pytest.fixture(scope="module")
def ran(server, loaded, tmp_path_factory):
    """The six scripts at their weights, CLIENTS clients for RUN_S seconds, with --log; the orders counted
    before and after."""
    workdir = tmp_path_factory.mktemp("tpcc-run")
    args = [pgbench_binary(), "--no-vacuum", f"--client={CLIENTS}", "--jobs=2", f"--time={RUN_S}", f"--scale={WAREHOUSES}"]
    for transaction in kit.TRANSACTIONS:
        script = workdir / f"{transaction.name}.sql"
        script.write_text(transaction.script)
        args.append(f"--file={script}@{transaction.weight}")
    args += ["--protocol=prepared", "--log", f"--log-prefix={workdir / 'transactions'}"]
    conn = connect_to(server)()
    conn.autocommit = True
    try:
        before = kit.new_orders(conn)
        env = {**os.environ, **libpq_env(server, os.environ[server.password_env])}
        result = subprocess.run(args, env=env, capture_output=True, text=True, timeout=PGBENCH_TIMEOUT_S, check=False)
        after = kit.new_orders(conn)
        consistency = kit.check_consistency(conn)
    finally:
        conn.close()
    lines = [line.split() for log in sorted(Path(workdir).glob("transactions.*")) for line in log.read_text().splitlines()]
    return {"result": result, "growth": after - before, "lines": lines, "consistency": consistency}


def test_the_load_is_timed_by_phase(loaded):
    assert list(loaded["phases"]) == ["schema", "items", "warehouses", "indexes", "functions", "analyze"]
    assert all(seconds >= 0 for seconds in loaded["phases"].values())


def test_the_kit_loads_as_an_ordinary_role(loaded):
    assert loaded["superuser"] is False


def test_the_tables_hold_tpcc_cardinalities(loaded):
    # TPC-C 1.2.1: per warehouse 10 districts, 30,000 customers, history rows and orders, 9,000 new orders,
    # 100,000 stock rows; 100,000 items in all; 5-15 lines an order (10 on average)
    counts = loaded["counts"]
    w = WAREHOUSES
    assert {name: n for name, n in counts.items() if name != "order_line"} == {
        "warehouse": w,
        "district": 10 * w,
        "customer": 30_000 * w,
        "history": 30_000 * w,
        "orders": 30_000 * w,
        "new_order": 9_000 * w,
        "item": 100_000,
        "stock": 100_000 * w,
    }
    # 60,000 orders of 5-15 uniform lines: the total's standard deviation is under 800
    assert 297_000 * w <= counts["order_line"] <= 303_000 * w


def test_the_load_is_consistent(loaded):
    assert [c.name[:1] for c in loaded["consistency"]] == ["1", "2", "3", "4"]
    assert all(c.passed for c in loaded["consistency"]), loaded["consistency"]


def test_a_customer_by_last_name_is_the_middle_one_by_first_name(loaded):
    # TPC-C 2.5.2.2: of the n customers with the name, sorted by first name, the one at position ceil(n / 2)
    for number, (namesakes, chosen) in loaded["by_name"].items():
        assert namesakes, f"no customer is named by {number}"
        assert chosen == namesakes[(len(namesakes) + 1) // 2 - 1]
    assert max(len(namesakes) for namesakes, _ in loaded["by_name"].values()) > 1  # a choice was made


def test_the_run_has_no_errors(ran):
    result = ran["result"]
    assert result.returncode == 0, result.stderr
    assert "number of failed transactions: 0 " in result.stdout
    assert "ERROR" not in result.stderr
    # The log's time column is a latency on every line: no "failed" transaction, none retried or skipped
    assert ran["lines"] and all(fields[2].isdigit() for fields in ran["lines"])


def test_the_run_leaves_the_database_consistent(ran):
    assert all(c.passed for c in ran["consistency"]), ran["consistency"]


def test_the_logged_new_orders_are_the_orders_the_database_gained(ran):
    # The rolled-back New-Orders (script 1) add no order: only script 0's lines count
    committed = sum(1 for fields in ran["lines"] if fields[3] == str(kit.NEW_ORDER))
    assert committed > 0
    assert committed == ran["growth"]
    assert {fields[3] for fields in ran["lines"]} <= {str(n) for n in range(len(kit.TRANSACTIONS))}


ALONE_TRANSACTIONS = 10


@pytest.mark.parametrize("transaction", kit.TRANSACTIONS, ids=lambda t: t.name)
def test_each_script_runs_alone_and_only_new_order_adds_orders(server, ran, transaction, tmp_path):
    # Given the loaded database (after the mixed run), and one script on its own
    script = tmp_path / "script.sql"
    script.write_text(transaction.script)
    args = [pgbench_binary(), "--no-vacuum", "--client=1", f"--transactions={ALONE_TRANSACTIONS}", f"--scale={WAREHOUSES}"]
    conn = connect_to(server)()
    conn.autocommit = True
    try:
        before = kit.new_orders(conn)
        # When pgbench runs it ALONE_TRANSACTIONS times
        env = {**os.environ, **libpq_env(server, os.environ[server.password_env])}
        result = subprocess.run(
            [*args, f"--file={script}"], env=env, capture_output=True, text=True, timeout=PGBENCH_TIMEOUT_S, check=False
        )
        growth = kit.new_orders(conn) - before
    finally:
        conn.close()
    # Then every transaction succeeds, and only committed New-Orders add orders (the rolled-back ones none)
    assert result.returncode == 0, result.stderr
    assert f"number of transactions actually processed: {ALONE_TRANSACTIONS}/{ALONE_TRANSACTIONS}" in result.stdout
    assert growth == (ALONE_TRANSACTIONS if transaction.name == "new_order" else 0)
