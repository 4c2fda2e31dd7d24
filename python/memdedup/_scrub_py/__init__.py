"""The pure-Python mirror of the credential detector (``rust/scrub``), for when the compiled core is
not there (``MEMDEDUP_IMPLEMENTATION=python``).

One file per Rust file, same name: ``catalogue.py`` mirrors ``rust/scrub/catalogue.rs``, ``keys.py``
``keys.rs``, ``values.py`` ``values.rs``, ``extend.py`` ``extend.rs``, ``shapes.py`` ``shapes.rs``,
``scan.py`` ``scan.rs``, ``memory.py`` ``memory.rs`` (``_bytes.py`` holds the byte predicates they
share). The same steps over the same catalogue (``data/secret_rules.toml``), on the
same bytes (UTF-8; lone surrogates as WTF-8), with Python's ``re`` in place of the ``regex`` crate:
spans, rules and kinds are the core's (``tests/test_scrub_parity.py``). Each function names the Rust
function it mirrors; a change to one is a change to both. The policy (placeholders, properties) is
:mod:`memdedup.scrub`'s.
"""

from __future__ import annotations

from memdedup._scrub_py import memory
from memdedup._scrub_py._bytes import PLACEHOLDER_PREFIX
from memdedup._scrub_py.keys import digits_are_secret
from memdedup._scrub_py.scan import PyDetector, to_code_points

__all__ = ["PLACEHOLDER_PREFIX", "PyDetector", "digits_are_secret", "memory", "to_code_points"]
