"""``python -m iokr``: the ``iokr`` command."""

import sys

from .cli.main import main

if __name__ == "__main__":
    sys.exit(main())
