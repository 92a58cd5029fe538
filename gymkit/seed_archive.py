"""The novelty archive's seed: the 101 Formulaic Alphas scored on the train window.

Each formula of ``dsl/alpha101.tsv`` (file order) goes through the same layers as an answer
(:mod:`gymkit.scoring`): parsed against the train panel's fields and groups, evaluated on the
train panel, backtested in train mode, and kept when the gate passes (a book that trades at
least the turnover floor and holds a position).  Its bucketed canonical form and daily net
train P&L enter the archive as a *pinned* entry; a form already present is skipped.  On the
default market 98 of the 101 alphas are kept (Alpha#7 trades below the floor, #96 is empty:
its nested 3-day correlations are NaN somewhere in every window, #97 trades 1.7% a day).

Evaluating and backtesting the 101 alphas is most of a cold start, so the seeded archive's
snapshot bytes are looked up, in order:

1. in this process, per (data fingerprint, environment fingerprint);
2. shipped with the package (``gymkit/seed_data/``) for the default market: used when the
   file's *seed key* equals this setup's (:func:`seed_key`: train panel fingerprint, split,
   burn-in, train costs, CPCV, channel parameters, corpus bytes, capacity, judged days and
   :data:`SEED_FORMAT`), and its sha256 checks; regenerate it with
   ``python -m gymkit.seed_archive --regenerate`` (a test checks the key and, slowly, that
   regenerating gives the same bytes);
3. on disk for any other market: ``<gymkit cache>/seed/<key>.gkseed`` (the cache root of
   :mod:`gymkit.worlds_cache`), keyed by the seed key *and* the sources of ``dsl/``,
   ``verifiers/`` and the scoring modules plus the gymkit version, so an upgrade never reads
   another version's P&L; written atomically, ignored when unreadable or corrupt;
4. else built, then written to (3) (best effort: a read-only home just skips it).

``GYMKIT_SEED_ARCHIVE=evaluate`` skips (2) and (3) (benchmarks, tests).  Every environment
restores its own private copy, so commits to one environment never reach another or a cache.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import json
import os
import sys
import threading
from importlib import resources
from pathlib import Path

from gymkit.dsl.cache import EvalCache
from gymkit.verifiers.archive import NoveltyArchive

from .scoring import ScoringSetup, gate_book, gate_text, run_oracle

__all__ = ["SEED_FORMAT", "alpha101_formulas", "clear_seed_cache", "disk_path", "read_seed_file",
           "regenerate", "seed_key", "seeded_archive", "shipped_path", "write_seed_file"]

#: Bump when what a seed entry means changes without its inputs changing (e.g. a new P&L rule).
SEED_FORMAT = "gymkit-seed-v1"
_MAGIC = b"GKSEED1\n"
SHIPPED_NAME = "alpha101_us46-default.gkseed"
#: Modules (besides dsl/ and verifiers/) whose code decides the seed's P&L.
_CODE = ("scoring.py", "seed_archive.py", "card.py")

_CACHE: dict[tuple[str, str], bytes] = {}
_LOCK = threading.Lock()
_SEED_CACHE_BYTES = 64 * 2**20


def alpha101_formulas() -> list[tuple[str, str]]:
    """Return ``(id, formula)`` of the 101-alpha corpus in file order."""
    text = resources.files("gymkit.dsl").joinpath("alpha101.tsv").read_text(encoding="utf-8")
    rows = csv.DictReader(text.splitlines(), delimiter="\t")
    return [(r["id"], r["formula"]) for r in rows]


def _build(setup: ScoringSetup, seed: str, capacity: int, n_days: int) -> NoveltyArchive:
    archive = NoveltyArchive(n_days, capacity)
    if seed == "none":
        return archive
    # A private evaluator cache: seeding shares sub-trees among the 101 alphas without
    # flooding the scoring cache, and is dropped afterwards.
    local = ScoringSetup(setup.train, setup.split, setup.costs, setup.cpcv, setup.burn_in,
                         setup.params, EvalCache(_SEED_CACHE_BYTES), setup.fields, setup.levels)
    for _, formula in alpha101_formulas():
        if len(archive) >= capacity:
            break
        st = gate_text(f"<alpha>{formula}</alpha>", local)
        run_oracle(st, local)
        gate_book(st, local)
        if st.valid and st.bt is not None and st.canonical is not None:
            archive.add(st.canonical, st.bt.net, pinned=True)
    return archive


def _plain(x: object) -> object:
    """A JSON-able, deterministic description of a config object (dataclass or repr)."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {"type": type(x).__name__, **{f.name: _plain(getattr(x, f.name))
                                             for f in dataclasses.fields(x)}}
    if isinstance(x, tuple | list):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in sorted(x.items())}
    if x is None or isinstance(x, bool | int | float | str):
        return x
    return repr(x)


def seed_key(setup: ScoringSetup, seed: str, capacity: int, n_days: int) -> str:
    """sha256 hex of everything the seed archive's bytes are computed from, except code (module
    doc): two setups with one key seed the same archive under the same code."""
    corpus = resources.files("gymkit.dsl").joinpath("alpha101.tsv").read_bytes()
    s = setup.split
    desc = {
        "format": SEED_FORMAT, "seed": seed, "capacity": int(capacity), "n_days": int(n_days),
        "train": setup.train.fingerprint,
        "split": [str(s.train_start), str(s.train_end), str(s.holdout_start), str(s.holdout_end)],
        "burn_in": int(setup.burn_in), "costs": _plain(setup.costs), "cpcv": _plain(setup.cpcv),
        "params": _plain(setup.params), "fields": list(setup.fields), "levels": list(setup.levels),
        "corpus": hashlib.sha256(corpus).hexdigest(),
    }
    return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()


def _code_digest() -> str:
    from gymkit import __version__

    from .numba_cache import source_digest

    h = hashlib.sha256(f"{__version__}\n{source_digest()}\n".encode())
    here = Path(__file__).resolve().parent
    for name in _CODE:
        h.update(name.encode() + b"\0" + (here / name).read_bytes())
    return h.hexdigest()[:16]


# --------------------------------------------------------------- seed files
def write_seed_file(path: Path, key: str, blob: bytes, note: str = "") -> None:
    """Write ``blob`` (archive snapshot bytes) for ``key`` atomically: magic, one JSON line
    (key, sha256, size, note), then the bytes."""
    meta = {"format": SEED_FORMAT, "key": key, "note": note, "sha256": hashlib.sha256(blob).hexdigest(),
            "size": len(blob)}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(_MAGIC + json.dumps(meta, sort_keys=True).encode() + b"\n" + blob)
    os.replace(tmp, path)


def read_seed_file(data: bytes) -> tuple[dict, bytes]:
    """(meta, snapshot bytes) of a seed file's bytes; ``ValueError`` if foreign, torn or altered."""
    if not data.startswith(_MAGIC):
        raise ValueError("not a gymkit seed file (bad magic)")
    end = data.find(b"\n", len(_MAGIC))
    if end < 0:
        raise ValueError("seed file header is torn")
    try:
        meta = json.loads(data[len(_MAGIC):end])
    except ValueError:
        raise ValueError("seed file header is not JSON") from None
    blob = data[end + 1:]
    if len(blob) != meta.get("size") or hashlib.sha256(blob).hexdigest() != meta.get("sha256"):
        raise ValueError("seed file body does not match its sha256 (torn or altered)")
    return meta, blob


def shipped_path() -> Path:
    """The package's seed file for the default market (module doc)."""
    return Path(str(resources.files("gymkit").joinpath("seed_data", SHIPPED_NAME)))


def disk_path(key: str) -> Path:
    """Where the seed of ``key`` is cached on disk under the current code (module doc)."""
    from .worlds_cache import cache_root

    return cache_root() / "seed" / f"{hashlib.sha256(f'{key}:{_code_digest()}'.encode()).hexdigest()[:24]}.gkseed"


def _lookup(key: str) -> bytes | None:
    if os.environ.get("GYMKIT_SEED_ARCHIVE", "").strip() == "evaluate":
        return None
    for path in (shipped_path(), None):
        try:
            path = path or disk_path(key)
            meta, blob = read_seed_file(path.read_bytes())
        except (OSError, ValueError):
            continue
        if meta.get("key") == key:
            return blob
    return None


def _store(key: str, blob: bytes) -> None:
    if os.environ.get("GYMKIT_SEED_ARCHIVE", "").strip() == "evaluate":
        return
    try:
        write_seed_file(disk_path(key), key, blob, "cache: the 101 alphas' train P&L")
    except OSError:
        pass  # no writable cache: the next process evaluates again


def seeded_archive(setup: ScoringSetup, seed: str, capacity: int, n_days: int,
                   data_fingerprint: str, env_fingerprint: str) -> NoveltyArchive:
    """Return a fresh archive seeded from ``seed`` ('alpha101' or 'none'); cached (module doc)."""
    key = (data_fingerprint, env_fingerprint)
    with _LOCK:
        blob = _CACHE.get(key)
    if blob is None and seed != "none":
        skey = seed_key(setup, seed, capacity, n_days)
        blob = _lookup(skey)
        if blob is None:
            blob = _build(setup, seed, capacity, n_days).snapshot()
            _store(skey, blob)
    if blob is None:
        blob = _build(setup, seed, capacity, n_days).snapshot()
    with _LOCK:
        blob = _CACHE.setdefault(key, blob)
    return NoveltyArchive.restore(blob)


def clear_seed_cache() -> None:
    """Forget every seed archive cached in this process (tests)."""
    with _LOCK:
        _CACHE.clear()


def _default_setup() -> tuple[ScoringSetup, str, int, int]:
    import gymkit
    from gymkit.registry import ENVIRONMENTS

    arc = ENVIRONMENTS["us46-default"].archive  # built unseeded: the seed is what we compute
    env = gymkit.make("us46-default", archive={**arc, "seed": "none"})
    return env.setup, arc["seed"], int(arc["capacity"]), env.n_days


def regenerate(path: Path | None = None) -> Path:
    """Evaluate the 101 alphas on the default market and write the shipped seed file (``path``,
    default :func:`shipped_path`); return its path.  Same code and data give the same bytes."""
    setup, seed, capacity, n_days = _default_setup()
    blob = _build(setup, seed, capacity, n_days).snapshot()
    out = path or shipped_path()
    write_seed_file(out, seed_key(setup, seed, capacity, n_days), blob,
                    "us46-default: the 101 alphas' daily net train P&L; "
                    "regenerate: python -m gymkit.seed_archive --regenerate")
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m gymkit.seed_archive --regenerate [--out FILE] | --check``."""
    p = argparse.ArgumentParser(prog="python -m gymkit.seed_archive", description=__doc__.split("\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--regenerate", action="store_true", help="rewrite the shipped seed file")
    g.add_argument("--check", action="store_true", help="exit 1 if the shipped file is stale")
    p.add_argument("--out", type=Path, default=None, help="write here instead of the package")
    args = p.parse_args(argv)
    if args.regenerate:
        print(regenerate(args.out))
        return 0
    setup, seed, capacity, n_days = _default_setup()
    try:
        meta, _ = read_seed_file(shipped_path().read_bytes())
    except (OSError, ValueError) as exc:
        print(f"{shipped_path()}: {exc}", file=sys.stderr)
        return 1
    if meta["key"] != seed_key(setup, seed, capacity, n_days):
        print(f"{shipped_path()}: stale (its seed key differs); run python -m gymkit.seed_archive "
              "--regenerate", file=sys.stderr)
        return 1
    print(f"{shipped_path()}: up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
