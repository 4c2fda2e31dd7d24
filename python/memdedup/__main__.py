"""``python -m memdedup``: the ``memdedup`` command."""

from __future__ import annotations

from memdedup.cli import main

raise SystemExit(main())
