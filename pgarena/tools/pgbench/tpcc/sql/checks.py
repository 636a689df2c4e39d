"""TPC-C's consistency conditions 1-4 (TPC-C 3.3.2.1-3.3.2.4), each one query returning how many
warehouses or districts break it, out of how many, and the first few that do (as text)."""

# 1: a warehouse's year-to-date is the sum of its districts'.
WAREHOUSE_YTD_SQL = """
select count(*) filter (where w.w_ytd is distinct from d.ytd), count(*),
    coalesce(string_agg(format('warehouse %s: w_ytd %s, sum(d_ytd) %s', w.w_id, w.w_ytd, d.ytd), '; ' order by w.w_id)
        filter (where w.w_ytd is distinct from d.ytd), '')
from warehouse w
left join (select d_w_id, sum(d_ytd) as ytd from district group by d_w_id) d on d.d_w_id = w.w_id
"""

# 2: a district's next order id less one is its latest order's and its latest new order's id.
NEXT_ORDER_SQL = """
with checked as (
    select d.d_w_id, d.d_id, d.d_next_o_id - 1 as last, o.last_order, n.last_new_order
    from district d
    left join (select o_w_id, o_d_id, max(o_id) as last_order from orders group by o_w_id, o_d_id) o
        on o.o_w_id = d.d_w_id and o.o_d_id = d.d_id
    left join (select no_w_id, no_d_id, max(no_o_id) as last_new_order from new_order group by no_w_id, no_d_id) n
        on n.no_w_id = d.d_w_id and n.no_d_id = d.d_id
)
select count(*) filter (where last is distinct from last_order or last is distinct from last_new_order), count(*),
    coalesce(string_agg(format('district %s/%s: d_next_o_id - 1 = %s, max(o_id) = %s, max(no_o_id) = %s',
                               d_w_id, d_id, last, last_order, last_new_order), '; ' order by d_w_id, d_id)
        filter (where last is distinct from last_order or last is distinct from last_new_order), '')
from checked
"""

# 3: a district's new orders are contiguous: max - min + 1 of their ids is their count.
NEW_ORDERS_CONTIGUOUS_SQL = """
with checked as (
    select no_w_id, no_d_id, max(no_o_id) - min(no_o_id) + 1 as span, count(*) as rows
    from new_order group by no_w_id, no_d_id
)
select count(*) filter (where span <> rows), count(*),
    coalesce(string_agg(format('district %s/%s: max - min + 1 = %s, rows = %s', no_w_id, no_d_id, span, rows), '; '
                        order by no_w_id, no_d_id) filter (where span <> rows), '')
from checked
"""

# 4: a district's orders' line counts add up to its order lines.
ORDER_LINES_SQL = """
with checked as (
    select coalesce(o.w_id, l.w_id) as w_id, coalesce(o.d_id, l.d_id) as d_id, o.lines as ordered, l.lines as stored
    from (select o_w_id as w_id, o_d_id as d_id, sum(o_ol_cnt) as lines from orders group by o_w_id, o_d_id) o
    full join (select ol_w_id as w_id, ol_d_id as d_id, count(*) as lines from order_line group by ol_w_id, ol_d_id) l
        on l.w_id = o.w_id and l.d_id = o.d_id
)
select count(*) filter (where ordered is distinct from stored), count(*),
    coalesce(string_agg(format('district %s/%s: sum(o_ol_cnt) = %s, order lines = %s', w_id, d_id, ordered, stored), '; '
                        order by w_id, d_id) filter (where ordered is distinct from stored), '')
from checked
"""

NEW_ORDERS_COUNT_SQL = "select count(*) from orders"
