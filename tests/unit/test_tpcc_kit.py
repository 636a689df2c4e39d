"""The TPROC-C kit's scripts and constants, without a server: the mix, the inputs, what a script may do."""

import re

import pytest

from pgarena.tools.pgbench.tpcc import kit
from pgarena.tools.pgbench.tpcc.sql.load import CUSTOMERS_SQL

SCRIPTS = {t.name: t.script for t in kit.TRANSACTIONS}


def test_the_six_weights_are_tpcc_mix_and_sum_to_10000():
    # TPC-C's minimum mix, New-Order's 1% rollbacks a script of their own
    weights = {t.name: t.weight for t in kit.TRANSACTIONS}
    assert sum(weights.values()) == 10_000
    assert weights == {
        "new_order": 4455,
        "new_order_rollback": 45,
        "payment": 4300,
        "order_status": 400,
        "delivery": 400,
        "stock_level": 400,
    }
    assert weights["new_order_rollback"] * 100 == weights["new_order"] + weights["new_order_rollback"]


def test_the_new_order_script_number_is_the_committed_new_orders():
    assert kit.TRANSACTIONS[kit.NEW_ORDER].name == "new_order"


@pytest.mark.parametrize("name", SCRIPTS)
def test_no_script_runs_a_program(name):
    # A script reaching the shell would run a program on the worker: none does
    assert not re.search(r"^\s*\\(shell|setshell)\b", SCRIPTS[name], re.MULTILINE)


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_variable_a_script_uses_is_set_before_it(name):
    # Given a script's lines, in order
    defined = {"scale"}  # pgbench's own (--scale)
    for line in SCRIPTS[name].splitlines():
        used = set(re.findall(r"(?<!:):([a-z_][a-z0-9_]*)", line))
        # Then each line uses only variables that earlier lines set
        assert used <= defined, f"{name}: {line!r} uses {used - defined}"
        if match := re.match(r"\\set (\w+) ", line):
            defined.add(match.group(1))


@pytest.mark.parametrize("name", SCRIPTS)
def test_each_script_calls_its_function_once_and_only_the_rollback_rolls_back(name):
    script = SCRIPTS[name]
    function = "tpcc_new_order" if name.startswith("new_order") else f"tpcc_{name}"
    assert script.count("select ") == 1 and f"select {function}(" in script
    assert ("rollback;" in script) == (name == "new_order_rollback")


def test_the_rollback_script_asks_for_an_unused_item_last():
    assert f"|| {kit.UNUSED_ITEM_ID}" in SCRIPTS["new_order_rollback"]
    assert str(kit.UNUSED_ITEM_ID) not in SCRIPTS["new_order"]


def test_new_order_draws_items_by_nurand_and_one_percent_remote_supply():
    lines = SCRIPTS["new_order"].splitlines()
    items = [line for line in lines if re.match(r"\\set i\d+ ", line)]
    supplies = [line for line in lines if re.match(r"\\set s\d+ ", line)]
    assert len(items) == len(supplies) == kit.MAX_ORDER_LINES
    assert all(f"((random(0, 8191) | random(1, 100000)) + {kit.C_ITEM_ID}) % 100000 + 1" in line for line in items)
    assert all("random(1, 100) = 1" in line for line in supplies)


def test_payment_is_remote_15_percent_with_several_warehouses_and_by_name_60_percent():
    script = SCRIPTS["payment"]
    assert "\\set remote case when :scale > 1 and random(1, 100) <= 15 then 1 else 0 end" in script
    assert "\\set by_name case when random(1, 100) <= 60 then 1 else 0 end" in script
    assert "\\set by_name case when random(1, 100) <= 60 then 1 else 0 end" in SCRIPTS["order_status"]


def test_the_run_last_name_constant_differs_from_the_load_one_as_tpcc_requires():
    # TPC-C 2.1.6.1: |C_run - C_load| in 65..119, and neither 96 nor 112
    assert f"+ {kit.C_LAST_LOAD}, 1000)" in CUSTOMERS_SQL
    delta = abs(kit.C_LAST_RUN - kit.C_LAST_LOAD)
    assert 65 <= delta <= 119 and delta not in (96, 112)


class FailingWarehouse:
    """A connection whose first statement fails (a server out of disk): records which warehouses began."""

    autocommit = False

    def __init__(self, begun):
        self.begun = begun

    def cursor(self):
        return self

    def execute(self, statement, args=()):
        self.begun.append(args[0])
        raise RuntimeError("could not extend file: No space left on device")

    def close(self):
        pass


def test_a_failed_warehouse_stops_the_load_before_the_next_ones():
    # Given 6 warehouses loaded one at a time, where every warehouse's load fails
    begun = []
    # When the first one fails
    with pytest.raises(RuntimeError, match="No space left"):
        kit._load_warehouses(lambda: FailingWarehouse(begun), warehouses=6, parallel=1)
    # Then the error is the load's, and the warehouses not started yet never start
    assert begun == [1]
