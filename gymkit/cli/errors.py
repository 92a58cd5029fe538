"""What the CLI's exit codes are made of: usage errors (2), user errors (1), install hints."""

from __future__ import annotations

__all__ = ["INSTALL_HINTS", "USER_ERRORS", "UsageError", "missing_dependency"]


class UsageError(Exception):
    """Raised by a handler for a bad combination of arguments: exit code 2."""


#: Exceptions that mean "the user's input is wrong" (exit 1), not "gymkit is broken" (exit 3).
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, KeyError, FileNotFoundError,
                                                IsADirectoryError, NotADirectoryError,
                                                PermissionError)


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
