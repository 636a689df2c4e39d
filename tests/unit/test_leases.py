import boto3
import pytest
from moto import mock_aws

from pgarena.aws.leases import LeaseStore
from pgarena.aws.store import create_results_table


@pytest.fixture
def store(aws_credentials):
    with mock_aws():
        client = boto3.client("dynamodb")
        create_results_table(client, "t")
        now = [1000.0]
        yield LeaseStore(client, "t", clock=lambda: now[0]), now


def test_two_campaigns_share_a_server_within_its_capacity(store):
    leases, _ = store
    assert leases.acquire("db:5432", "c1/a", slots=12, capacity=20, ttl_s=60)
    # The second campaign does not fit beside the first
    assert not leases.acquire("db:5432", "c2/a", slots=12, capacity=20, ttl_s=60)
    assert leases.held_by_others("db:5432", "c2/a") == 12


def test_release_frees_the_slots(store):
    leases, _ = store
    leases.acquire("db:5432", "c1/a", slots=12, capacity=20, ttl_s=60)
    leases.release("db:5432", "c1/a")
    assert leases.acquire("db:5432", "c2/a", slots=12, capacity=20, ttl_s=60)


def test_expired_leases_do_not_block(store):
    leases, now = store
    leases.acquire("db:5432", "c1/a", slots=12, capacity=20, ttl_s=60)
    now[0] += 61  # the first campaign died without releasing
    assert leases.acquire("db:5432", "c2/a", slots=12, capacity=20, ttl_s=60)


def test_reacquiring_replaces_the_holders_own_slots(store):
    leases, _ = store
    leases.acquire("db:5432", "c1/a", slots=12, capacity=20, ttl_s=60)
    assert leases.acquire("db:5432", "c1/a", slots=18, capacity=20, ttl_s=60)
    assert leases.held_by_others("db:5432", "other") == 18


def test_stale_version_write_is_refused(store):
    # Given two writers that read the same version / When both write / Then only the first wins
    leases, _ = store
    holders, version = leases.read("db:5432")
    assert leases._write("db:5432", holders, version)
    assert not leases._write("db:5432", holders, version)
