"""Secret probes: fixed answers with FROZEN expected cards on ``us46-default``.

Each probe's expectation is the sha256 of its card's JSON (every channel, metric,
CPCV slice, factor beta, novelty figure and provenance field, bit for bit) plus two headline
numbers (reward, R1) so that a failure says whether the change is in the low bits or in the
semantics.  The environment fingerprint and the seeded archive digest are frozen too: the
archive holds the daily P&L of 98 of the 101 alphas, so it probes every operator at once.

Changing any of these values requires an explicit version bump of the environment
fingerprint (``gymkit.__version__``, ``CHANNEL_TABLE_VERSION``, ``PROMPT_VERSION`` or the
configuration itself) in the same change, and re-freezing: run
``python tests/leak/test_probes.py`` and paste its output over ``FROZEN_*`` and ``PROBES``.
A change of cards under an unchanged fingerprint is a silent change of semantics: the test
fails and says so.
"""

from __future__ import annotations

import hashlib
import json

FROZEN_ENV_FINGERPRINT = "30ec8d907b8bec5c40b5f31fa715d8efe5c5c9081aaee3c8f1f483a9eb9d9c73"
FROZEN_ARCHIVE_DIGEST = "8dad323beb32e01ef245413a9d799cc8191b45d3c5ed6f16fc405e61484bc213"

#: (answer, card_digest(card), reward, R1 cpcv channel)
PROBES: tuple[tuple[str, str, float, float], ...] = (
    ('<alpha>rank(-ts_sum(returns, 5))</alpha>',
     '82f0f5d7ecf4a7279e189b0958818564f7ca86e662b4813df775e9b11d54208b',
     1.2085037584152454, 0.5554242405192389),
    ('<think>volume surprise</think><alpha>rank(ts_std(volume, 20) / ts_mean(volume, 20) * ts_std(returns, 250) / ts_std(returns, 20))</alpha>',
     '31fc7461b2f12c36c29b93ee8e6b657c6ae2d451547ef60e2a581b1ed767787d',
     1.895209949646007, 0.5789793829717969),
    ('<alpha>rank(ts_std(returns, 63))</alpha>',
     'ddca03f026d6db67625682d8e91ff9eb24d1a49f2d19375f617a509889b17125',
     0.0, 0.1337779274175413),
    ('<alpha>rank(ts_mean(close, 250))</alpha>',
     '21598599019981182aea1420b3cd2d7acea42b83963b3af726c1357a6e64a2a4',
     -2.9000000000000004, -0.8),
    ('<alpha>rank(clos)</alpha>',
     'f24f1e3058101906d38810411ce81d24cb2c53b2d8bb0817c18d075ef2ceec39',
     -2.4000000000000004, -0.8),
    ('<alpha>-1 * ts_corr(rank(ts_delta(log(volume), 2)), rank((close - open) / open), 6)</alpha>',
     '4c8240613523f1ccae7ee3ff0c275b24aba94586eeb8d3e53c35a794c8cb3c18',
     -3.8522202859759105, -1.1663636245661582),
    ('<alpha>rank(ts_ema(returns, 10) - ts_decay_linear(returns, 10)) * sign(ts_skew(returns, 21))</alpha>',
     '01cee67b9bf663b3bf4a508a333dab6f96bc57840d19a065bcbce115e9de7745',
     -2.1717078423282548, -0.6541933126468962),
)


def card_digest(card) -> str:
    """sha256 hex of the card's deterministic JSON without ``notes`` (the human-readable
    explanations of inactive channels, e.g. why stress worlds are not loaded: they describe
    the environment's state, not the answer's score)."""
    d = card.to_dict(timings=False)
    d.pop("notes")
    return hashlib.sha256(json.dumps(d, separators=(",", ":"), allow_nan=False,
                                     ensure_ascii=False).encode()).hexdigest()


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


if __name__ == "__main__":  # print fresh values to re-freeze (after a version bump)
    import gymkit

    e = gymkit.make("us46-default")
    print(f'FROZEN_ENV_FINGERPRINT = "{e.fingerprint}"')
    print(f'FROZEN_ARCHIVE_DIGEST = "{e.archive.digest}"')
    for a, *_ in PROBES:
        c = e.score(a)
        print(f"    ({a!r},\n     {card_digest(c)!r},\n     {c.reward!r}, {c.channels['cpcv']!r}),")
