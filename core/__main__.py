"""`python -m core` entry point."""

import sys

from core.cli import main

sys.exit(main())
