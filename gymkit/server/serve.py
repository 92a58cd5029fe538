"""``gymkit serve``: build the environment, fork the scoring pool, run uvicorn.

Order matters: the environment is built first (kernels compiled, panels and archive in
memory), then the pool's zygote is forked — before uvicorn starts any thread — so every
worker shares the built environment's pages.  SIGTERM/SIGINT stop accepting connections,
let in-flight requests finish (up to ``graceful_timeout_s``), then stop the pool.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from .settings import ServerSettings

if TYPE_CHECKING:
    import uvicorn

    from .pool import WorkerPool

__all__ = ["build_server", "check_port", "configure_serve", "run_serve", "serve"]

TOKEN_ENV = "GYMKIT_SERVER_TOKEN"


def build_server(settings: ServerSettings, env: Any = None, *,
                 log_level: str = "info") -> tuple[uvicorn.Server, WorkerPool]:
    """Return (uvicorn server, started pool) for ``settings`` (``env`` built if None)."""
    import uvicorn

    from .pool import WorkerPool
    from .protocol import guarded_h11

    create_app = sys.modules[__name__].create_app  # module attribute: tests may wrap it

    if env is None:
        import gymkit

        env = gymkit.make(settings.env_id)
    pool = WorkerPool(env, settings.workers, queue_limit=settings.queue_limit,
                      job_timeout_s=settings.job_timeout_s, archive_db=settings.archive_db,
                      ledger_limit=settings.idempotency_cache).start()
    app = create_app(env, pool, settings)
    config = uvicorn.Config(
        app, host=settings.host, port=settings.port, http=guarded_h11(settings.header_timeout_s),
        lifespan="on", log_level=log_level, access_log=False, server_header=False,
        limit_concurrency=settings.limit_concurrency, timeout_keep_alive=5,
        timeout_graceful_shutdown=int(settings.graceful_timeout_s))
    return uvicorn.Server(config), pool


def __getattr__(name: str) -> Any:
    """``create_app`` imported on first use (keeps ``gymkit serve --help`` free of FastAPI)."""
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def serve(settings: ServerSettings, env: Any = None) -> None:
    """Run the server in the foreground until SIGINT/SIGTERM (graceful); ``env`` as in
    :func:`build_server`."""
    server, pool = build_server(settings, env)
    try:
        server.run()
    finally:
        pool.close()


def configure_serve(p: argparse.ArgumentParser) -> None:
    """Arguments of ``gymkit serve`` (the market's are the shared ``gymkit.cli.options``)."""
    from gymkit.cli.options import add_market_args, positive_int

    d = ServerSettings()
    p.add_argument("--host", default=d.host, help="bind address (default: loopback 127.0.0.1)")
    p.add_argument("--port", type=_port, default=d.port, help=f"port (default {d.port})")
    p.add_argument("--workers", type=positive_int, default=min(d.workers, os.cpu_count() or 1),
                   help="scoring worker processes (default: min(2, cores))")
    p.add_argument("--env", default=d.env_id, help=f"environment id or .toml (default {d.env_id})")
    p.add_argument("--token", default=None,
                   help=f"bearer token required by every route but /health, /ready (default: ${TOKEN_ENV})")
    p.add_argument("--max-body-bytes", type=int, default=d.max_body_bytes)
    p.add_argument("--max-completions", type=int, default=d.max_completions)
    p.add_argument("--max-answer-chars", type=int, default=d.max_answer_chars,
                   help="longest answer a request may carry (beyond: 422 for the request; "
                        f"default {d.max_answer_chars:,}); an answer within it but over gymkit's "
                        "answer limit is scored invalid (answer_too_long), as env.score does")
    p.add_argument("--queue-limit", type=int, default=d.queue_limit,
                   help="scoring jobs admitted at once before 429")
    p.add_argument("--job-timeout", type=float, default=d.job_timeout_s,
                   help="last-resort wall-clock seconds per job before the worker is replaced")
    p.add_argument("--archive-db", default=None, metavar="PATH",
                   help="SQLite file of the novelty archive and the commit ledger, shared by "
                   "every server on this host that names it; ':memory:' keeps nothing "
                   "(default: $GYMKIT_ARCHIVE_DB or ~/.local/state/gymkit/archive.sqlite3)")
    add_market_args(p)


def check_port(host: str, port: int) -> None:
    """A ValueError naming ``--port`` unless a listening socket can be bound at (``host``,
    ``port``) now, as uvicorn binds it (``SO_REUSEADDR``); port 0 (any free one) passes.  Run
    before the environment is built: a port another server held was uvicorn's "address already
    in use" after the whole start-up, and an internal error (exit 3)."""
    import socket

    if port == 0:
        return
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                          flags=socket.AI_PASSIVE)[0]
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(addr)
            sock.listen(1)
    except OSError as exc:
        raise ValueError(f"--port {port}: cannot listen on {host}:{port} "
                         f"({exc.strerror or exc}); another server may hold it: stop it or pick "
                         "another --port (0: any free port)") from None


def run_serve(args: argparse.Namespace) -> int:
    """Handler of ``gymkit serve``: the environment is built first, on ``--market FILE`` when
    given, exactly as ``gymkit score`` builds it."""
    from gymkit.archive_db import default_db_path
    from gymkit.cli.options import make_env

    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    db = args.archive_db if args.archive_db is not None else str(default_db_path())
    settings = ServerSettings(host=args.host, port=args.port, workers=args.workers,
                              env_id=args.env, token=token, max_body_bytes=args.max_body_bytes,
                              max_completions=args.max_completions,
                              max_answer_chars=args.max_answer_chars,
                              queue_limit=args.queue_limit, job_timeout_s=args.job_timeout,
                              archive_db=db)
    check_port(settings.host, settings.port)
    if not settings.loopback and token is None:
        print(f"gymkit serve: warning: binding {args.host} without a token (--token or "
              f"${TOKEN_ENV}): scoring is open to the network, commits are refused (403)",
              file=sys.stderr)
    env = make_env(args, args.env)
    print(f"gymkit serve: {args.env}{' on ' + args.market if args.market else ''} (fingerprint "
          f"{env.fingerprint[:12]}), {settings.workers} scoring worker(s), archive db {db}",
          file=sys.stderr)
    serve(settings, env)
    return 0


def _port(text: str) -> int:
    """A TCP port, 0..65535 (0: any free port); else argparse's one-line error naming it."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is outside 0..65535")
    return port
