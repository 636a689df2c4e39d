"""The local runtime's access keys encode its account as AWS's do, so that an emulator reading the account
from the key (LocalStack with PARITY_AWS_ACCESS_KEY_ID) puts the runtime where its state machine's role is."""

import base64

import pytest

from pgarena.local.signing import access_key_id, new_credentials

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def account_of(key: str) -> str:
    """The account an AWS access key id names: characters 4-12 in base32, less an offset, doubled, plus
    the 13th character's half of the alphabet (the decoding LocalStack and AWS's GetAccessKeyInfo share)."""
    number = 2 * (int.from_bytes(base64.b32decode(key[4:12]), "big") - 549_755_813_888)
    return f"{number + (ALPHABET.index(key[12]) >= 16):012}"


@pytest.mark.parametrize("account", ["123456789012", "000000000000", "999999999999", "111111111111"])
def test_a_key_names_its_account(account):
    key = access_key_id(account)
    assert key.startswith("AKIA") and len(key) == 20 and set(key) <= set(ALPHABET)
    assert account_of(key) == account


def test_known_key_of_the_documented_example():
    # LocalStack's documented example: AKIARZPUZDIKGB2VALC4 is 123456789012
    assert account_of("AKIARZPUZDIKGB2VALC4") == "123456789012"
    assert access_key_id("123456789012").startswith("AKIARZPUZDIK")


def test_each_run_gets_its_own_key():
    first, second = new_credentials(), new_credentials()
    assert first.access_key_id != second.access_key_id and first.secret_access_key != second.secret_access_key
    assert account_of(first.access_key_id) == "123456789012"
