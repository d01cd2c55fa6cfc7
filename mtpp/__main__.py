"""``python -m mtpp``: the same as the ``mtpp`` command."""

import sys

from mtpp.cli.main import main

sys.exit(main())
