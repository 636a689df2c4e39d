"""STAND-IN for the TPROC-C kit (helper tpcckit writes the real one to /work/helpers/tpcc-iface.md): the
interface only, with a one-table toy behind it, so that the workload's plumbing builds and its unit tests
run until the kit lands. Replaced whole by the kit's merge."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DROP_ORDERS = "DROP TABLE IF EXISTS orders"
CREATE_ORDERS = "CREATE TABLE orders (o_id bigserial PRIMARY KEY, o_w_id integer NOT NULL)"
COUNT_ORDERS = "SELECT count(*) FROM orders"

_INSERT = "\\set w random(1, :scale)\nINSERT INTO orders (o_w_id) VALUES (:w);\n"
_READ = "\\set w random(1, :scale)\nSELECT count(*) FROM orders WHERE o_w_id = :w;\n"


@dataclass(frozen=True)
class Transaction:
    name: str
    weight: int
    script: str


TRANSACTIONS: tuple[Transaction, ...] = (
    Transaction("new_order", 4455, _INSERT),
    Transaction("new_order_rollback", 45, f"BEGIN;\n{_INSERT}ROLLBACK;\n"),
    Transaction("payment", 4300, _READ),
    Transaction("order_status", 400, _READ),
    Transaction("delivery", 400, _READ),
    Transaction("stock_level", 400, _READ),
)
NEW_ORDER = 0


@dataclass(frozen=True)
class Consistency:
    name: str
    passed: bool
    detail: str


def create_schema(conn: Any, warehouses: int) -> None:
    cursor = conn.cursor()
    cursor.execute(DROP_ORDERS)
    cursor.execute(CREATE_ORDERS)


def create_functions(conn: Any) -> None:
    return None


def load(connect: Callable[[], Any], warehouses: int, parallel: int) -> dict[str, float]:
    started = time.monotonic()
    conn = connect()
    try:
        create_schema(conn, warehouses)
    finally:
        conn.close()
    return {"schema": time.monotonic() - started}


def new_orders(conn: Any) -> int:
    cursor = conn.cursor()
    cursor.execute(COUNT_ORDERS)
    return int(cursor.fetchone()[0])


def check_consistency(conn: Any) -> list[Consistency]:
    return [Consistency("condition 1", True, "stand-in")]
