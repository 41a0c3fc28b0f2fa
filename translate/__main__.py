"""``python -m translate``: see translate/cli.py."""

from translate.cli import main

raise SystemExit(main())
