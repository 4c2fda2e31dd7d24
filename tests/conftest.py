"""Suite-wide configuration: hypothesis profiles and a header line naming the backend under test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import settings

# ``from strategies import ...`` works whether or not tests/ is a package (rootdir- or package-style imports).
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

# No timing-dependent failures, ever: ``deadline=None`` in every profile. ``CI`` set -> the derandomized
# profile, so a CI run is reproducible; ``HYPOTHESIS_PROFILE`` picks a profile explicitly.
settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
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
        f"hypothesis profile: {_PROFILE}; MEMDEDUP_HYPOTHESIS_SCALE="
        f"{os.environ.get('MEMDEDUP_HYPOTHESIS_SCALE', '1')}",
    ]
