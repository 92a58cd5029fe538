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

FROZEN_ENV_FINGERPRINT = "e5f93acdfdda29c09f5134b468b10c0639b053a321a375db2a5dac5333fa840e"
FROZEN_ARCHIVE_DIGEST = "71fd1660cbb583b882b05d45c6ce5ecf075b3930414c771585219ebca7d13a7c"

#: (answer, card_digest(card), reward, R1 cpcv channel)
PROBES: tuple[tuple[str, str, float, float], ...] = (
    ('<alpha>rank(-ts_sum(returns, 5))</alpha>',
     'e718264cfa67a46e8acae4808c6b5baf59aec1259cb7716b9f775e1e678b95f6',
     0.0, 0.5554242405192389),
    ('<think>volume surprise</think><alpha>rank(ts_std(volume, 20) / ts_mean(volume, 20) * ts_std(returns, 250) / ts_std(returns, 20))</alpha>',
     '5b4040bf75826d05d5d025bd482a3b7e00f38ec9d72c1401fa9e80ecfa6485a3',
     1.9314115588301166, 0.5789793829717969),
    ('<alpha>rank(ts_std(returns, 63))</alpha>',
     '89f5cf30846fe59d47f22429a0117dc6e2df89cf1944249d5e4ab6d17ab2c6af',
     0.0, 0.1337779274175413),
    ('<alpha>rank(ts_mean(close, 250))</alpha>',
     '0ebaaf1e4f6d798d7cfa29a38b6ab1e60a6c074f532d04e552405cdf6b12d0af',
     -2.5, -0.8),
    ('<alpha>rank(clos)</alpha>',
     '24b528bf1b0b0af9ea1642fd640b7765be3cc5264af5d925985718b2ab51ded6',
     -3.0, -0.8),
    ('<alpha>-1 * ts_corr(rank(ts_delta(log(volume), 2)), rank((close - open) / open), 6)</alpha>',
     '222eb82bcfac0b4d2fa4c8565311a3ba704889a82b3fbe259d6eddbe96d52268',
     -1.3139543262249724, -1.166284847935315),
    ('<alpha>rank(ts_ema(returns, 10) - ts_decay_linear(returns, 10)) * sign(ts_skew(returns, 21))</alpha>',
     '57e285d406fe2a7de53cc1afdacbe93f33a87c70dc7c62bcf8f2f89c29ca581f',
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
