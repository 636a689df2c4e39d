"""Container entrypoint of the Fargate worker; the local runtime starts this same module."""

import sys

from pgarena.worker.run import main

if __name__ == "__main__":
    sys.exit(main())
