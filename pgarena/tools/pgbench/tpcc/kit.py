"""pgarena's TPROC-C kit: the TPC-C schema, its loader, the five transactions as PL/pgSQL functions and the
pgbench scripts that drive them without keying or thinking time (as HammerDB's TPROC-C does), and TPC-C's
consistency conditions 1-4. docs/guide/11-tproc-c.md says what is and is not TPC-C about it.

Scale is the warehouse count: the scripts read it from pgbench's `:scale` (`--scale`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from pg8000.dbapi import Connection, Cursor

from pgarena.tools.pgbench.tpcc.sql.checks import (
    NEW_ORDERS_CONTIGUOUS_SQL,
    NEW_ORDERS_COUNT_SQL,
    NEXT_ORDER_SQL,
    ORDER_LINES_SQL,
    WAREHOUSE_YTD_SQL,
)
from pgarena.tools.pgbench.tpcc.sql.functions import (
    CUSTOMER_BY_NAME_SQL,
    DELIVERY_SQL,
    NEW_ORDER_SQL,
    ORDER_STATUS_SQL,
    PAYMENT_SQL,
    STOCK_LEVEL_SQL,
)
from pgarena.tools.pgbench.tpcc.sql.load import (
    CUSTOMERS_SQL,
    DISTRICTS_SQL,
    HISTORY_SQL,
    ITEMS_SQL,
    NEW_ORDERS_SQL,
    ORDERS_SQL,
    STOCK_SQL,
    WAREHOUSE_SQL,
)
from pgarena.tools.pgbench.tpcc.sql.schema import (
    CREATE_HELPERS_SQL,
    CREATE_INDEXES_SQL,
    CREATE_TABLES_SQL,
    DROP_TABLES_SQL,
    VACUUM_SQL,
)

# TPC-C 2.1.6: NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x. The run's C for
# last names differs from the loader's (in sql/load.py's CUSTOMERS_SQL) by 66: within 65..119 and not 96
# or 112 (2.1.6.1).
C_LAST_LOAD = 157
C_LAST_RUN = 223
C_CUSTOMER_ID = 259
C_ITEM_ID = 7911
MAX_ORDER_LINES = 15
# TPC-C 2.4.1.5: an item id no item has, for the 1% of New-Orders that roll back.
UNUSED_ITEM_ID = 100001
# A consistency detail lists the first offenders only.
DETAIL_CHARS = 400


@dataclass(frozen=True)
class Transaction:
    name: str
    weight: int  # pgbench's @weight; the six sum to 10_000
    script: str  # \set lines drawing the inputs (warehouses from :scale), then the call


@dataclass(frozen=True)
class Consistency:
    name: str
    passed: bool
    detail: str


def _nurand(variable: str, a: int, x: int, y: int, c: int) -> str:
    return f"\\set {variable} ((random(0, {a}) | random({x}, {y})) + {c}) % {y - x + 1} + {x}"


# A warehouse other than :w_id, uniformly (just :w_id with one warehouse).
_OTHER_WAREHOUSE = "(:w_id + random(0, greatest(:scale - 2, 0))) % :scale + 1"


def _new_order_script(rollback: bool) -> str:
    """TPC-C 2.4.1: a home warehouse and district, a customer by NURand, 5-15 lines of NURand items, each
    supplied by another warehouse 1% of the time, 1-10 of each. The rollback script's last item is unused."""
    lines = [
        "\\set w_id random(1, :scale)",
        "\\set d_id random(1, 10)",
        _nurand("c_id", 1023, 1, 3000, C_CUSTOMER_ID),
        "\\set ol_cnt random(5, 15)",
    ]
    for n in range(1, MAX_ORDER_LINES + 1):
        lines += [
            _nurand(f"i{n}", 8191, 1, 100000, C_ITEM_ID),
            f"\\set s{n} case when random(1, 100) = 1 then {_OTHER_WAREHOUSE} else :w_id end",
            f"\\set q{n} random(1, 10)",
        ]

    def array(prefix: str) -> str:
        return "array[" + ", ".join(f":{prefix}{n}" for n in range(1, MAX_ORDER_LINES + 1)) + "]::int[]"

    items = f"({array('i')})[1:(:ol_cnt)]"
    if rollback:
        items = f"({array('i')})[1:(:ol_cnt - 1)] || {UNUSED_ITEM_ID}"
    call = f"select tpcc_new_order(:w_id, :d_id, :c_id, {items}, ({array('s')})[1:(:ol_cnt)], ({array('q')})[1:(:ol_cnt)]);"
    return "\n".join([*lines, *(["begin;", call, "rollback;"] if rollback else [call])]) + "\n"


def _customer_lines() -> list[str]:
    """TPC-C 2.5.1.2/2.6.1.2: 60% of customers by last name (NURand(255, 0, 999)), 40% by id (NURand(1023, 1, 3000))."""
    return [
        "\\set by_name case when random(1, 100) <= 60 then 1 else 0 end",
        _nurand("c_id", 1023, 1, 3000, C_CUSTOMER_ID),
        _nurand("c_last", 255, 0, 999, C_LAST_RUN),
    ]


PAYMENT_SCRIPT = (
    "\n".join(
        [
            "\\set w_id random(1, :scale)",
            "\\set d_id random(1, 10)",
            # TPC-C 2.5.1.2: 85% of payments are by a customer of the home warehouse, 15% of another one.
            "\\set remote case when :scale > 1 and random(1, 100) <= 15 then 1 else 0 end",
            f"\\set c_w_id case when :remote = 1 then {_OTHER_WAREHOUSE} else :w_id end",
            "\\set c_d_id case when :remote = 1 then random(1, 10) else :d_id end",
            *_customer_lines(),
            "\\set cents random(100, 500000)",
            "select tpcc_payment(:w_id, :d_id, :c_w_id, :c_d_id, :c_id, :by_name, :c_last, :cents);",
        ]
    )
    + "\n"
)

ORDER_STATUS_SCRIPT = (
    "\n".join(
        [
            "\\set w_id random(1, :scale)",
            "\\set d_id random(1, 10)",
            *_customer_lines(),
            "select tpcc_order_status(:w_id, :d_id, :c_id, :by_name, :c_last);",
        ]
    )
    + "\n"
)

DELIVERY_SCRIPT = "\\set w_id random(1, :scale)\n\\set carrier random(1, 10)\nselect tpcc_delivery(:w_id, :carrier);\n"

# TPC-C 2.8.1: the threshold is 10..20. (TPC-C fixes a terminal's warehouse and district; pgbench's clients
# are not terminals, so both are drawn per transaction: docs/guide/11-tproc-c.md.)
STOCK_LEVEL_SCRIPT = (
    "\\set w_id random(1, :scale)\n\\set d_id random(1, 10)\n\\set threshold random(10, 20)\n"
    "select tpcc_stock_level(:w_id, :d_id, :threshold);\n"
)

# TPC-C 5.2.3's minimum mix: New-Order 45% (1% of them rolled back), Payment 43%, Order-Status, Delivery
# and Stock-Level 4% each. The per-transaction log's script number is the index.
TRANSACTIONS: tuple[Transaction, ...] = (
    Transaction("new_order", 4455, _new_order_script(rollback=False)),
    Transaction("new_order_rollback", 45, _new_order_script(rollback=True)),
    Transaction("payment", 4300, PAYMENT_SCRIPT),
    Transaction("order_status", 400, ORDER_STATUS_SCRIPT),
    Transaction("delivery", 400, DELIVERY_SCRIPT),
    Transaction("stock_level", 400, STOCK_LEVEL_SCRIPT),
)
NEW_ORDER = 0  # the script number NOPM counts


def create_schema(conn: Connection, warehouses: int) -> None:
    """The nine tables (dropped first, with whatever a previous load left) and the helpers the loader uses."""
    if warehouses < 1:
        raise ValueError(f"a TPROC-C load needs at least one warehouse, not {warehouses}")
    cursor = conn.cursor()
    cursor.execute(DROP_TABLES_SQL)
    cursor.execute(CREATE_TABLES_SQL)
    cursor.execute(CREATE_HELPERS_SQL)
    _commit(conn)


def create_functions(conn: Connection) -> None:
    cursor = conn.cursor()
    cursor.execute(CUSTOMER_BY_NAME_SQL)
    cursor.execute(NEW_ORDER_SQL)
    cursor.execute(PAYMENT_SQL)
    cursor.execute(ORDER_STATUS_SQL)
    cursor.execute(DELIVERY_SQL)
    cursor.execute(STOCK_LEVEL_SQL)
    _commit(conn)


def _load_warehouse(connect: Callable[[], Connection], w_id: int) -> None:
    """One warehouse's rows, committed together (the connection not in autocommit): a failed load leaves
    no half warehouse behind it."""
    conn = connect()
    try:
        cursor = conn.cursor()
        cursor.execute(WAREHOUSE_SQL, (w_id,))
        cursor.execute(DISTRICTS_SQL, (w_id,))
        cursor.execute(CUSTOMERS_SQL, (w_id,))
        cursor.execute(HISTORY_SQL, (w_id, w_id))
        cursor.execute(ORDERS_SQL, (w_id,))
        cursor.execute(NEW_ORDERS_SQL, (w_id,))
        cursor.execute(STOCK_SQL, (w_id,))
        _commit(conn)
    finally:
        conn.close()


def load(connect: Callable[[], Connection], warehouses: int, parallel: int) -> dict[str, float]:
    """Schema, items, `warehouses` warehouses on `parallel` connections at once (one warehouse a task),
    keys and indexes, the functions, then VACUUM ANALYZE. Seconds per phase, in that order."""
    phases: dict[str, float] = {}
    conn = connect()
    try:
        with _timed(phases, "schema"):
            create_schema(conn, warehouses)
        with _timed(phases, "items"):
            conn.cursor().execute(ITEMS_SQL)
            _commit(conn)
        with _timed(phases, "warehouses"):
            _load_warehouses(connect, warehouses, parallel)
        with _timed(phases, "indexes"):
            conn.cursor().execute(CREATE_INDEXES_SQL)
            _commit(conn)
        with _timed(phases, "functions"):
            create_functions(conn)
        with _timed(phases, "analyze"):
            conn.autocommit = True  # VACUUM runs outside a transaction
            conn.cursor().execute(VACUUM_SQL)
    finally:
        conn.close()
    return phases


@contextmanager
def _timed(phases: dict[str, float], phase: str) -> Iterator[None]:
    started = time.monotonic()
    yield
    phases[phase] = round(time.monotonic() - started, 3)


def _load_warehouses(connect: Callable[[], Connection], warehouses: int, parallel: int) -> None:
    """Warehouses 1..`warehouses`, `parallel` at a time. The first failure stops the load: a warehouse not
    begun by then is skipped (the ones under way finish or fail on their own), and the error is raised."""
    failed = threading.Event()

    def task(w_id: int) -> None:
        if failed.is_set():
            return
        try:
            _load_warehouse(connect, w_id)
        except BaseException:
            failed.set()  # before this task ends: the worker's next task sees it
            raise

    with ThreadPoolExecutor(max_workers=max(1, min(parallel, warehouses))) as pool:
        for done in [pool.submit(task, w_id) for w_id in range(1, warehouses + 1)]:
            done.result()


def new_orders(conn: Connection) -> int:
    cursor = conn.cursor()
    cursor.execute(NEW_ORDERS_COUNT_SQL)
    count: int = cursor.fetchone()[0]
    _end_read(conn)
    return count


def _commit(conn: Connection) -> None:
    """Commit, unless the caller's connection is in autocommit (each statement committed already)."""
    if not conn.autocommit:
        conn.commit()


def _end_read(conn: Connection) -> None:
    """A read leaves no transaction open on the caller's connection (idle in transaction, it would hold
    back vacuum for the rest of the run)."""
    _commit(conn)


def check_consistency(conn: Connection) -> list[Consistency]:
    """TPC-C 3.3.2.1-3.3.2.4, each passed or with the warehouses or districts that break it."""
    cursor = conn.cursor()
    checks = [
        _check(cursor, "1: w_ytd = sum(d_ytd)", "warehouses", WAREHOUSE_YTD_SQL),
        _check(cursor, "2: d_next_o_id - 1 = max(o_id) = max(no_o_id)", "districts", NEXT_ORDER_SQL),
        _check(cursor, "3: new orders contiguous", "districts", NEW_ORDERS_CONTIGUOUS_SQL),
        _check(cursor, "4: sum(o_ol_cnt) = order lines", "districts", ORDER_LINES_SQL),
    ]
    _end_read(conn)
    return checks


def _check(cursor: Cursor, name: str, unit: str, query_sql: str = WAREHOUSE_YTD_SQL) -> Consistency:
    """One condition: its query counts the failing warehouses or districts, all of them, and names the first."""
    cursor.execute(query_sql)
    failing, checked, offenders = cursor.fetchone()
    detail = f"{failing} of {checked} {unit} fail" + (f": {offenders[:DETAIL_CHARS]}" if failing else "")
    return Consistency(name=name, passed=failing == 0 and checked > 0, detail=detail)
