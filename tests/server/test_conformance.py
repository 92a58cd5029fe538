"""The spec and the server agree: schemathesis with its conformance checks, not only "no 5xx".

Checks: status code, content type, response headers and response schema conformance, schema-
violating requests rejected, schema-valid requests accepted.  Bounded: 15 derandomised examples
per operation and mode (``EXAMPLES``).  Two cross-field rules JSON Schema cannot state are documented, and
their operations skip only the "valid request accepted" check: ``/v1/advantages`` (every row of
``channels`` has one length, ``valid`` and ``priorities`` match it) and ``/get_reward``
(``prompts``, when given, has one entry per query).  Routes owned by other modules' routers
(research episodes, NeMo-Gym session/metrics) are fuzzed in their own tests.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable

from .conftest import running_server

schemathesis = pytest.importorskip("schemathesis")
from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_headers_conformance, response_schema_conformance, negative_data_rejection,
          positive_data_acceptance]
CROSS_FIELD = frozenset({"POST /v1/advantages", "POST /get_reward"})
OTHERS = "^/(v1/episodes|seed_session|aggregate_metrics)"
EXAMPLES = 15


def _fuzz(strategy, checks: list, url: str, failures: list[str], cases: list[str]) -> None:
    """Run ``EXAMPLES`` cases of one operation; append each failure's first line."""
    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def run(case) -> None:
        cases.append(case.operation.label)
        try:
            case.call_and_validate(base_url=url, checks=checks, timeout=30)
        except Exception as exc:  # collect, so one run reports every failing operation
            first = str(exc).strip().splitlines()
            failures.append(f"{case.operation.label}: {first[0] if first else type(exc)}")

    try:
        run()
    except Unsatisfiable:  # negative mode on an operation with no inputs: nothing to violate
        pass


@pytest.fixture(scope="module")
def small_server(env):
    with running_server(env, workers=1, max_completions=16, max_answer_chars=2000,
                        max_body_bytes=4 << 20) as s:
        yield s


@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_schemathesis_conformance_finds_no_failure(small_server, mode: str) -> None:
    """Assertion: every generated request's response conforms to the live spec (status code,
    content type, headers, body schema) and the server accepts what the spec admits and
    rejects what it forbids: 0 failures."""
    from schemathesis.generation.modes import GenerationMode

    schema = schemathesis.openapi.from_url(small_server.url + "/openapi.json").exclude(
        path_regex=OTHERS)
    failures: list[str] = []
    cases: list[str] = []
    labels = []
    for result in schema.get_all_operations():
        op = result.ok()
        labels.append(op.label)
        checks = [c for c in CHECKS
                  if not (c is positive_data_acceptance and op.label in CROSS_FIELD)]
        _fuzz(op.as_strategy(generation_mode=GenerationMode(mode)), checks, small_server.url,
              failures, cases)
    assert "POST /v1/score" in labels and "POST /v1/archive/commit" in labels
    ran = {"POST /v1/score", "POST /v1/score_group", "POST /v1/archive/commit", "POST /verify"}
    assert ran <= set(cases) and len(cases) >= 5 * EXAMPLES, len(cases)  # the cases really ran
    assert failures == [], sorted(set(failures))[:10]
