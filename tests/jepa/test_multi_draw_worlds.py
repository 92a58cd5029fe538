"""``gymkit jepa worlds --draws K``: each world drawn K times, judged and scored on all draws.

* The CLI as a user types it, on the embedded market with the shipped checkpoint, ``--draws 2``
  into a temporary folder: every entry records its second draw (seed + i + 10), draw 0's own
  gate is the single-draw manifest's to the bit, the ranking gate is the one on the mean drop,
  and kept ⇔ every gate passes.  ``--draws 1`` writes the shipped manifest byte for byte.
* A kept world with two saved draws (a manifest built here from the shipped files): both load,
  R3 scores both, the environment digest covers both, a tampered draw is refused.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gymkit.jepa.worlds import SHIPPED_DIR, file_sha256, load_stress_worlds, world_draws

GYMKIT = str(Path(sys.executable).with_name("gymkit"))


@pytest.fixture(scope="module")
def two_draws(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("draws2")
    r = subprocess.run([GYMKIT, "jepa", "worlds", "--out", str(out), "--draws", "2", "--quiet"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads((out / "us46_worlds.json").read_text())


@pytest.mark.slow  # one portable `gymkit jepa worlds` of 10 world-draws: ~45 s
def test_two_draws_are_judged_on_their_mean_drop(two_draws, manifest) -> None:
    from gymkit.jepa.generate import ALL_WORLDS

    shipped = {w["name"]: w for w in manifest["worlds"]}
    for i, w in enumerate(two_draws["worlds"]):
        assert w["name"] == ALL_WORLDS[i].name
        assert w["bootstrap_seed"] == manifest["seed"] + i
        assert [d["bootstrap_seed"] for d in w["draws"]] == [manifest["seed"] + i + 10]
        one = shipped[w["name"]]
        assert w["fingerprint"] == one["fingerprint"] and w["shift_gate"] == one["shift_gate"]
        assert w["ranking_gate_per_draw"][0] == one["ranking_gate"]  # draw 0 is the one draw
        assert w["ranking_gate"] != one["ranking_gate"]  # judged on the mean, not draw 0
        assert w["kept"] == (w["shift_gate"]["ok"] and w["ranking_gate"]["ok"])
        assert w["dropped_because"] or w["kept"]
    # the shipped kept worlds pass on their own draw and fail on the mean of two
    # (jepa/README.md "One draw per world")
    for name in ("dispersion", "trend_flip"):
        w = next(x for x in two_draws["worlds"] if x["name"] == name)
        assert w["ranking_gate_per_draw"][0]["ok"] and not w["kept"]


@pytest.mark.slow  # one portable `gymkit jepa worlds`: ~35 s
def test_one_draw_writes_the_shipped_manifest_byte_for_byte(tmp_path: Path) -> None:
    r = subprocess.run([GYMKIT, "jepa", "worlds", "--out", str(tmp_path), "--draws", "1",
                        "--quiet"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    made = sorted(p.name for p in tmp_path.iterdir())
    assert made == sorted(p.name for p in SHIPPED_DIR.glob("us46_*") if p.name != "us46_jepa.npz")
    for name in made:
        assert (tmp_path / name).read_bytes() == (SHIPPED_DIR / name).read_bytes(), name


@pytest.fixture()
def kept_with_two_draws(tmp_path: Path) -> Path:
    """The shipped manifest and worlds, with dispersion given a second saved draw (a copy of
    its file: the loader checks names, hashes and coverage, not how a draw was made)."""
    for p in SHIPPED_DIR.glob("us46_*"):
        shutil.copy(p, tmp_path / p.name)
    man = json.loads((tmp_path / "us46_worlds.json").read_text())
    w = next(x for x in man["worlds"] if x["name"] == "dispersion")
    shutil.copy(tmp_path / w["file"], tmp_path / "us46_world_dispersion_draw1.npz")
    w["draws"] = [{"bootstrap_seed": w["bootstrap_seed"] + 10, "fingerprint": w["fingerprint"],
                   "file": "us46_world_dispersion_draw1.npz",
                   "sha256": file_sha256(tmp_path / "us46_world_dispersion_draw1.npz")}]
    (tmp_path / "us46_worlds.json").write_text(json.dumps(man))
    return tmp_path / "us46_worlds.json"


def test_every_saved_draw_is_loaded_and_scored(kept_with_two_draws, train_panel) -> None:
    import gymkit

    worlds = load_stress_worlds(kept_with_two_draws, train_panel)
    assert [w.name for w in worlds] == ["dispersion", "dispersion@draw1", "trend_flip"]
    man = json.loads(kept_with_two_draws.read_text())
    assert [n for w in man["worlds"] if w["kept"] for n, _ in world_draws(w)] == [
        "dispersion", "dispersion@draw1", "trend_flip"]
    env = gymkit.make("us46-default", stress_worlds=str(kept_with_two_draws))
    base = gymkit.make("us46-default")
    assert env.fingerprint != base.fingerprint  # the digest covers the second draw
    card = env.score("<alpha>rank(-ts_sum(returns, 5))</alpha>")
    assert set(card.metrics["stress"]["world_cpcv"]) == {"dispersion", "dispersion@draw1",
                                                          "trend_flip"}


def test_a_tampered_draw_is_refused(kept_with_two_draws, train_panel) -> None:
    p = kept_with_two_draws.parent / "us46_world_dispersion_draw1.npz"
    p.write_bytes(p.read_bytes() + b"\0")
    with pytest.raises(ValueError, match=r"us46_world_dispersion_draw1\.npz does not match"):
        load_stress_worlds(kept_with_two_draws, train_panel)


def test_draws_out_of_range_is_a_one_line_error(tmp_path: Path) -> None:
    r = subprocess.run([GYMKIT, "jepa", "worlds", "--out", str(tmp_path), "--draws", "11"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    assert "draws must be 1..10, got 11" in r.stderr


def test_check_compares_every_saved_draw(kept_with_two_draws) -> None:
    """``gymkit jepa check``'s comparison names a draw whose regenerated bytes differ."""
    from gymkit.jepa.recheck import compare

    man = json.loads(kept_with_two_draws.read_text())
    figures = {**{k: man["global_gates"][k] for k in ("collapse", "prediction", "decode")},
               "shift_directions": None, "regimes": man["regimes"],
               "shift_response": {w["name"]: w["shift_gate"]["response"] for w in man["worlds"]},
               "worlds": {n: d["sha256"] for w in man["worlds"] if w["kept"]
                          for n, d in world_draws(w)}}
    assert compare(figures, man) == []
    figures["worlds"]["dispersion@draw1"] = "0" * 64
    assert compare(figures, man) == [
        f"world dispersion@draw1: sha256 {'0' * 16} != {man['worlds'][0]['draws'][0]['sha256'][:16]}"]
