"""``python -m privrelease ...``: the ``privrelease`` command (:mod:`privrelease.cli`) without the installed script."""

import sys

from .cli import command

if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess in the tests
    sys.exit(command())
