"""Determinism and isolation of research episodes.

* The same episode gives a byte-identical transcript in two fresh processes (different hash
  seeds) and in this one; neither process imports torch.
* Perturbing every holdout price changes no tool output, and the tools' panel has no
  holdout rows.
* None of the leak suite's canaries (holdout-only stock, private description, archive entry)
  appears in the prompt, any tool result or the transcript.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

from gymkit.audit.canary import CanaryPlant, _holdout_canary_market
from gymkit.briefs import generate_briefs
from gymkit.data.panel import Panel
from gymkit.env import Environment
from gymkit.research import ResearchEnv
from gymkit.research.agent import hill_climb

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from gymkit.briefs import generate_briefs
    from gymkit.research import make_research
    from gymkit.research.agent import hill_climb

    renv = make_research("us46-research")
    ep = renv.episode(generate_briefs(4)[1].text)
    ep.call("describe")
    ep.call("compare", formula_a="rank(-ts_sum(returns, 5))", formula_b="rank(ts_delta(volume, 3))")
    hill_climb(ep, np.random.default_rng(7))
    assert "torch" not in sys.modules, "a research episode imported torch"
    sys.stdout.write(ep.transcript_json())
""")


def _episode(renv: ResearchEnv) -> tuple[str, list[str]]:
    ep = renv.episode(generate_briefs(4)[1].text)
    obs = [ep.prompt()]
    obs.append(ep.call("describe").observation)
    obs.append(ep.call("compare", formula_a="rank(-ts_sum(returns, 5))",
                       formula_b="rank(ts_delta(volume, 3))").observation)
    obs.append(hill_climb(ep, np.random.default_rng(7)).observation)
    return ep.transcript_json(), obs


def test_transcript_byte_identical_across_processes(renv) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin",
                                                           "PYTHONHASHSEED": str(seed)})
             for seed in (1, 2)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-2000:]
        outs.append(out)
    here, _ = _episode(renv)
    assert outs[0] == outs[1] == here.encode()
    assert b'"n_trials"' in outs[0] and b"holdout" not in outs[0]


def _perturb_holdout(panel: Panel, mask: np.ndarray, seed: int) -> Panel:
    rng = np.random.default_rng(seed)
    k = np.where(mask[:, None], rng.uniform(0.5, 2.0, size=panel.open.shape), 1.0)
    v = np.where(mask[:, None], rng.uniform(0.1, 10.0, size=panel.open.shape), 1.0)
    return Panel(panel.dates, list(panel.tickers), panel.open * k, panel.high * k, panel.low * k,
                 panel.close * k, panel.volume * v, cap=None if panel.cap is None else panel.cap * k,
                 sector=panel.sector, industry=panel.industry)


def test_holdout_perturbation_changes_no_tool_output(renv) -> None:
    base = renv.env
    mask = base.config.split_obj.holdout_mask(base.market.dates)
    assert mask.any() and renv.train_panel.T == int((~mask).sum())
    assert renv.train_panel.dates[-1] < base.market.dates[mask][0]  # no holdout row at all
    moved = _perturb_holdout(base.market, mask, 11)
    assert moved.fingerprint != base.market.fingerprint
    cfg = base.config.replace(archive={"seed": "none"}, market="user")  # cheap to build
    one, two = Environment(cfg, base.market), Environment(cfg, moved)
    assert one.fingerprint != two.fingerprint
    a, obs_a = _episode(ResearchEnv(one))
    b, obs_b = _episode(ResearchEnv(two))
    assert obs_a == obs_b                                   # every observation, byte for byte
    strip = lambda t: t.split('"turns":', 1)[1]  # noqa: E731  (the header names the env version)
    assert strip(a) == strip(b)


def test_no_canary_in_any_tool_output(renv) -> None:
    plant = CanaryPlant()
    base = renv.env
    mask = base.config.split_obj.holdout_mask(base.market.dates)
    market = _holdout_canary_market(base.market, mask, plant)
    cfg = base.config.replace(description=plant.description, archive={"seed": "none"},
                              market="user")
    env = Environment(cfg, market)
    probe = env.score("<alpha>rank(-ts_sum(returns, 5))</alpha>")
    env.archive.add(plant.archive_form, np.asarray(probe.pnl) * 1.0001)
    text, obs = _episode(ResearchEnv(env))
    ep = ResearchEnv(env).episode(None)
    obs += [ep.step("nonsense " + "x" * 50).observation,
            ep.call("backtest", formula="rank(-ts_sum(returns, 5))").observation,
            ep.call("backtest", formula="rank(cap)").observation,
            ep.submit("rank(close").observation, ep.transcript_json(), text]
    leaks = {kind for o in obs for kind in plant.hits(o)}
    assert leaks == set(), leaks
