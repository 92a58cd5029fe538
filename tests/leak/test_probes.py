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

FROZEN_ENV_FINGERPRINT = "da8a68c84ad7e9e2402d96b29d4d3e5f82cbe2d6bcba6bde48d31b391defabb5"
FROZEN_ARCHIVE_DIGEST = "71fd1660cbb583b882b05d45c6ce5ecf075b3930414c771585219ebca7d13a7c"

#: (answer, card_digest(card), reward, R1 cpcv channel)
PROBES: tuple[tuple[str, str, float, float], ...] = (
    ('<alpha>rank(-ts_sum(returns, 5))</alpha>',
     '68c34f961793cafb408911e34bf8a96101469c0134931d986a2855ed641e0a7e',
     0.0, 0.5554242405192389),
    ('<think>volume surprise</think><alpha>rank(ts_std(volume, 20) / ts_mean(volume, 20) * ts_std(returns, 250) / ts_std(returns, 20))</alpha>',
     '1a2b27c87f65bcf027d8fbfb45afc3a8692d17f790faef8a8c2781b7b14cd703',
     1.9314115588301166, 0.5789793829717969),
    ('<alpha>rank(ts_std(returns, 63))</alpha>',
     '41dc4ddad193b5cb4026c9b7dced5af1709441b4492d8a05ef3227485e8e6a1f',
     0.0, 0.1337779274175413),
    ('<alpha>rank(ts_mean(close, 250))</alpha>',
     '5f1f40d517e7d979b87bc22c038cfa18cb311bac5b6dfa59d5b4afea565ddcd5',
     -2.5, -0.8),
    ('<alpha>rank(clos)</alpha>',
     'd45b21bba64491c9c9115f79e4ed84763cee17ab2d22d3223cabda9f6da2b99c',
     -3.0, -0.8),
    ('<alpha>-1 * ts_corr(rank(ts_delta(log(volume), 2)), rank((close - open) / open), 6)</alpha>',
     '6d5d0931872ca4eb45ea9f81a3cd4263054ffd17e5534477897fe1d9759efe2c',
     -1.3139543262249724, -1.166284847935315),
    ('<alpha>rank(ts_ema(returns, 10) - ts_decay_linear(returns, 10)) * sign(ts_skew(returns, 21))</alpha>',
     '29d8a0a5381c03f031f2a9629c2083bf2385a0abb9a9018883849ec34cc52849',
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
