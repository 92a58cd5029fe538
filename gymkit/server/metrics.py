"""Prometheus text exposition (format 0.0.4), written by hand: counters, gauges, histograms.

Kept dependency-free on purpose (the server needs a handful of series, not a client library).
Label values are escaped; series are emitted in sorted order so a scrape is stable.
The server records: requests by route and status, request latency by route, per-phase
scoring latency from the cards' timings, card and server errors by code, cards by validity,
the share of non-zero GDPO advantages per group, and (at scrape time) queue depth, queue
limit, live workers and worker restarts by reason.
"""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict
from collections.abc import Iterable
from typing import ClassVar

__all__ = ["LATENCY_BUCKETS", "SHARE_BUCKETS", "Metrics"]

#: Upper bounds (seconds) of the latency histograms.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                   5.0, 10.0, 30.0, 120.0)
#: Upper bounds of the share-of-non-zero-advantages histogram.
SHARE_BUCKETS = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)

Labels = tuple[tuple[str, str], ...]


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _fmt_labels(labels: Labels, extra: Iterable[tuple[str, str]] = ()) -> str:
    items = [*labels, *extra]
    if not items:
        return ""
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in items) + "}"


def _num(x: float) -> str:
    return "+Inf" if x == float("inf") else repr(float(x))


class _Histogram:
    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)
        self.total = 0.0
        self.n = 0

    def observe(self, v: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, v)] += 1
        self.total += v
        self.n += 1


class Metrics:
    """A small thread-safe registry (module doc).  ``render(gauges)`` gives the scrape text."""

    _HELP: ClassVar[dict[str, tuple[str, str]]] = {
        "gymkit_requests_total": ("counter", "HTTP requests by route, method and status"),
        "gymkit_request_duration_seconds": ("histogram", "HTTP request latency by route"),
        "gymkit_phase_duration_seconds": ("histogram", "Scoring latency per phase (card timings)"),
        "gymkit_errors_total": ("counter", "Errors by code; kind=card (invalid answers) or server"),
        "gymkit_cards_total": ("counter", "Score cards produced, by validity"),
        "gymkit_advantage_share_nonzero": ("histogram", "Share of non-zero GDPO advantages per group"),
        "gymkit_worker_restarts_total": ("counter", "Workers replaced, by reason"),
        "gymkit_job_duration_seconds": ("histogram", "Pool job time by kind (queue wait + worker)"),
    }

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, dict[Labels, float]] = defaultdict(lambda: defaultdict(float))
        self._hists: dict[str, dict[Labels, _Histogram]] = defaultdict(dict)

    def inc(self, name: str, labels: Labels = (), by: float = 1.0) -> None:
        """Add ``by`` to a counter series."""
        with self._lock:
            self._counters[name][labels] += by

    def observe(self, name: str, value: float, labels: Labels = (),
                buckets: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        """Record one observation in a histogram series."""
        with self._lock:
            h = self._hists[name].get(labels)
            if h is None:
                h = self._hists[name][labels] = _Histogram(buckets)
            h.observe(float(value))

    def request(self, route: str, method: str, status: int, seconds: float) -> None:
        """Record one finished HTTP request."""
        self.inc("gymkit_requests_total", (("route", route), ("method", method), ("status", str(status))))
        self.observe("gymkit_request_duration_seconds", seconds, (("route", route),))

    def server_error(self, code: str) -> None:
        """Count a request the server refused or failed, by error code."""
        self.inc("gymkit_errors_total", (("kind", "server"), ("code", code)))

    def cards(self, entries: Iterable[dict]) -> None:
        """Record the cards of one job: validity, error codes, per-phase timings."""
        for e in entries:
            self.inc("gymkit_cards_total", (("valid", "true" if e["valid"] else "false"),))
            if e["error"] is not None:
                self.inc("gymkit_errors_total", (("kind", "card"), ("code", e["error"])))
            for phase, secs in (e.get("timings") or {}).items():
                if secs is not None:
                    self.observe("gymkit_phase_duration_seconds", secs, (("phase", phase),))

    def share_nonzero(self, share: float) -> None:
        """Record the share of non-zero advantages of one group."""
        self.observe("gymkit_advantage_share_nonzero", share, buckets=SHARE_BUCKETS)

    def render(self, gauges: dict[str, tuple[str, list[tuple[Labels, float]]]]) -> str:
        """Prometheus text of every series plus ``gauges`` (name -> (help, [(labels, value)]))."""
        out: list[str] = []
        with self._lock:
            for name in sorted(set(self._counters) | set(self._hists) | set(self._HELP)):
                kind, text = self._HELP.get(name, ("counter", name))
                out += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
                for labels, v in sorted(self._counters.get(name, {}).items()):
                    out.append(f"{name}{_fmt_labels(labels)} {_num(v)}")
                for labels, h in sorted(self._hists.get(name, {}).items()):
                    cum = 0
                    for ub, c in zip((*h.buckets, float("inf")), h.counts, strict=True):
                        cum += c
                        out.append(f"{name}_bucket{_fmt_labels(labels, [('le', _num(ub))])} {cum}")
                    out.append(f"{name}_sum{_fmt_labels(labels)} {_num(h.total)}")
                    out.append(f"{name}_count{_fmt_labels(labels)} {h.n}")
        for name, (text, series) in sorted(gauges.items()):
            out += [f"# HELP {name} {text}", f"# TYPE {name} gauge"]
            out += [f"{name}{_fmt_labels(labels)} {_num(v)}" for labels, v in series]
        return "\n".join(out) + "\n"
