"""The loader's statements (TPC-C 4.3.3.1): set-based, one per table and warehouse, each drawing its random
strings from a 10,000-character pool made once per statement (tpcc_pool: random substrings of it are as
random as TPC-C's a-strings need, at a fraction of a per-character draw's cost; sql/schema.py). %s is the warehouse id."""

# TPC-C 2.1.6: C for the last names at load time; the run's (kit.C_LAST_RUN) differs from it by 65..119.
ITEMS_SQL = """
with pool as (select tpcc_pool() as p)
insert into item (i_id, i_im_id, i_name, i_price, i_data)
select i, im_id, name, price, tpcc_original(data)
from (
    select i, tpcc_random(1, 10000) as im_id, tpcc_astring(p, 14, 24) as name, tpcc_random(100, 10000) / 100.0 as price,
        tpcc_astring(p, 26, 50) as data
    from pool, generate_series(1, 100000) i
) drawn
"""

WAREHOUSE_SQL = """
with pool as (select tpcc_pool() as p)
insert into warehouse (w_id, w_name, w_street_1, w_street_2, w_city, w_state, w_zip, w_tax, w_ytd)
select %s, tpcc_astring(p, 6, 10), tpcc_astring(p, 10, 20), tpcc_astring(p, 10, 20), tpcc_astring(p, 10, 20),
    tpcc_astring(p, 2, 2), tpcc_digits(4) || '11111', tpcc_random(0, 2000) / 10000.0, 300000
from pool
"""

DISTRICTS_SQL = """
with pool as (select tpcc_pool() as p)
insert into district (d_id, d_w_id, d_name, d_street_1, d_street_2, d_city, d_state, d_zip, d_tax, d_ytd, d_next_o_id)
select d, %s, tpcc_astring(p, 6, 10), tpcc_astring(p, 10, 20), tpcc_astring(p, 10, 20), tpcc_astring(p, 10, 20),
    tpcc_astring(p, 2, 2), tpcc_digits(4) || '11111', tpcc_random(0, 2000) / 10000.0, 30000, 3001
from pool, generate_series(1, 10) d
"""

# Customers 1..1000 of a district have each last name once; the others draw theirs with NURand(255, 0, 999).
CUSTOMERS_SQL = """
with pool as (select tpcc_pool() as p)
insert into customer (
    c_id, c_d_id, c_w_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since,
    c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_data
)
select c, d, %s, tpcc_astring(p, 8, 16), 'OE',
    tpcc_last_name(case when c <= 1000 then c - 1 else mod((tpcc_random(0, 255) | tpcc_random(0, 999)) + 157, 1000) end),
    tpcc_astring(p, 10, 20), tpcc_astring(p, 10, 20), tpcc_astring(p, 10, 20), tpcc_astring(p, 2, 2),
    tpcc_digits(4) || '11111', tpcc_digits(8) || tpcc_digits(8), now(), case when random() < 0.1 then 'BC' else 'GC' end,
    50000, tpcc_random(0, 5000) / 10000.0, -10, 10, 1, 0, tpcc_astring(p, 300, 500)
from pool, generate_series(1, 10) d, generate_series(1, 3000) c
"""

HISTORY_SQL = """
with pool as (select tpcc_pool() as p)
insert into history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
select c, d, %s, d, %s, now(), 10, tpcc_astring(p, 12, 24)
from pool, generate_series(1, 10) d, generate_series(1, 3000) c
"""

# 3,000 orders a district, their customers a random permutation of 1..3000, and their lines in the same
# statement (the orders' line counts come back from the insert): no scan of a growing orders table.
ORDERS_SQL = """
with pool as (select tpcc_pool() as p),
made as (
    insert into orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
    select o_id, d, %s, c, now(), case when o_id < 2101 then tpcc_random(1, 10) end, tpcc_random(5, 15), 1
    from (
        select d, c, row_number() over (partition by d order by random()) as o_id
        from generate_series(1, 10) d, generate_series(1, 3000) c
    ) permuted
    returning o_id, o_d_id, o_w_id, o_entry_d, o_ol_cnt
)
insert into order_line (
    ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info
)
select o_id, o_d_id, o_w_id, n, tpcc_random(1, 100000), o_w_id, case when o_id < 2101 then o_entry_d end, 5,
    case when o_id < 2101 then 0 else tpcc_random(1, 999999) / 100.0 end, tpcc_astring(p, 24, 24)
from made, pool, generate_series(1, o_ol_cnt) n
"""

# The last 900 orders of each district are not delivered yet.
NEW_ORDERS_SQL = """
insert into new_order (no_o_id, no_d_id, no_w_id)
select o, d, %s from generate_series(1, 10) d, generate_series(2101, 3000) o
"""

STOCK_SQL = """
with pool as (select tpcc_pool() as p)
insert into stock (
    s_i_id, s_w_id, s_quantity, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08,
    s_dist_09, s_dist_10, s_ytd, s_order_cnt, s_remote_cnt, s_data
)
select i, %s, quantity, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, 0, 0, 0, tpcc_original(data)
from (
    select i, tpcc_random(10, 100) as quantity, tpcc_astring(p, 24, 24) as d1, tpcc_astring(p, 24, 24) as d2,
        tpcc_astring(p, 24, 24) as d3, tpcc_astring(p, 24, 24) as d4, tpcc_astring(p, 24, 24) as d5,
        tpcc_astring(p, 24, 24) as d6, tpcc_astring(p, 24, 24) as d7, tpcc_astring(p, 24, 24) as d8,
        tpcc_astring(p, 24, 24) as d9, tpcc_astring(p, 24, 24) as d10, tpcc_astring(p, 26, 50) as data
    from pool, generate_series(1, 100000) i
) drawn
"""
