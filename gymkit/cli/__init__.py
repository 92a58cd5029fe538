"""The ``gymkit`` command line: a package with one module per subcommand (``gymkit.cli.<name>``).

Exit codes (every command): 0 ok, 1 user error (bad input, unknown id, missing file, a
missing optional dependency: the message names the install command; a score-file worker killed
from outside), 2 usage error (bad arguments), 3 internal error (a bug: please report it),
130 interrupted, 141 the output pipe closed early (``gymkit score ... | head``: quiet, no
traceback).
Errors print as one line on stderr; ``--debug`` (anywhere on the line) adds the traceback.

Layout: :mod:`.app` holds the table of commands (:data:`COMMANDS`), the parser and the
dispatcher; :mod:`.errors` the exit-code exceptions; :mod:`.options` the options several
commands share (``--market``, ``--split``, ``--ledger``, ...).  Each command module defines
``configure(p)`` and ``run(args)`` and imports heavy libraries inside them, so ``gymkit --help``
and ``--version`` import no command module and a command line imports only its own: numba,
scipy, polars, torch and FastAPI load only when a command needs them.
"""

from .app import COMMANDS, Command, build_parser, main
from .errors import INSTALL_HINTS, USER_ERRORS, UsageError

__all__ = ["COMMANDS", "INSTALL_HINTS", "USER_ERRORS", "Command", "UsageError", "build_parser",
           "main"]
