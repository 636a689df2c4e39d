"""The five TPC-C transactions as PL/pgSQL functions (TPC-C 2.4-2.8), one call per transaction: the
pgbench scripts draw the inputs and call them (pgarena.tools.pgbench.tpcc.kit). Plain CREATE FUNCTION,
no extension, no superuser: the benchmark role creates them on any managed service.

Locks are taken in one order across the transactions, so that concurrent clients wait on each other but
never deadlock: Payment updates its warehouse, then its district, then its customer (its last lock);
New-Order updates its district, then its stock rows in (warehouse, item) order; Delivery takes its
warehouse's districts in order 1..10. A Delivery that loses the oldest new order of a district to another
one takes the next oldest (a later statement sees the other's commit), as TPC-C 2.7.4.2 expects."""

# TPC-C 2.5.2.2 and 2.6.2.2: of the district's customers with the last name (number `p_last`), sorted by first
# name, the one at position ceil(n / 2). Payment and Order-Status find a customer by name with it.
CUSTOMER_BY_NAME_SQL = """
create or replace function tpcc_customer_by_name(p_w_id int, p_d_id int, p_last int) returns int
language sql stable as $$
    select named.c_id from (
        select c.c_id, row_number() over (order by c.c_first) as position, count(*) over () as named
        from customer c
        where c.c_w_id = p_w_id and c.c_d_id = p_d_id and c.c_last = tpcc_last_name(p_last)
    ) named
    where named.position = (named.named + 1) / 2
$$
"""

# TPC-C 2.4.2: the order's lines in the order of their stock rows (the lock order); an unused item id
# (the rollback script's last line) ends the function at once and the script rolls the work back.
NEW_ORDER_SQL = """
create or replace function tpcc_new_order(
    p_w_id int, p_d_id int, p_c_id int, p_items int[], p_supply int[], p_quantities int[]
) returns int language plpgsql as $$
declare
    v_o_id int;
    v_d_tax numeric;
    v_w_tax numeric;
    v_c_discount numeric;
    line record;
    price numeric;
    dist_info char(24);
    total numeric := 0;
begin
    select w_tax into v_w_tax from warehouse where w_id = p_w_id;
    update district set d_next_o_id = d_next_o_id + 1
        where d_w_id = p_w_id and d_id = p_d_id
        returning d_next_o_id - 1, d_tax into v_o_id, v_d_tax;
    select c_discount into v_c_discount from customer where c_w_id = p_w_id and c_d_id = p_d_id and c_id = p_c_id;
    insert into orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
        values (v_o_id, p_d_id, p_w_id, p_c_id, now(), null, cardinality(p_items),
                case when p_supply <@ array[p_w_id] then 1 else 0 end);
    insert into new_order (no_o_id, no_d_id, no_w_id) values (v_o_id, p_d_id, p_w_id);
    for line in
        select n, item, supply, quantity
        from unnest(p_items, p_supply, p_quantities) with ordinality as l(item, supply, quantity, n)
        order by supply, item, n
    loop
        select i_price into price from item where i_id = line.item;
        if not found then
            return null;
        end if;
        update stock set
            s_quantity = case when s_quantity >= line.quantity + 10 then s_quantity - line.quantity
                              else s_quantity - line.quantity + 91 end,
            s_ytd = s_ytd + line.quantity,
            s_order_cnt = s_order_cnt + 1,
            s_remote_cnt = s_remote_cnt + case when line.supply = p_w_id then 0 else 1 end
        where s_w_id = line.supply and s_i_id = line.item
        returning case p_d_id when 1 then s_dist_01 when 2 then s_dist_02 when 3 then s_dist_03 when 4 then s_dist_04
                              when 5 then s_dist_05 when 6 then s_dist_06 when 7 then s_dist_07 when 8 then s_dist_08
                              when 9 then s_dist_09 else s_dist_10 end
        into dist_info;
        insert into order_line (
            ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info
        ) values (v_o_id, p_d_id, p_w_id, line.n, line.item, line.supply, null, line.quantity, line.quantity * price, dist_info);
        total := total + line.quantity * price;
    end loop;
    -- The order's total as the terminal would show it (TPC-C 2.4.2.2).
    total := total * (1 - v_c_discount) * (1 + v_w_tax + v_d_tax);
    return v_o_id;
end
$$
"""

# TPC-C 2.5.2: the customer by id, or (p_by_name = 1) by last name. h_data is the warehouse's and the
# district's names, four spaces apart.
PAYMENT_SQL = """
create or replace function tpcc_payment(
    p_w_id int, p_d_id int, p_c_w_id int, p_c_d_id int, p_c_id int, p_by_name int, p_c_last int, p_cents int
) returns int language plpgsql as $$
declare
    amount numeric(6, 2) := p_cents / 100.0;
    w_name varchar(10);
    d_name varchar(10);
    v_c_id int := p_c_id;
begin
    update warehouse set w_ytd = w_ytd + amount where w_id = p_w_id returning warehouse.w_name into w_name;
    update district set d_ytd = d_ytd + amount where d_w_id = p_w_id and d_id = p_d_id returning district.d_name into d_name;
    if p_by_name = 1 then
        v_c_id := tpcc_customer_by_name(p_c_w_id, p_c_d_id, p_c_last);
    end if;
    update customer set
        c_balance = c_balance - amount,
        c_ytd_payment = c_ytd_payment + amount,
        c_payment_cnt = c_payment_cnt + 1,
        c_data = case when c_credit = 'BC'
                      then left(concat_ws(' ', customer.c_id, c_d_id, c_w_id, p_d_id, p_w_id, amount) || ' ' || c_data, 500)
                      else c_data end
    where c_w_id = p_c_w_id and c_d_id = p_c_d_id and c_id = v_c_id;
    insert into history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
        values (v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, now(), amount, w_name || '    ' || d_name);
    return v_c_id;
end
$$
"""

# TPC-C 2.6.2: the customer (as Payment finds one), their latest order and its lines. Read-only.
ORDER_STATUS_SQL = """
create or replace function tpcc_order_status(p_w_id int, p_d_id int, p_c_id int, p_by_name int, p_c_last int)
returns int language plpgsql as $$
declare
    v_c_id int := p_c_id;
    balance numeric;
    v_o_id int;
    lines int;
begin
    if p_by_name = 1 then
        v_c_id := tpcc_customer_by_name(p_w_id, p_d_id, p_c_last);
    end if;
    select c.c_balance into balance from customer c
        where c.c_w_id = p_w_id and c.c_d_id = p_d_id and c.c_id = v_c_id;
    select o.o_id into v_o_id from orders o
        where o.o_w_id = p_w_id and o.o_d_id = p_d_id and o.o_c_id = v_c_id
        order by o.o_id desc limit 1;
    select count(*) into lines from (
        select ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d from order_line
        where ol_w_id = p_w_id and ol_d_id = p_d_id and ol_o_id = v_o_id
    ) order_lines;
    return lines;
end
$$
"""

# TPC-C 2.7.4: the oldest undelivered order of each district of the warehouse; a district with none is
# skipped. Returns the number of orders delivered.
DELIVERY_SQL = """
create or replace function tpcc_delivery(p_w_id int, p_carrier_id int) returns int
language plpgsql as $$
declare
    v_d_id int;
    v_o_id int;
    v_c_id int;
    total numeric;
    delivered int := 0;
begin
    for v_d_id in 1..10 loop
        loop
            select min(no_o_id) into v_o_id from new_order where no_w_id = p_w_id and no_d_id = v_d_id;
            exit when v_o_id is null;
            delete from new_order where no_w_id = p_w_id and no_d_id = v_d_id and no_o_id = v_o_id;
            exit when found;
        end loop;
        continue when v_o_id is null;
        update orders set o_carrier_id = p_carrier_id
            where o_w_id = p_w_id and o_d_id = v_d_id and o_id = v_o_id
            returning o_c_id into v_c_id;
        with delivered_lines as (
            update order_line set ol_delivery_d = now()
            where ol_w_id = p_w_id and ol_d_id = v_d_id and ol_o_id = v_o_id
            returning ol_amount
        )
        select sum(ol_amount) into total from delivered_lines;
        update customer set c_balance = c_balance + total, c_delivery_cnt = c_delivery_cnt + 1
            where c_w_id = p_w_id and c_d_id = v_d_id and c_id = v_c_id;
        delivered := delivered + 1;
    end loop;
    return delivered;
end
$$
"""

# TPC-C 2.8.2: distinct items of the district's last 20 orders whose stock is below the threshold. Read-only.
STOCK_LEVEL_SQL = """
create or replace function tpcc_stock_level(p_w_id int, p_d_id int, p_threshold int) returns int
language plpgsql as $$
declare
    low int;
begin
    select count(distinct s.s_i_id) into low
    from district d
    join order_line ol on ol.ol_w_id = d.d_w_id and ol.ol_d_id = d.d_id
        and ol.ol_o_id >= d.d_next_o_id - 20 and ol.ol_o_id < d.d_next_o_id
    join stock s on s.s_w_id = ol.ol_w_id and s.s_i_id = ol.ol_i_id
    where d.d_w_id = p_w_id and d.d_id = p_d_id and s.s_quantity < p_threshold;
    return low;
end
$$
"""
