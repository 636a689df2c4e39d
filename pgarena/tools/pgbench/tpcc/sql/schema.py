"""The nine TPC-C tables (TPC-C 1.3), without keys or indexes: the loader adds them after the rows
(one sorted build each, not a B-tree insert per row), as `pgbench -i` does."""

TABLES = ("warehouse", "district", "customer", "history", "new_order", "orders", "order_line", "item", "stock")

# One simple-protocol batch (no bind parameter): pg8000 sends it as one query, its statements in order.
DROP_TABLES_SQL = (
    "drop table if exists warehouse, district, customer, history, new_order, orders, order_line, item, stock cascade"
)

CREATE_TABLES_SQL = """
create table warehouse (
    w_id int not null, w_name varchar(10), w_street_1 varchar(20), w_street_2 varchar(20), w_city varchar(20),
    w_state char(2), w_zip char(9), w_tax numeric(4, 4), w_ytd numeric(12, 2)
);
create table district (
    d_id smallint not null, d_w_id int not null, d_name varchar(10), d_street_1 varchar(20), d_street_2 varchar(20),
    d_city varchar(20), d_state char(2), d_zip char(9), d_tax numeric(4, 4), d_ytd numeric(12, 2), d_next_o_id int
);
create table customer (
    c_id int not null, c_d_id smallint not null, c_w_id int not null, c_first varchar(16), c_middle char(2),
    c_last varchar(16), c_street_1 varchar(20), c_street_2 varchar(20), c_city varchar(20), c_state char(2),
    c_zip char(9), c_phone char(16), c_since timestamp, c_credit char(2), c_credit_lim numeric(12, 2),
    c_discount numeric(4, 4), c_balance numeric(12, 2), c_ytd_payment numeric(12, 2), c_payment_cnt int,
    c_delivery_cnt int, c_data varchar(500)
);
create table history (
    h_c_id int, h_c_d_id smallint, h_c_w_id int, h_d_id smallint, h_w_id int, h_date timestamp,
    h_amount numeric(6, 2), h_data varchar(24)
);
create table new_order (no_o_id int not null, no_d_id smallint not null, no_w_id int not null);
create table orders (
    o_id int not null, o_d_id smallint not null, o_w_id int not null, o_c_id int, o_entry_d timestamp,
    o_carrier_id smallint, o_ol_cnt smallint, o_all_local smallint
);
create table order_line (
    ol_o_id int not null, ol_d_id smallint not null, ol_w_id int not null, ol_number smallint not null, ol_i_id int,
    ol_supply_w_id int, ol_delivery_d timestamp, ol_quantity smallint, ol_amount numeric(6, 2), ol_dist_info char(24)
);
create table item (i_id int not null, i_im_id int, i_name varchar(24), i_price numeric(5, 2), i_data varchar(50));
create table stock (
    s_i_id int not null, s_w_id int not null, s_quantity smallint, s_dist_01 char(24), s_dist_02 char(24),
    s_dist_03 char(24), s_dist_04 char(24), s_dist_05 char(24), s_dist_06 char(24), s_dist_07 char(24),
    s_dist_08 char(24), s_dist_09 char(24), s_dist_10 char(24), s_ytd int, s_order_cnt smallint,
    s_remote_cnt smallint, s_data varchar(50)
)
"""

# The loader's and the transactions' helpers: SQL functions, which PostgreSQL inlines into the statements
# that call them (tpcc_original only where its argument is a column: it reads it three times). The random
# strings are substrings of a pool of random characters kept as bytea: a text substring counts the
# characters before it (80 us a row in a 10,000-character pool), a bytea substring does not. TPC-C 4.3.2.3: a customer's last name is three syllables, the digits of a number 0..999
# (the scripts draw the number, Payment and Order-Status spell the name).
CREATE_HELPERS_SQL = """
create or replace function tpcc_last_name(n int) returns varchar(16)
language sql immutable parallel safe as $$
    select s[n / 100 + 1] || s[n / 10 % 10 + 1] || s[n % 10 + 1]
    from (select array['BAR', 'OUGHT', 'ABLE', 'PRI', 'PRES', 'ESE', 'ANTI', 'CALLY', 'ATION', 'EING'] as s) syllables
$$;
create or replace function tpcc_random(lo int, hi int) returns int
language sql volatile as $$ select lo + floor(random() * (hi - lo + 1))::int $$;
create or replace function tpcc_pool() returns bytea
language sql volatile as $$
    select convert_to(string_agg(substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', tpcc_random(1, 62), 1), ''), 'UTF8')
    from generate_series(1, 10000)
$$;
create or replace function tpcc_astring(pool bytea, lo int, hi int) returns text
language sql volatile as $$ select convert_from(substr(pool, tpcc_random(1, 9501), tpcc_random(lo, hi)), 'UTF8') $$;
create or replace function tpcc_digits(n int) returns text
language sql volatile as $$ select lpad(tpcc_random(0, (10 ^ n)::int - 1)::text, n, '0') $$;
create or replace function tpcc_original(data text) returns text
language sql volatile as $$
    select case when random() < 0.1 then overlay(data placing 'ORIGINAL' from tpcc_random(1, length(data) - 7)) else data end
$$
"""

# Keys and the two secondary indexes the transactions look up by (a customer by last name, a customer's
# latest order). One batch: PostgreSQL builds each B-tree with its own parallel workers
# (max_parallel_maintenance_workers), which is where a large target's cores help.
CREATE_INDEXES_SQL = """
alter table warehouse add primary key (w_id);
alter table district add primary key (d_w_id, d_id);
alter table customer add primary key (c_w_id, c_d_id, c_id);
create index customer_last_name on customer (c_w_id, c_d_id, c_last, c_first);
alter table new_order add primary key (no_w_id, no_d_id, no_o_id);
alter table orders add primary key (o_w_id, o_d_id, o_id);
create index orders_customer on orders (o_w_id, o_d_id, o_c_id, o_id);
alter table order_line add primary key (ol_w_id, ol_d_id, ol_o_id, ol_number);
alter table item add primary key (i_id);
alter table stock add primary key (s_w_id, s_i_id)
"""

# After the load: statistics for the planner and the visibility map set, so the first minutes of a run
# do not pay for hint bits and a cold planner (what `pgbench -i`'s vacuum step does). Outside any
# transaction: the caller's connection is in autocommit.
VACUUM_SQL = "vacuum (analyze) warehouse, district, customer, history, new_order, orders, order_line, item, stock"
