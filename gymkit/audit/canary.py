"""Canaries in private state, and the hygiene of error messages returned to the policy.

``canaries`` (playbook §5.7): a fresh random GUID is planted in private state —

- *holdout data*: an extra stock listed only in the holdout window, whose ticker and group
  labels carry the GUID and whose holdout prices carry a marker number;
- *environment secret*: the configuration's private ``description``;
- *archive*: an archive entry whose form carries the GUID;
- *gold answer*: a reference answer whose reasoning carries the GUID, scored in a group;

then every observation a policy or trainer can see is collected — the prompt and reset info,
step() results, every card's JSON (with timings), error messages, ``repr`` of cards and the
environment, log records at INFO and above, warnings, and server responses when a server
exists (:func:`server_observations`) — and searched for the GUID (whole, and 12-character
pieces of it) and the price marker.  A hit is a leak, except at the locations listed in
:data:`DOCUMENTED_EXPOSURES` (trainer-facing diagnostics by design; each is reported).

``error_hygiene``: seeded fuzz answers (random text, mutated corpus formulas, bad tags,
misspelt names, bad windows, over-limit formulas); each invalid card's error message may
contain only excerpts of the answer's own text, public vocabulary (DSL names and the words of
the verifier's own message templates, read from its source), positions and limits — never a
panel value, ticker, group label, date, file path or internal name.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib
import inspect
import json
import logging
import re
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from gymkit.data.panel import Panel

from .formulas import KNOWN_GOOD, tag
from .result import CheckResult
from .target import AuditTarget

__all__ = [
    "CANARY_KINDS",
    "DOCUMENTED_EXPOSURES",
    "CanaryPlant",
    "check_canaries",
    "check_error_hygiene",
    "collect_observations",
    "fuzz_answers",
    "message_problems",
    "plant_canaries",
    "server_observations",
]

#: Canary kind -> observation paths where it may appear by design (reported, not failed).
#: ``metrics.novelty.nearest`` names the nearest archive entry's canonical form (R8's
#: diagnostic), so an archive entry's form is visible in the card of a close answer.
DOCUMENTED_EXPOSURES: dict[str, tuple[str, ...]] = {
    "archive": ("card.metrics.novelty.nearest",),
}

_PRICE_MARKER = 97531.86420
_MARKER_TEXT = "97531.864"
#: Where a canary is planted: one GUID per private store, so a hit names its source.
CANARY_KINDS = ("holdout", "secret", "archive", "gold")


class CanaryPlant:
    """One random GUID per private store (``CANARY_KINDS``) and the values planted there."""

    def __init__(self) -> None:
        self.guids = {kind: uuid.uuid4().hex for kind in CANARY_KINDS}
        self.ticker = f"ZQ{self.guids['holdout'].upper()}"
        self.label = f"sector {self.guids['holdout']}"
        self.description = f"private environment note {self.guids['secret']}"
        self.archive_form = f"canary_{self.guids['archive']}"
        self.gold = (f"<think>reference solution {self.guids['gold']}</think>"
                     + tag(KNOWN_GOOD[0]))

    def needles(self) -> list[tuple[str, str]]:
        """``(kind, text)`` whose presence in an observation is a leak (case-insensitive):
        each GUID whole and in three 12-character pieces, and the holdout price marker."""
        out = [("holdout", _MARKER_TEXT)]
        for kind, g in self.guids.items():
            out += [(kind, g), (kind, g[:12]), (kind, g[10:22]), (kind, g[-12:])]
        return out

    def hits(self, text: str) -> set[str]:
        """The kinds of canary found in ``text``."""
        low = text.lower()
        return {kind for kind, n in self.needles() if n.lower() in low}


def _holdout_canary_market(market: Panel, holdout: np.ndarray, plant: CanaryPlant) -> Panel:
    t = market.T
    col = np.full((t, 1), np.nan)
    col[holdout] = _PRICE_MARKER

    def widen(a: np.ndarray | None, fill: np.ndarray) -> np.ndarray | None:
        return None if a is None else np.hstack([np.asarray(a), fill])

    vol = np.full((t, 1), np.nan)
    vol[holdout] = 1e6
    label = plant.label
    return Panel(market.dates, [*market.tickers, plant.ticker],
                 widen(market.open, col), widen(market.high, col), widen(market.low, col),
                 widen(market.close, col), widen(market.volume, vol),
                 cap=widen(market.cap, col * 1e6),
                 sector=None if market.sector is None else [*market.sector, label],
                 industry=None if market.industry is None else [*market.industry, label])


def plant_canaries(target: AuditTarget, plant: CanaryPlant) -> Any:
    """Build a canaried environment: holdout-only canary stock, secret description, archive
    entry.  The archive starts empty (seed 'none') so the build is cheap."""
    from gymkit.env import Environment

    hold = target.config.split_obj.holdout_mask(target.market.dates)
    market = _holdout_canary_market(target.market, hold, plant)
    cfg = target.config.replace(description=plant.description, archive={"seed": "none"},
                                market="user")
    env = Environment(cfg, market, split_note=target.env.split_note)
    probe = env.score(tag(KNOWN_GOOD[0]))
    if probe.pnl is not None:
        env.archive.add(plant.archive_form, np.asarray(probe.pnl) * 1.0001)
    return env


def _flatten(prefix: str, x: Any) -> Iterator[tuple[str, str]]:
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _flatten(f"{prefix}.{k}", v)
    elif isinstance(x, list | tuple):
        for v in x:
            yield from _flatten(prefix, v)
    elif x is not None:
        yield prefix, str(x)


def server_present() -> bool:
    """True when the verifier server package ``gymkit.server`` exists."""
    return importlib.util.find_spec("gymkit.server") is not None


def server_observations(env: Any, answers: list[str]) -> list[tuple[str, str]] | None:
    """Responses of the verifier server, run for the canaried ``env``, to ``answers``.

    Starts the real server (uvicorn on 127.0.0.1, an ephemeral port, one worker forked from
    this process after ``env`` was built), sends the routes a trainer fleet uses — info,
    archive, score, score_group, the OpenRLHF route — plus two error responses, and returns
    ``("server.<route>", body)`` pairs.  Loopback only; every wait is bounded.  None when the
    server extra is not installed.
    """
    try:
        import httpx

        from gymkit.server import ServerSettings, build_server
    except ImportError:
        return None
    import socket
    import threading
    import time

    settings = ServerSettings(workers=1, port=0, header_timeout_s=2.0, body_timeout_s=5.0,
                              graceful_timeout_s=10.0)
    server, pool = build_server(settings, env, log_level="warning")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    out: list[tuple[str, str]] = []
    try:
        deadline = time.monotonic() + 60.0
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the verifier server did not start for the canary check")
            time.sleep(0.02)
        requests = [
            ("GET", "/v1/info", None), ("GET", "/v1/archive", None),
            ("POST", "/v1/score", {"completions": answers}),
            ("POST", "/v1/score_group", {"completions": answers}),
            ("POST", "/get_reward", {"query": answers[:1]}),
            ("POST", "/v1/score", {"completions": "not a list"}),
            ("POST", "/v1/score", {"completions": answers, "unknown": 1}),
        ]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60.0) as client:
            for method, route, body in requests:
                r = client.request(method, route, json=body)
                out += _server_response(f"server.{route.strip('/').replace('/', '.')}", r.text)
    finally:
        server.should_exit = True
        thread.join(timeout=30.0)
        pool.close()
        sock.close()
    return out


def _server_response(where: str, text: str) -> list[tuple[str, str]]:
    """A server response as observations: card bodies with the documented-exposure fields
    split out under the same paths as in-process cards (so they are reported, not failed)."""
    try:
        body = json.loads(text)
    except ValueError:
        return [(where, text)]
    out: list[tuple[str, str]] = []
    for entry in body.get("cards", []) if isinstance(body, dict) else []:
        card = entry.get("card") if isinstance(entry, dict) else None
        if isinstance(card, dict) and isinstance(card.get("metrics"), dict):
            nearest = (card["metrics"].get("novelty") or {}).get("nearest")
            if nearest is not None:
                out.append(("card.metrics.novelty.nearest", str(nearest)))
            card["metrics"] = _scrub(card["metrics"])
    return [*out, (where, json.dumps(body))]


def _scrub(metrics: dict[str, Any]) -> dict[str, Any]:
    """``metrics`` without the documented-exposure fields (they are searched on their own)."""
    out = dict(metrics)
    if isinstance(out.get("novelty"), dict):
        out["novelty"] = {k: v for k, v in out["novelty"].items() if k != "nearest"}
    return out


def collect_observations(env: Any, answers: list[str]) -> list[tuple[str, str]]:
    """Every observation of scoring ``answers`` as one group, plus a reset/step episode.

    Returns ``(where, text)`` pairs; card fields are flattened to ``card.<path>``.
    """
    out: list[tuple[str, str]] = []
    obs, info = env.reset(seed=0, options={"brief": "a public brief"})
    out += [("prompt", obs), ("reset.info", json.dumps(info, default=str))]
    for a in answers:
        env.reset(seed=0)
        obs, reward, _, _, info = env.step(a)
        out += [("step.obs", obs), ("step.reward", repr(reward)),
                ("step.info.error", str(info["error"]))]
    cards = env.score_group(answers)
    for c in cards:
        d = c.to_dict(timings=True)
        out += list(_flatten("card", d))
        # the aggregates repeat every field; documented exposures are searched at their path
        scrubbed = _scrub(c.metrics)
        out += [("card.repr", repr(dataclasses.replace(c, metrics=scrubbed))),
                ("card.json", json.dumps({**d, "metrics": _scrub(d["metrics"])}))]
        if c.error is not None:
            out.append(("error.message", c.error.message))
    out.append(("env.repr", repr(env)))
    return out


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.name}: {record.getMessage()}")


@contextlib.contextmanager
def _captured_logs() -> Iterator[tuple[_Capture, list]]:
    root = logging.getLogger()
    handler, level = _Capture(), root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield handler, caught
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def check_canaries(target: AuditTarget) -> CheckResult:
    """No canary planted in private state appears in any observation (module doc)."""
    plant = CanaryPlant()
    with _captured_logs() as (logs, caught):
        env = plant_canaries(target, plant)
        answers = [tag(f) for f in KNOWN_GOOD[:3]] + [
            plant.gold, tag("rank(clos)"), tag("rank(close) - rank(close)"), "no tag",
            tag("group_neutralize(close, sectr)")]
        obs = collect_observations(env, answers)
    obs += [("log", r) for r in logs.records]
    obs += [("warning", str(w.message)) for w in caught]
    server = server_observations(env, answers)
    if server is not None:
        obs += server
    leaks, exposed = [], []
    for where, text in obs:
        for kind in sorted(plant.hits(text)):
            if where in DOCUMENTED_EXPOSURES.get(kind, ()):
                exposed.append(f"{where} (by design: {kind})")
            else:
                leaks.append(f"{kind} canary in {where}: {text[:120]!r}")
    server_note = (f"server: {len(server)} responses searched" if server is not None else
                   "server: present, responses NOT searched (hook "
                   "gymkit.audit.canary.server_observations not wired)" if server_present() else
                   "server: not present (hook gymkit.audit.canary.server_observations)")
    detail = [f"planted: holdout-only stock {plant.ticker[:14]}… with its group labels and "
              f"price marker {_MARKER_TEXT}; config description; archive entry form; gold "
              "answer reasoning",
              server_note, *(f"documented exposure: {e}" for e in sorted(set(exposed)))]
    detail += [f"LEAK {x}" for x in leaks[:10]]
    return CheckResult(
        "canaries", not leaks,
        f"{len(CANARY_KINDS)} canaries ({len(plant.needles())} needles) x {len(obs)} observations "
        f"({len(logs.records)} log records): {len(leaks)} leaks, "
        f"{len(set(exposed))} documented exposure(s)", tuple(detail))


# --------------------------------------------------------------------- error hygiene
#: Substrings that must never reach an error message unless the answer itself contains them.
INTERNALS: tuple[str, ...] = ("/", "\\", ".py", "traceback", "__", "gymkit", "numpy", "numba",
                              "0x", "self.", "exception", "error:", "line ")

_TEMPLATE_MODULES = ("gymkit.dsl.errors", "gymkit.dsl.lexer", "gymkit.dsl.parser",
                     "gymkit.dsl.limits", "gymkit.dsl.extract", "gymkit.dsl.evaluator",
                     "gymkit.scoring", "gymkit.card")
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_NUMBER = re.compile(r"(?<![A-Za-z_0-9.])[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_QUOTED = re.compile(r"'([^']*)'")


def template_words() -> frozenset[str]:
    """Words of the verifier's message templates: string literals (not docstrings) of the
    modules that build error messages, plus the DSL vocabulary."""
    from gymkit.dsl.operators import VOCABULARY

    words: set[str] = {w.lower() for w in VOCABULARY}
    for name in _TEMPLATE_MODULES:
        tree = ast.parse(inspect.getsource(importlib.import_module(name)))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef)
                      and n.body and isinstance(n.body[0], ast.Expr)
                      and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docstrings:
                words.update(w.lower() for w in _WORD.findall(node.value))
    return frozenset(words)


def _printable(text: str) -> str:
    return "".join(ch if " " <= ch <= "~" else "?" for ch in text)


def _unescape(text: str) -> str:
    try:
        return text.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return text


def _answer_numbers(answer: str) -> set[float]:
    out = set()
    for m in _NUMBER.findall(answer.replace("..", " ")):
        try:
            out.add(float(m))
        except ValueError:
            continue
    return out


#: The DSL's punctuation and infix symbols (public syntax a message may quote).
PUBLIC_SYMBOLS = frozenset("( ) , + - * / ^ < <= > >= == != && || ? : .".split())
#: Public tag syntax the prompt itself shows; stripped before the internals check.
PUBLIC_TAGS = ("<alpha>", "</alpha>", "<think>", "</think>")


def message_problems(message: str, answer: str, words: frozenset[str], *,
                     allowed_numbers: frozenset[str] = frozenset(),
                     private: tuple[str, ...] = ()) -> list[str]:
    """Why ``message`` (an error returned for ``answer``) is not hygienic; [] when it is.

    Allowed: quoted excerpts of the answer ('...' found in the answer, possibly escaped),
    the tag syntax, words of ``words``, one-letter words, integers up to
    max(len(answer), 256) (positions, limits), numbers equal to a number written in the
    answer or to a character code of the answer, and ``allowed_numbers``.  Never allowed
    unless the answer contains them: :data:`INTERNALS` and the ``private`` strings (tickers,
    group labels, dates, values), matched as whole words.
    """
    problems = []
    low_answer = _printable(answer).lower()
    raw_low = answer.lower()
    for t in PUBLIC_TAGS:  # the tags are public: '/' of '</alpha>' does not excuse a path
        raw_low = raw_low.replace(t, " ")
    rest = message
    for q in _QUOTED.findall(message):
        core = q[:-1] if q.endswith("…") else q
        public = core in PUBLIC_SYMBOLS or core.lower() in words
        if core and not public and not any(c.lower() in low_answer or c.lower() in raw_low
                                           for c in (core, _unescape(core))):
            problems.append(f"quoted text {q!r} is not from the answer")
        rest = rest.replace(f"'{q}'", " ")
    for t in PUBLIC_TAGS:
        rest = rest.replace(t, " ")
    low = rest.lower()
    for bad in INTERNALS:
        if bad in low and bad not in raw_low:
            problems.append(f"contains {bad!r}")
    for bad in private:
        pattern = rf"(?<![a-z0-9]){re.escape(bad.lower())}(?![a-z0-9])"
        if bad and re.search(pattern, low) and not re.search(pattern, raw_low):
            problems.append(f"contains private text {bad!r}")
    limit = max(len(answer), 256)
    written = _answer_numbers(answer)
    codes = {str(ord(ch)) for ch in answer}
    for num in _NUMBER.findall(rest):
        if num in answer or num in allowed_numbers or num in codes or float(num) in written:
            continue
        if "." not in num and "e" not in num.lower() and int(num) <= limit:
            continue
        problems.append(f"number {num} is neither a position, a limit nor the answer's")
    for w in _WORD.findall(_NUMBER.sub(" ", rest)):
        lw = w.lower()
        if len(lw) > 1 and lw not in words and lw not in raw_low:
            problems.append(f"word {w!r} is neither public vocabulary nor the answer's")
    return problems


def fuzz_answers(rng: np.random.Generator, n: int, fields: list[str]) -> list[str]:
    """Seeded fuzz answers: random text, mutated corpus formulas, bad tags and names."""
    from gymkit.seed_archive import alpha101_formulas

    corpus = [f for _, f in alpha101_formulas()] + list(KNOWN_GOOD)
    alphabet = list("abcdefghijklmnopqrstuvwxyz_0123456789 ()+-*/<>=!?:,.^&|'\"#@$%\\{}[]é€\t\n")
    out = []
    for i in range(n):
        kind = i % 7
        base = corpus[int(rng.integers(len(corpus)))]
        if kind == 0:
            k = int(rng.integers(1, 40))
            out.append(tag("".join(rng.choice(alphabet, k))))
        elif kind == 1:  # character-level mutations of a corpus formula
            s = list(base)
            for _ in range(int(rng.integers(1, 4))):
                j = int(rng.integers(len(s)))
                op = int(rng.integers(3))
                if op == 0:
                    del s[j]
                elif op == 1:
                    s.insert(j, str(rng.choice(alphabet)))
                else:
                    s[j] = str(rng.choice(alphabet))
            out.append(tag("".join(s)))
        elif kind == 2:  # misspelt names
            f = str(rng.choice(fields))
            out.append(tag(base.replace(f, f[:-1] + "x", 1) if f in base else f"rank({f}x)"))
        elif kind == 3:  # windows out of range or non-integer
            d = str(rng.choice(["0", "253", "2.5", "-3", "1e3", "volume", "999999999999"]))
            out.append(tag(f"ts_mean(close, {d})"))
        elif kind == 4:  # tag damage
            out.append(str(rng.choice([base, f"<alpha>{base}", f"<alpha>{base}</alpha>" * 2,
                                       f"<ALPHA>{base}</ALPHA>", f"</alpha>{base}<alpha>"])))
        elif kind == 5:  # over the limits
            depth = int(rng.integers(17, 30))
            out.append(tag("rank(" * depth + "close" + ")" * depth if rng.random() < 0.5
                           else " + ".join(["close"] * int(rng.integers(130, 200)))))
        else:  # unknown operators and levels
            out.append(tag(str(rng.choice([f"foo({base})", "group_neutralize(close, planet)",
                                           "rank(close, 3)", "ts_corr(close, 5)",
                                           "lead(close, 1)", "IndClass.sector",
                                           "rank(ts_mean(close, 250))", "close - close",
                                           "rank(cap)", "log(-close)"]))))
    return out


def check_error_hygiene(target: AuditTarget, n: int = 350, seed: int = 0) -> CheckResult:
    """Error messages carry only the answer's text and public vocabulary (module doc)."""
    env = target.env
    rng = np.random.default_rng(seed)
    answers = fuzz_answers(rng, n, list(env.setup.fields))
    words = template_words()
    m = target.market
    # A ticker or label that is also a public word (ALL, ARE, HAS, KEY, LOW, DAY on a real
    # market) cannot be told apart from the message's own vocabulary: it is not "private".
    private = tuple(t for t in m.tickers if len(t) >= 3 and t.lower() not in words)
    private += tuple(sorted({x for lv in (m.sector, m.industry) if lv for x in lv
                             if len(x) >= 4 and x.lower() not in words}))
    private += (str(m.dates[-1]), str(m.dates[0]), target.config.description)
    floor = format(env.setup.params.min_turnover_floor, "g")
    problems, n_invalid = [], 0
    for a, card in zip(answers, env.score_group(answers), strict=True):
        if card.error is None:
            continue
        n_invalid += 1
        nums = {floor}
        if card.error.code == "turnover_floor" and card.metrics.get("turnover") is not None:
            nums.add(format(card.metrics["turnover"], ".4f"))
        for p in message_problems(card.error.message, a, words,
                                  allowed_numbers=frozenset(nums), private=private):
            problems.append(f"[{card.error.code}] {card.error.message[:100]!r}: {p}")
    return CheckResult(
        "error_hygiene", not problems,
        f"{n} fuzz answers, {n_invalid} errors: {len(problems)} messages with foreign content",
        tuple(problems[:10]))
