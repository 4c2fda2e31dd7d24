"""Suite-wide configuration: hypothesis profiles and a header line naming the backend under test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

# ``from strategies import ...`` works whether or not tests/ is a package (rootdir- or package-style imports).
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from strategies import SCALE, n_examples  # noqa: E402  (needs the path above)

# No timing-dependent failures, ever: ``deadline=None`` and no ``too_slow`` health check in any profile
# (how fast a machine draws examples is not a property of the code). Examples per test scale with
# ``MEMDEDUP_HYPOTHESIS_SCALE`` (tests/strategies.py: a quarter of the full count by default, 1 in
# ``make test-full``, 10 in ``make test-deep``).
#   default  random draws (a developer's run);
#   ci       ``CI`` set: derandomized, so a CI run is reproducible;
#   extra    CI's extended step: the remaining examples, from the seed ``--hypothesis-seed`` gives, so they
#            are not the default step's draws again.
# ``HYPOTHESIS_PROFILE`` picks a profile explicitly.
_COMMON = {
    "deadline": None,
    "max_examples": n_examples(100),
    "suppress_health_check": [HealthCheck.too_slow],
}
settings.register_profile("default", **_COMMON)
settings.register_profile("ci", derandomize=True, print_blob=True, **_COMMON)
settings.register_profile("extra", print_blob=True, **_COMMON)
_PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "default")
settings.load_profile(_PROFILE)


def pytest_report_header(config: object) -> list[str]:
    requested = os.environ.get("MEMDEDUP_IMPLEMENTATION", "auto")
    try:
        from memdedup import _backend
    except Exception as exc:  # reported, and the tests that import it fail loudly on their own
        return [f"memdedup backend: UNAVAILABLE ({type(exc).__name__}: {exc}); requested={requested!r}"]
    module = _backend.impl
    where = getattr(module, "__file__", None) or "?"
    return [
        f"memdedup backend: {_backend.IMPLEMENTATION} ({module.__name__} from {where}); "
        f"MEMDEDUP_IMPLEMENTATION={requested!r}",
        f"hypothesis profile: {_PROFILE}; MEMDEDUP_HYPOTHESIS_SCALE={SCALE}",
    ]
