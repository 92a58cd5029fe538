"""Secret probes: fixed answers with FROZEN expected cards on ``us46-default``.

Each probe's expectation is the sha256 of its card's JSON (every channel, metric,
CPCV slice, factor beta, novelty figure and provenance field, bit for bit) plus two headline
numbers (reward, R1) so that a failure says whether the change is in the low bits or in the
semantics.  The environment fingerprint and the seeded archive digest are frozen too: the
archive holds the daily P&L of 98 of the 101 alphas, so it probes every operator at once.

Changing any of these values requires an explicit version bump of the environment
fingerprint (``gymkit.__version__``, ``CHANNEL_TABLE_VERSION``, ``PROMPT_VERSION``, the DSL's
operator names or the configuration itself) in the same change, and re-freezing: run
``python tests/leak/test_probes.py`` and paste its output over ``FROZEN_*`` and ``PROBES``.
A change of cards under an unchanged fingerprint is a silent change of semantics: the test
fails and says so.
"""

from __future__ import annotations

import hashlib
import json

FROZEN_ENV_FINGERPRINT = "72b145c85e8d8a85ac716a0071e0fc1ca61cb532a8a4851f61c31a173dbe7c42"
FROZEN_ARCHIVE_DIGEST = "71fd1660cbb583b882b05d45c6ce5ecf075b3930414c771585219ebca7d13a7c"

#: (answer, card_digest(card), reward, R1 cpcv channel)
PROBES: tuple[tuple[str, str, float, float], ...] = (
    ('<alpha>rank(-ts_sum(returns, 5))</alpha>',
     '96a12f9adff1c915300e309e7aeb340bc23e672c9189a1ff2bb08f1df3c9f0d0',
     0.0, 0.5554242405192389),
    ('<think>volume surprise</think><alpha>rank(ts_std(volume, 20) / ts_mean(volume, 20) * ts_std(returns, 250) / ts_std(returns, 20))</alpha>',
     '562219e1c335ee05660326d94f0a684ecfbbe756efb5463b9d4fefc3cccd7687',
     1.9314115588301166, 0.5789793829717969),
    ('<alpha>rank(ts_std(returns, 63))</alpha>',
     'b2d20592e3abc109bfc969b65c87e1f3de30ef9cf4fb9d5d093be037080e353c',
     0.0, 0.1337779274175413),
    ('<alpha>rank(ts_mean(close, 250))</alpha>',
     '6a21f316ab4651c29af26080f78c4fc36cc12fc78e6eade5fc14781a1632e005',
     -2.5, -0.8),
    ('<alpha>rank(clos)</alpha>',
     'bd00e830b5f8c7b2e193b983cc98a5733832e5a3acaf507034a9f054f9bcc9f7',
     -3.0, -0.8),
    ('<alpha>-1 * ts_corr(rank(ts_delta(log(volume), 2)), rank((close - open) / open), 6)</alpha>',
     '4c8bf0d7a57ed2a87fe19c2b5a84e475aa81a25a36f1a24d62ac53c81216d711',
     -1.3139543262249724, -1.166284847935315),
    ('<alpha>rank(ts_ema(returns, 10) - ts_decay_linear(returns, 10)) * sign(ts_skew(returns, 21))</alpha>',
     '7f07024705dedb2f9678f027417aef10209a4f457c7cc82251d344661249b3f6',
     -1.042476822369772, -0.6541933126468962),
)


def card_digest(card) -> str:
    """sha256 hex of the card's deterministic JSON without ``notes`` (the human-readable
    explanations of inactive channels, e.g. why stress worlds are not loaded: they describe
    the environment's state, not the answer's score)."""
    d = card.to_dict(timings=False)
    d.pop("notes")
    return hashlib.sha256(json.dumps(d, separators=(",", ":"), allow_nan=False,
                                     ensure_ascii=False).encode()).hexdigest()


def digests(env) -> dict:
    """The environment fingerprint, seeded archive digest and every probe's card digest."""
    return {"fingerprint": env.fingerprint, "archive": env.archive.digest,
            "cards": [card_digest(env.score(answer)) for answer, *_ in PROBES]}


def probe_mismatches(env) -> list[str]:
    """What differs from the frozen expectations on ``env`` ([] when nothing does)."""
    out = []
    if env.fingerprint != FROZEN_ENV_FINGERPRINT:
        out.append(f"environment fingerprint {env.fingerprint[:16]} != frozen "
                   f"{FROZEN_ENV_FINGERPRINT[:16]}: a versioned change — re-freeze the probes")
    if env.archive.digest != FROZEN_ARCHIVE_DIGEST:
        out.append(f"seeded archive digest {env.archive.digest[:16]} != frozen "
                   f"{FROZEN_ARCHIVE_DIGEST[:16]}")
    for answer, digest, reward, cpcv in PROBES:
        card = env.score(answer)
        if card_digest(card) != digest:
            out.append(f"{answer[:60]!r}: card bytes changed (reward {card.reward!r} vs "
                       f"{reward!r}, R1 {card.channels['cpcv']!r} vs {cpcv!r})")
    return out


def test_probe_cards_are_frozen(target) -> None:
    env = target.env
    problems = probe_mismatches(env)
    if env.fingerprint == FROZEN_ENV_FINGERPRINT:
        assert not problems, ("cards changed under an UNCHANGED environment fingerprint — a "
                              f"silent change of semantics: {problems}")
    assert not problems, problems


def test_a_silent_kernel_change_is_caught(monkeypatch, target) -> None:
    """Broken variant: ts_sum silently sums one more day (d + 1), fingerprint untouched.

    (A change in the last bits alone does not move a card: books are built from ranks.)"""
    from gymkit.dsl.kernels import KERNELS
    from gymkit.env import Environment

    real = KERNELS["ts_sum"]
    monkeypatch.setitem(KERNELS, "ts_sum", lambda x, d: real(x, d + 1))
    env = Environment(target.config, target.market, cache=None)  # archive from the seed cache
    assert env.fingerprint == target.env.fingerprint
    problems = probe_mismatches(env)
    assert any(p.startswith("'<alpha>rank(-ts_sum(returns, 5))</alpha>': card bytes changed")
               for p in problems), problems


def test_a_configuration_change_moves_the_fingerprint(target) -> None:
    import gymkit

    env = gymkit.make(target.config.replace(thresholds={"min_turnover_floor": 0.03}),
                      archive={"seed": "none"})
    assert env.fingerprint != FROZEN_ENV_FINGERPRINT
    assert probe_mismatches(env)[0].startswith("environment fingerprint")


def test_a_new_operator_moves_the_fingerprint(target, monkeypatch) -> None:
    """The prompt lists the DSL's operators: a new one changes what the model is told."""
    from gymkit.dsl import operators

    cfg, data = target.config, target.env.data_fingerprint
    before = cfg.fingerprint(data)
    monkeypatch.setitem(operators.OPERATORS, "ts_new_op", operators.OPERATORS["ts_median"])
    assert cfg.fingerprint(data) != before


if __name__ == "__main__":  # print fresh values to re-freeze (after a version bump)
    import gymkit

    e = gymkit.make("us46-default")
    print(f'FROZEN_ENV_FINGERPRINT = "{e.fingerprint}"')
    print(f'FROZEN_ARCHIVE_DIGEST = "{e.archive.digest}"')
    for a, *_ in PROBES:
        c = e.score(a)
        print(f"    ({a!r},\n     {card_digest(c)!r},\n     {c.reward!r}, {c.channels['cpcv']!r}),")
