"""``python -m jaxrank``: the ``jaxrank`` command (:func:`jaxrank.cli.main`)."""

from __future__ import annotations

import sys

from jaxrank.cli import main

if __name__ == "__main__":  # pragma: no cover - run as a subprocess by tests/cli/test_cli.py
  sys.exit(main())
