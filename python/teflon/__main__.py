"""`python -m teflon <command>`: see teflon.cli."""

from teflon.cli import main

raise SystemExit(main())
