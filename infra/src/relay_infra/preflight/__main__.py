"""``python -m relay_infra.preflight``: the same as ``relay deploy preflight``."""

import sys

from relay_infra.preflight.cli import main

sys.exit(main())
