"""What the CLI's exit codes are made of: usage errors (2), user errors (1), install hints."""

from __future__ import annotations

__all__ = ["INSTALL_HINTS", "USER_ERRORS", "RunStopped", "UsageError", "missing_dependency"]


class UsageError(Exception):
    """Raised by a handler for a bad combination of arguments: exit code 2."""


class RunStopped(Exception):
    """A run stopped from outside gymkit (say, a worker process killed by the out-of-memory
    killer): exit code 1, with what was kept and how to go on in the message."""


#: Exceptions that mean "the user's input is wrong" or "the run was stopped from outside"
#: (exit 1), not "gymkit is broken" (exit 3).
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, KeyError, FileNotFoundError,
                                                IsADirectoryError, NotADirectoryError,
                                                PermissionError, RunStopped)


#: Optional packages a command may need -> the install command named in its error.
INSTALL_HINTS: dict[str, str] = {
    "torch": "pip install torch==2.13.0",
    "transformers": "pip install torch==2.13.0 'gymkit[train]'",
    "fastapi": "pip install 'gymkit[server]'",
    "uvicorn": "pip install 'gymkit[server]'",
    "matplotlib": "pip install 'gymkit[report]'",
    "gymnasium": "pip install 'gymkit[adapters]'",
    "trl": "pip install 'gymkit[adapters]'",
    "datasets": "pip install 'gymkit[adapters]'",
    "verifiers": "pip install 'gymkit[adapters]'",
}


def missing_dependency(exc: ModuleNotFoundError) -> str | None:
    """The one-line message for a missing optional package, or None when it is not one."""
    top = (exc.name or "").split(".")[0]
    hint = INSTALL_HINTS.get(top)
    return None if hint is None else f"this command needs {top}, which is not installed: {hint}"
