"""pgarena: a serverless, distributed benchmark coordinator for PostgreSQL services."""

__version__ = "0.1.0"
