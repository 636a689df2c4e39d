"""Passwords by reference: an environment variable locally, a Secrets Manager secret in AWS."""

from __future__ import annotations

import json
import os

import boto3

from pgarena.model.errors import ErrorKind, failure
from pgarena.model.matrix import Endpoint


def resolve_password(endpoint: Endpoint) -> str | None:
    if endpoint.password_env:
        value = os.environ.get(endpoint.password_env)
        if value is None:
            raise failure(
                ErrorKind.AUTHENTICATION,
                f"environment variable {endpoint.password_env} is not set: export it with the password of {endpoint.user}",
            )
        return value
    if endpoint.password_secret_arn:
        # The secret's own region (its ARN's fourth field), whichever region's site reads it.
        region = endpoint.password_secret_arn.split(":")[3] or None
        secretsmanager = boto3.client("secretsmanager", region_name=region)
        secret = secretsmanager.get_secret_value(SecretId=endpoint.password_secret_arn)["SecretString"]
        # RDS-managed secrets are JSON with a "password" key; plain strings are accepted too.
        try:
            decoded = json.loads(secret)
        except ValueError:
            return secret
        return decoded["password"] if isinstance(decoded, dict) else secret
    return None
