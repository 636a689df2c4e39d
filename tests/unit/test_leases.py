import json
import logging
import multiprocessing
import os
import socket
import stat
import subprocess
import time
from functools import partial
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from functions.dependencies import Dependencies
from pgarena.aws.handler_leases import in_place_of_the_table
from pgarena.aws.leases import LeaseStore
from pgarena.aws.settings import ResultsEnv
from pgarena.aws.store import create_results_table
from pgarena.campaign.leases import Request, lease_key, server_key, turn_of
from pgarena.local.leases import FileLeases, LeaseDirError, LocalLeases
from pgarena.local.progress import release_leases
from pgarena.model.lease import Holder, LeaseRecord, ServerIdentity, Waiter
from pgarena.model.matrix import Endpoint
from pgarena.model.process import ProcessIdentity
from pgarena.system.processes import me


@pytest.fixture
def store(aws_credentials):
    with mock_aws():
        client = boto3.client("dynamodb")
        create_results_table(client, "t")
        now = [1000.0]
        yield LeaseStore(client, "t", clock=lambda: now[0]), now


def shared(holder: str, database: str | None = None) -> Request:
    return Request(holder, shared=True, database=database or holder)


def test_two_sharing_campaigns_share_a_server_within_its_capacity(store):
    leases, _ = store
    assert leases.acquire("db:5432", shared("c1/a"), slots=12, capacity=20, ttl_s=60)
    # The second campaign does not fit beside the first
    assert not leases.acquire("db:5432", shared("c2/a"), slots=12, capacity=20, ttl_s=60)
    assert leases.held_by_others("db:5432", "c2/a") == 12
    assert leases.acquire("db:5432", shared("c3/a"), slots=8, capacity=20, ttl_s=60)


def test_release_frees_the_slots(store):
    leases, _ = store
    leases.acquire("db:5432", Request("c1/a"), slots=12, capacity=20, ttl_s=60)
    leases.release("db:5432", "c1/a")
    assert leases.acquire("db:5432", Request("c2/a"), slots=12, capacity=20, ttl_s=60)


def test_expired_leases_do_not_block(store):
    leases, now = store
    leases.acquire("db:5432", Request("c1/a"), slots=12, capacity=20, ttl_s=60)
    now[0] += 61  # the first campaign died without releasing
    assert leases.acquire("db:5432", Request("c2/a"), slots=12, capacity=20, ttl_s=60)


def test_reacquiring_replaces_the_holders_own_slots(store):
    leases, _ = store
    leases.acquire("db:5432", Request("c1/a"), slots=12, capacity=20, ttl_s=60)
    assert leases.acquire("db:5432", Request("c1/a"), slots=18, capacity=20, ttl_s=60)
    assert leases.held_by_others("db:5432", "other") == 18


def test_stale_version_write_is_refused(store):
    # Given two writers that read the same version / When both write / Then only the first wins
    leases, _ = store
    record = leases.read("db:5432")
    assert leases._write("db:5432", record)
    assert not leases._write("db:5432", record)


# --- the file store local runtimes share: the same behaviour, across processes -----------------------


@pytest.fixture
def file_store(tmp_path):
    now = [1000.0]
    yield FileLeases(tmp_path / "leases", clock=lambda: now[0]), now


def test_file_leases_behave_as_the_table_does(file_store):
    # Given the file store / When two campaigns ask for one server / Then the second waits
    leases, now = file_store
    assert leases.acquire("127.0.0.1:5432", Request("c1/a"), slots=12, capacity=20, ttl_s=60)
    assert not leases.acquire("127.0.0.1:5432", Request("c2/a"), slots=2, capacity=20, ttl_s=60)
    assert leases.holders("127.0.0.1:5432") == {"c1/a": 12}
    now[0] += 61  # expired: the first campaign died without releasing
    assert leases.acquire("127.0.0.1:5432", Request("c2/a"), slots=12, capacity=20, ttl_s=60)
    leases.release("127.0.0.1:5432", "c2/a")
    assert leases.holders("127.0.0.1:5432") == {}


def test_file_lease_stale_version_write_is_refused(file_store):
    leases, _ = file_store
    record = leases.read("db:5432")
    assert leases._write("db:5432", record)
    assert not leases._write("db:5432", record)


def _race(directory: str, holder: str, barrier, results) -> None:
    leases = FileLeases(Path(directory))
    barrier.wait()
    results[holder] = leases.acquire("127.0.0.1:5432", Request(holder), slots=12, capacity=20, ttl_s=60)


def test_two_processes_racing_for_the_last_slots_cannot_both_win(tmp_path):
    # Given two processes (two local runtimes) asking for 12 of 20 slots at the same moment
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(2), context.Manager().dict()
    racers = [context.Process(target=_race, args=(str(tmp_path), f"c{i}/a", barrier, results)) for i in (1, 2)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(timeout=30)
    # Then exactly one holds them, and the shared file says so
    assert sorted(results.values()) == [False, True]
    (winner,) = [holder for holder, won in results.items() if won]
    # (as recorded: the racers have exited, and a live read releases the lease of a process that is gone)
    recorded = FileLeases(tmp_path)._read_all("127.0.0.1:5432")
    assert {h.holder: h.slots for h in recorded.holders} == {winner: 12}


def test_the_local_runtime_uses_the_file_store_and_aws_the_table(tmp_path, store):
    # Given a handler's environment
    env = ResultsEnv(RESULTS_BUCKET="b", RESULTS_TABLE="t")
    # When the local runtime has put its file leases in place of the table's (as it does while it runs)
    with in_place_of_the_table(partial(LocalLeases, tmp_path)):
        local = Dependencies(env).leases
    # Then its handlers lease in files (a release also looks in the table), and elsewhere in the table
    assert isinstance(local, LocalLeases) and isinstance(local.table, LeaseStore) and local.directory == tmp_path
    assert isinstance(Dependencies(env).leases, LeaseStore)


def _endpoint(host: str) -> Endpoint:
    return Endpoint(host=host, port=5432, user="bench")


def test_one_server_has_one_lease_however_its_host_is_written(tmp_path):
    # Given one server written as localhost by one campaign and as 127.0.0.1 by another
    leases = FileLeases(tmp_path)
    by_name, by_address = lease_key(_endpoint("localhost")), lease_key(_endpoint("127.0.0.1"))
    # When the first takes most of the budget
    assert leases.acquire(by_name, Request("c1/a"), slots=12, capacity=20, ttl_s=60)
    # Then the second sees it: one lease, not two
    assert by_name == by_address == lease_key(_endpoint("LOCALHOST"))
    assert not leases.acquire(by_address, Request("c2/a"), slots=2, capacity=20, ttl_s=60)
    # And the release, keyed from the endpoint as the acquire was, frees it
    leases.release(lease_key(_endpoint("localhost")), "c1/a")
    assert leases.acquire(by_address, Request("c2/a"), slots=12, capacity=20, ttl_s=60)


def test_a_host_that_does_not_resolve_is_keyed_by_its_lower_cased_name(monkeypatch):
    # Given a resolver that cannot translate the name
    def no_dns(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    # When its lease key is made, then it is the name, lower-cased, and nothing raises
    assert lease_key(_endpoint("DB.Example")) == "db.example:5432"


def test_an_ipv6_address_is_bracketed_in_its_key():
    assert lease_key(_endpoint("::1")) == "[::1]:5432"


def test_a_corrupt_lease_file_is_reported_and_holds_nothing(tmp_path, caplog):
    # Given a lease folder where one server's file is garbage
    leases = FileLeases(tmp_path / "leases")
    corrupt = tmp_path / "leases" / "db_5432.json"
    corrupt.write_text("{not json")
    # When a campaign reads and takes that server's lease, and a crashed one's leases are given back
    with caplog.at_level(logging.WARNING):
        assert leases.holders("db:5432") == {}
        assert leases.acquire("db:5432", Request("c1/a"), slots=2, capacity=20, ttl_s=60)
        release_leases(tmp_path / "leases", "c0")
    # Then nothing fails: the file counts as no holders, and a warning names it
    assert leases.holders("db:5432") == {"c1/a": 2}
    assert str(corrupt) in caplog.text


def test_the_lease_folder_is_created_private(tmp_path):
    FileLeases(tmp_path / "leases")
    assert stat.S_IMODE((tmp_path / "leases").stat().st_mode) == 0o700


def test_a_group_or_world_writable_lease_folder_is_refused(tmp_path):
    # Given a lease folder anyone may write in
    (tmp_path / "leases").mkdir()
    (tmp_path / "leases").chmod(0o777)
    # When leases are kept there, then the folder is refused with the fix
    with pytest.raises(LeaseDirError, match=r"leases.*writable.*chmod 700"):
        FileLeases(tmp_path / "leases")


def test_a_lease_folder_owned_by_another_user_is_refused(tmp_path, monkeypatch):
    # Given a lease folder another user owns
    (tmp_path / "leases").mkdir(mode=0o700)
    monkeypatch.setattr(os, "getuid", lambda: (tmp_path / "leases").stat().st_uid + 1)
    # When leases are kept there, then it is refused, naming the folder and PGARENA_LEASE_DIR
    with pytest.raises(LeaseDirError, match=r"leases.*owned by.*PGARENA_LEASE_DIR"):
        FileLeases(tmp_path / "leases")


def test_a_lock_file_is_never_followed_through_a_symlink(tmp_path):
    # Given a lock file that is a symlink to a file elsewhere
    leases = FileLeases(tmp_path / "leases")
    elsewhere = tmp_path / "elsewhere"
    (tmp_path / "leases" / "db_5432.lock").symlink_to(elsewhere)
    # When the lease is taken, then it fails and the target is never created
    with pytest.raises(OSError):
        leases.acquire("db:5432", Request("c1/a"), slots=2, capacity=20, ttl_s=60)
    assert not elsewhere.exists()


# --- a holder whose coordinator is gone (SIGKILLed before it released) ---------------------------------


def _exited_process() -> subprocess.Popen:
    process = subprocess.Popen(["true"])
    process.wait()
    return process


def test_a_holder_whose_process_is_gone_is_released_with_a_message(tmp_path, caplog):
    # Given a lease of 17 slots recorded by a coordinator that has since died (SIGKILL: no release)
    leases = FileLeases(tmp_path / "leases")
    dead = _exited_process()
    record = Holder(
        holder="dead-campaign-20240101/a",
        slots=17,
        expires_at=time.time() + 900,
        process=ProcessIdentity(pid=dead.pid, host=socket.gethostname(), started="boot:1"),
    )
    assert leases._write("127.0.0.1:5432", LeaseRecord(holders=[record]))
    # When the next campaign asks for the server
    with caplog.at_level(logging.WARNING):
        taken = leases.acquire("127.0.0.1:5432", Request("next/a"), slots=12, capacity=20, ttl_s=60)
    # Then the dead campaign's slots are released, with a message naming it, and the next one fits
    assert taken
    assert leases.holders("127.0.0.1:5432") == {"next/a": 12}
    assert "dead-campaign-20240101" in caplog.text and "is gone" in caplog.text


def test_a_holder_whose_pid_was_reused_is_released(tmp_path):
    # Given a lease recorded for this very pid, but with another start time (the pid reused since)
    leases = FileLeases(tmp_path / "leases")
    reused = me().model_copy(update={"started": "another-boot:42"})
    old = Holder(holder="old/a", slots=17, expires_at=time.time() + 900, process=reused)
    assert leases._write("127.0.0.1:5432", LeaseRecord(holders=[old]))
    # Then it holds nothing
    assert leases.holders("127.0.0.1:5432") == {}


def test_a_live_holder_and_one_on_another_host_keep_their_slots(tmp_path):
    # Given a lease taken by this (running) process and one recorded on another machine
    leases = FileLeases(tmp_path / "leases")
    assert leases.acquire("127.0.0.1:5432", shared("live/a"), slots=5, capacity=20, ttl_s=60)
    elsewhere = ProcessIdentity(pid=2, host="another-host.invalid", started="boot:1")
    record = leases.read("127.0.0.1:5432")
    far = Holder(holder="far/a", slots=3, expires_at=time.time() + 60, process=elsewhere, shared=True)
    assert leases._write("127.0.0.1:5432", record.model_copy(update={"holders": [*record.holders, far]}))
    # Then both still hold theirs: nothing tells that either is gone
    assert leases.holders("127.0.0.1:5432") == {"live/a": 5, "far/a": 3}
    assert leases.read("127.0.0.1:5432").holders[0].process == me()


# --- one campaign at a time, in arrival order (issue 34) -------------------------------------------------


@pytest.fixture(params=["table", "files"])
def any_store(request, aws_credentials, tmp_path):
    """The same rule in both stores: the results table (AWS) and the files local runtimes share."""
    now = [1000.0]
    if request.param == "files":
        yield FileLeases(tmp_path / "leases", clock=lambda: now[0]), now
        return
    with mock_aws():
        client = boto3.client("dynamodb")
        create_results_table(client, "t")
        yield LeaseStore(client, "t", clock=lambda: now[0]), now


def test_a_campaign_holds_the_server_alone_even_when_slots_would_fit(any_store):
    # Given one campaign holding 4 of a server's 20 slots
    leases, _ = any_store
    assert leases.acquire("pg-1", Request("c1/a"), slots=4, capacity=20, ttl_s=60)
    # When another asks for 4 more, then it is refused: it would measure the first one's load
    assert not leases.acquire("pg-1", Request("c2/a"), slots=4, capacity=20, ttl_s=60)
    # And a sharing request cannot be beside an exclusive holder either
    assert not leases.acquire("pg-1", Request("c3/a", shared=True, database="d3"), slots=4, capacity=20, ttl_s=60)
    leases.release("pg-1", "c1/a")
    assert leases.acquire("pg-1", Request("c2/a"), slots=4, capacity=20, ttl_s=60)


def test_waiters_take_the_server_in_arrival_order(any_store):
    # Given a holder and three waiters that joined in the order b, c, d
    leases, now = any_store
    assert leases.acquire("pg-1", Request("a/t"), slots=18, capacity=20, ttl_s=600)
    for name in ("b/t", "c/t", "d/t"):
        leases.join("pg-1", Request(name))
        now[0] += 1
    # Then only the head may take it once it is free, and each one's turn names who is before it
    record = leases.read("pg-1")
    assert [w.holder for w in record.queue] == ["b/t", "c/t", "d/t"]
    assert [h.holder for h in turn_of(record, Request("b/t")).holding] == ["a/t"]
    assert [w.holder for w in turn_of(record, Request("d/t")).ahead] == ["b/t", "c/t"]
    leases.release("pg-1", "a/t")
    assert not leases.acquire("pg-1", Request("c/t"), slots=18, capacity=20, ttl_s=600)
    assert leases.acquire("pg-1", Request("b/t"), slots=18, capacity=20, ttl_s=600)
    leases.release("pg-1", "b/t")
    assert leases.acquire("pg-1", Request("c/t"), slots=18, capacity=20, ttl_s=600)
    assert [w.holder for w in leases.read("pg-1").queue] == ["d/t"]  # the one taken left the queue


def test_a_waiter_keeps_its_place_when_it_renews_and_leaves_when_it_stops(any_store):
    leases, now = any_store
    leases.join("pg-1", Request("b/t"))
    leases.join("pg-1", Request("c/t"))
    # When b renews its place (as a waiting preflight does every poll) it stays first
    now[0] += 40
    leases.join("pg-1", Request("b/t"))
    assert [w.holder for w in leases.read("pg-1").queue] == ["b/t", "c/t"]
    # And c, which stopped renewing (its coordinator died), is gone once its place expires: it blocks no one
    now[0] += 30
    assert [w.holder for w in leases.read("pg-1").queue] == ["b/t"]
    leases.leave("pg-1", "b/t")
    assert leases.read("pg-1").queue == []


def test_sharing_campaigns_count_slots_but_never_share_a_database(any_store):
    leases, _ = any_store
    first = Request("c1/a", shared=True, database="bench", instance="7")
    assert leases.acquire("pg-1", first, slots=6, capacity=20, ttl_s=60)
    # The same database of the same running server: its tables would be initialized under the first
    assert not leases.acquire(
        "pg-1", Request("c2/a", shared=True, database="bench", instance="7"), slots=6, capacity=20, ttl_s=60
    )
    # Another database fits beside it; an exclusive request does not
    assert leases.acquire("pg-1", Request("c2/a", shared=True, database="other", instance="7"), slots=6, capacity=20, ttl_s=60)
    assert not leases.acquire("pg-1", Request("c3/a"), slots=2, capacity=20, ttl_s=60)


def test_a_waiter_whose_process_is_gone_leaves_the_queue(tmp_path):
    # Given a queue whose head was recorded by a coordinator that has since died
    leases = FileLeases(tmp_path / "leases")
    dead = _exited_process()
    ghost = Waiter(
        holder="dead/a",
        since=time.time(),
        expires_at=time.time() + 60,
        process=ProcessIdentity(pid=dead.pid, host=socket.gethostname(), started="boot:1"),
    )
    assert leases._write("pg-1", LeaseRecord(queue=[ghost]))
    # Then the next waiter is first at once, not after the dead one's place expires
    leases.join("pg-1", Request("next/a"))
    assert [w.holder for w in leases.read("pg-1").queue] == ["next/a"]
    assert leases.acquire("pg-1", Request("next/a"), slots=2, capacity=20, ttl_s=60)


def test_a_server_is_keyed_by_its_identity_whatever_address_reached_it():
    # Given one server reached through 127.0.0.1, 127.0.0.2 and ::1
    identity = ServerIdentity(system_identifier="7712893883181999423", started_us=1795798055379911)
    keys = {server_key(identity, _endpoint(host), [host]) for host in ("127.0.0.1", "127.0.0.2", "::1")}
    # Then one key: its system identifier
    assert keys == {"pg-7712893883181999423"}
    # Where the role may not read it, its postmaster's start; where neither, its address
    assert server_key(ServerIdentity(started_us=42), _endpoint("::1"), ["::1"]) == "pg-started-42"
    assert server_key(ServerIdentity(), _endpoint("::1"), ["::1"]) == "[::1]:5432"


def test_a_record_written_before_the_queue_reads_as_holders_and_no_waiters(tmp_path):
    leases = FileLeases(tmp_path / "leases")
    old = {"holders": [{"holder": "c1/a", "slots": 3, "expires_at": time.time() + 60}], "version": 4}
    (tmp_path / "leases" / "pg-1.json").write_text(json.dumps(old))
    record = leases.read("pg-1")
    assert (record.version, [h.holder for h in record.holders], record.queue) == (4, ["c1/a"], [])


def test_a_campaigns_own_targets_measure_together_ahead_of_other_campaigns(any_store):
    # Given campaign c1 holding the server with one target, and campaign c2 waiting for it
    leases, _ = any_store
    assert leases.acquire("pg-1", Request("c1/a", database="a"), slots=6, capacity=20, ttl_s=60)
    leases.join("pg-1", Request("c2/x"))
    # When c1's second target asks (target_concurrency, a consolidation step): it goes ahead, within the slots
    assert turn_of(leases.read("pg-1"), Request("c1/b", database="b")).clear
    assert not leases.acquire("pg-1", Request("c1/b", database="b"), slots=16, capacity=20, ttl_s=60)
    assert leases.acquire("pg-1", Request("c1/b", database="b"), slots=6, capacity=20, ttl_s=60)
    # But never on the database the first one measures: it would initialize its tables under it
    assert not leases.acquire("pg-1", Request("c1/c", database="a"), slots=2, capacity=20, ttl_s=60)
    # And c2 still waits for both
    assert [h.holder for h in turn_of(leases.read("pg-1"), Request("c2/x")).holding] == ["c1/a", "c1/b"]


def test_a_campaign_that_ended_without_its_release_leaves_no_lease_and_no_place_in_a_queue(tmp_path):
    # Given campaign c1 holding one server and waiting for another, and c2 waiting behind it
    leases = FileLeases(tmp_path / "leases")
    assert leases.acquire("pg-1", Request("c1/a"), slots=2, capacity=20, ttl_s=600)
    assert leases.acquire("pg-2", Request("c0/z"), slots=2, capacity=20, ttl_s=600)
    leases.join("pg-2", Request("c1/b"))
    leases.join("pg-2", Request("c2/x"))
    # When c1's leases are given back for it (a crash, a second Ctrl-C)
    release_leases(tmp_path / "leases", "c1")
    # Then it holds nothing and waits nowhere: c2 is next
    assert leases.holders("pg-1") == {}
    assert [w.holder for w in leases.read("pg-2").queue] == ["c2/x"]
