"""``python -m openenv_mcp.cli``: the ``openenv-mcp`` command."""

import sys

from openenv_mcp.cli import main

sys.exit(main())
