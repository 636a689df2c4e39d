"""DynamoDB attribute values from Python values and back: boto3's TypeSerializer and TypeDeserializer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

_SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()


def marshal(values: Mapping[str, object]) -> dict[str, AttributeValueTypeDef]:
    """An item, a key or ExpressionAttributeValues in DynamoDB's typed form: str -> S, int or Decimal -> N
    (the serializer refuses floats: pass a Decimal), set of str -> SS."""
    return {name: _SERIALIZER.serialize(value) for name, value in values.items()}


def unmarshal(item: Mapping[str, AttributeValueTypeDef]) -> dict[str, Any]:
    """An item's attributes as Python values: numbers come back as Decimal, string sets as set."""
    return {name: _DESERIALIZER.deserialize(value) for name, value in item.items()}
