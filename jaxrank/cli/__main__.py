"""``python -m jaxrank.cli``: the ``jaxrank`` command."""

import sys

from jaxrank.cli import main

sys.exit(main())
