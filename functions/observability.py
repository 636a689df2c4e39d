"""Logger, Tracer and Metrics, created once for every handler."""

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "pgarena"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace="pgarena", service=SERVICE)
