"""Hypothesis settings for the hostile-input suite: modest in CI, longer on demand.

``SESSIOND_FUZZ_SCALE`` multiplies every example count (default 1; ``SESSIOND_FUZZ_SCALE=50``
for a long run, see docs/security.md). Deadlines are off: the machine running CI is shared and
slow, and a hang is caught by the explicit timeouts in the tests, not by hypothesis.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

SCALE = max(1, int(os.environ.get("SESSIOND_FUZZ_SCALE", "1") or "1"))


def fuzz(examples: int) -> settings:
    """Settings for one property: ``examples`` times the scale, no deadline, no flakiness checks
    that slow tests (large inputs and the daemon fixture) would trip."""
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        derandomize=SCALE == 1 and os.environ.get("SESSIOND_FUZZ_RANDOM") is None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
            HealthCheck.large_base_example,
        ],
        database=None,
    )
