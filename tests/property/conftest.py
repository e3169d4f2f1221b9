"""Hypothesis settings for the property tests: deterministic, no deadline, no database.

``derandomize=True`` makes every run try the same examples (no flakes, CI and laptops
agree); ``database=None`` keeps no example database (hypothesis still caches Unicode
tables in ``.hypothesis/``, which git ignores). The number of examples per test is set
where each test is (``examples(n)``), sized to keep the whole directory to a minute.

To hunt for bugs, ``PROPERTY_SCALE=20 pytest tests/property`` runs twenty times as many
examples, drawn at random (a failure prints the example; fix it and add it as a test).
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

from property.strategies import SCALE

settings.register_profile(
    "policy-scheduler",
    derandomize=SCALE == 1,
    deadline=None,
    database=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("policy-scheduler")
