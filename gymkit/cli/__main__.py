"""``python -m gymkit.cli ARGS`` runs ``gymkit ARGS``."""

from gymkit.cli.app import main

raise SystemExit(main())
