"""Keep credentials out of stored memories: scrub text, drop credential-named properties.

:class:`CredentialScrubber` replaces each credential it recognises with a placeholder that keeps the
kind (``[REDACTED:JWT]``), so a recalled memory still says *that* a key was mentioned and of what kind,
and reports the kinds it redacted. It runs before a record's id is derived and before dedup, so neither
the id hash nor a stored label ever carries the secret.

Detection runs in the Rust core (``rust/scrub``) over a rule catalogue kept as data,
``memdedup/data/secret_rules.toml``: provider token shapes (AWS, GCP, Azure, GitHub, GitLab, OpenAI,
Anthropic, Stripe, Slack, ... and an unknown vendor's prefixed key; 189 rules), private key blocks,
JWTs, URL credentials, connection strings, command-line passwords, values of credential-named keys and
passphrases; docs/scrub.md lists them all.
The core finds spans (linear time: bounded regexes, a keyword prefilter, bounded extenders); this module
keeps the policy: a span becomes ``[REDACTED:KIND]``, a credential-named property is dropped unless its
value is an obvious placeholder, and every key path reported is built from scrubbed key names.

When the compiled extension is not there (``MEMDEDUP_IMPLEMENTATION=python``), the same catalogue runs
on a pure-Python mirror of the core (:mod:`memdedup._scrub_py`) over Python's ``re``: the same
rules, spans and kinds, only slower. Scrubbing is never skipped.

Key names are judged by their words (``snake_case``, ``kebab-case``, ``camelCase``, dots and spaces
split them), and the FINAL word decides: ``client_secret``, ``apiKey``, ``x-api-key``, ``db_pass``,
``private_key_id``, ``session_id``, ``pin`` are credential-named; ``password_min_length``,
``token_count``, ``max_tokens``, ``secret_manager``, ``password_policy`` are not.

Scrubbing is idempotent: a placeholder never matches a rule, so ``scrub(scrub(x)) == scrub(x)``.
"""

from __future__ import annotations

import contextlib
import copy
import re
import tomllib
import warnings
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from typing import Any, NamedTuple, Protocol

from memdedup import _backend
from memdedup._scrub_py import PLACEHOLDER_PREFIX, PyDetector, digits_are_secret, memory, to_code_points
from memdedup.errors import BackendUnavailableError, InputTypeError, InvalidInputError

__all__ = [
    "CREDENTIAL_KINDS",
    "KEY_KINDS",
    "PII_KINDS",
    "RULES",
    "CredentialScrubber",
    "Finding",
    "RuleInfo",
    "ScrubResult",
    "ScrubbedProperties",
    "ScrubbedRecord",
    "Secret",
    "clean_text",
    "credential_kind",
    "is_credential_key",
    "is_sentence_key",
    "key_words",
    "placeholder",
    "redact",
]

# How deep scrub_properties walks nested mappings and lists before refusing the input.
MAX_DEPTH = 200


_SURROGATE = re.compile(r"[\ud800-\udfff]")
# What a cut message ends with.
ELLIPSIS = "\u2026"


def clean_text(text: str) -> str:
    """``text`` with lone surrogates (valid in JSON escapes, not in UTF-8) replaced by U+FFFD: the one
    cleaning rule for every text memdedup stores or prints (labels, properties, chat messages, reasons)."""
    return _SURROGATE.sub("\ufffd", text)


def placeholder(kind: str) -> str:
    """The text that replaces a credential of ``kind``."""
    return f"{PLACEHOLDER_PREFIX}{kind}]"


class ScrubResult(NamedTuple):
    """Scrubbed text and the kinds redacted from it, in the order they appear."""

    text: str
    redactions: tuple[str, ...]


class ScrubbedProperties(NamedTuple):
    """Scrubbed properties, the (scrubbed) paths of the credential-named keys dropped, and the value
    kinds redacted."""

    properties: dict[str, Any]
    dropped_keys: tuple[str, ...]
    redactions: tuple[str, ...]


class Secret(NamedTuple):
    """A value found as a secret in a record, and its kind."""

    value: str
    kind: str


class ScrubbedRecord(NamedTuple):
    """The texts of one record, scrubbed together; the kinds redacted from each; the record's secrets."""

    texts: tuple[str, ...]
    redactions: tuple[tuple[str, ...], ...]
    secrets: tuple[Secret, ...]


class Finding(NamedTuple):
    """One credential: its code-point span in the text, the rule that found it, the placeholder kind."""

    start: int
    end: int
    rule: str
    kind: str


class RuleInfo(NamedTuple):
    """A catalogue rule, as docs/scrub.md lists it."""

    id: str
    kind: str
    description: str
    pii: bool


# ---------------------------------------------------------------------------------------------------
# The catalogue
# ---------------------------------------------------------------------------------------------------
def _load_catalogue() -> dict[str, Any]:
    text = resources.files("memdedup").joinpath("data/secret_rules.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


_CATALOGUE = _load_catalogue()
RULES: tuple[RuleInfo, ...] = tuple(
    RuleInfo(rule["id"], rule["kind"], rule["description"], bool(rule.get("pii", False)))
    for rule in _CATALOGUE["rules"]
)
# The kinds a credential-named key's value is redacted as (the class of the key).
KEY_KINDS: tuple[str, ...] = ("PASSWORD", "PIN", "TOKEN", "API_KEY", "SECRET")
CREDENTIAL_KINDS: tuple[str, ...] = tuple(
    dict.fromkeys([r.kind for r in RULES if not r.pii and r.kind != "BY_KEY"] + list(KEY_KINDS))
)
PII_KINDS: tuple[str, ...] = tuple(dict.fromkeys(r.kind for r in RULES if r.pii))
_PLACEHOLDERS = {kind: placeholder(kind) for kind in CREDENTIAL_KINDS + PII_KINDS}


# ---------------------------------------------------------------------------------------------------
# Engines: the core's functions, or the mirror's, behind one surface
# ---------------------------------------------------------------------------------------------------
def _wtf8(text: str) -> bytes:
    # The unbound str.encode: a subclass's override never decides what is scanned.
    return str.encode(text, "utf-8", "surrogatepass")


# A secret another text of the same record gave: (value, rule id, kind).
Known = tuple[str, str, str]


class _Engine(Protocol):
    name: str

    def scan(self, text: str, pii: bool, known: Sequence[Known] = ()) -> list[tuple[int, int, str, str]]: ...
    def key_kind(self, name: str) -> str | None: ...
    def key_class(self, name: str) -> tuple[str, bool] | None: ...
    def key_words(self, name: str) -> list[str]: ...
    def value_kept(self, kind: str, value: str, quoted: bool) -> bool: ...
    def value_random(self, value: str) -> bool: ...
    def secret_bits(self, value: str) -> float: ...
    def secret_spans(self, text: str, shapes: bytes) -> list[tuple[int, int]]: ...


class _PythonEngine:
    name = "python"

    def __init__(self) -> None:
        self.detector = PyDetector(_CATALOGUE)

    def scan(self, text: str, pii: bool, known: Sequence[Known] = ()) -> list[tuple[int, int, str, str]]:
        data = _wtf8(text)
        rules = self.detector.rules
        index = self.detector.rule_index
        others = []
        for value, rule, kind in known:
            at = index(rule)
            if at is None:
                raise InvalidInputError("known names a rule the catalogue has not")
            others.append((_wtf8(value), at, kind))
        found = self.detector.scan(data, pii, others)
        return [(s, e, rules[r].id, k) for s, e, r, k in to_code_points(data, found)]

    def key_kind(self, name: str) -> str | None:
        return self.detector.keys.classify(_wtf8(name))

    def key_class(self, name: str) -> tuple[str, bool] | None:
        return self.detector.keys.classify_key(_wtf8(name))

    def key_words(self, name: str) -> list[str]:
        return self.detector.keys.words(_wtf8(name))

    def value_kept(self, kind: str, value: str, quoted: bool) -> bool:
        return self.detector.values.kept(kind, _wtf8(value), quoted)

    def value_random(self, value: str) -> bool:
        data = _wtf8(value)
        return self.detector.values.looks_random_at(data, 0, len(data))

    def secret_bits(self, value: str) -> float:
        return memory.secret_bits(_wtf8(value))

    def secret_spans(self, text: str, shapes: bytes) -> list[tuple[int, int]]:
        try:
            pairs = memory.unpack_shapes(shapes)
        except ValueError:
            raise InvalidInputError("shapes must be 12-byte (u32, f64) records") from None
        data = _wtf8(text)
        return memory.code_point_spans(data, memory.secret_spans(data, pairs))


class _RustEngine:
    name = "rust"

    def __init__(self, core: Any) -> None:
        self.core = core

    def scan(self, text: str, pii: bool, known: Sequence[Known] = ()) -> list[tuple[int, int, str, str]]:
        found: list[tuple[int, int, str, str]] = self.core.scan_secrets(text, pii, known or None)
        return found

    def key_class(self, name: str) -> tuple[str, bool] | None:
        found: tuple[str, bool] | None = self.core.credential_key_class(name)
        return found

    def value_random(self, value: str) -> bool:
        return bool(self.core.credential_value_random(value))

    def secret_bits(self, value: str) -> float:
        return float(self.core.secret_bits(value))

    def secret_spans(self, text: str, shapes: bytes) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = self.core.secret_spans(text, shapes)
        return spans

    def key_kind(self, name: str) -> str | None:
        kind: str | None = self.core.credential_key_kind(name)
        return kind

    def key_words(self, name: str) -> list[str]:
        words: list[str] = self.core.credential_key_words(name)
        return words

    def value_kept(self, kind: str, value: str, quoted: bool) -> bool:
        return bool(self.core.credential_value_kept(kind, value, quoted))


_ENGINES: dict[str, _Engine] = {}


def _engine(implementation: str | None = None) -> _Engine:
    """The engine for ``implementation`` ("rust", "python"), or the package's backend when None."""
    if implementation is None:
        implementation = _backend.IMPLEMENTATION
    if implementation not in ("rust", "python"):
        # The message does not echo the argument: whatever a caller passes may be a secret.
        raise InvalidInputError("implementation must be 'rust' or 'python'")
    if implementation in _ENGINES:
        return _ENGINES[implementation]
    engine: _Engine
    if implementation == "rust":
        try:
            from memdedup import _core
        except ImportError as exc:
            raise BackendUnavailableError(f"the compiled extension did not load: {exc}") from exc
        if _backend.has_feature("secret_spans"):
            engine = _RustEngine(_core)
        elif _backend.REQUESTED == "rust":
            raise BackendUnavailableError("memdedup._core has no scan_secrets: rebuild the extension")
        else:
            warnings.warn(
                "memdedup: the compiled extension has no credential detector (an older build); "
                "scrubbing runs on the pure-Python mirror of the same catalogue",
                RuntimeWarning,
                stacklevel=3,
            )
            engine = _engine("python")
    else:
        engine = _PythonEngine()
    _ENGINES[implementation] = engine
    return engine


# ---------------------------------------------------------------------------------------------------
# Key names
# ---------------------------------------------------------------------------------------------------
def key_words(name: Any) -> list[str]:
    """The lower-cased words a key name is judged by: ``authToken`` -> ``["auth", "token"]``,
    ``PGPASSWORD`` -> ``["pg", "password"]``."""
    return _engine().key_words(str(name))


def credential_kind(name: Any) -> str | None:
    """The kind (``PASSWORD``, ``PIN``, ``TOKEN``, ``API_KEY``, ``SECRET``) of a credential-named key,
    or None. Its final word decides (see the module docstring and docs/scrub.md)."""
    return _engine().key_kind(name if isinstance(name, str) else str(name))


# A property key with more words than a key name has, or with a sentence's punctuation, is prose.
SENTENCE_KEY_WORDS = 4
_SENTENCE_MARKS = (". ", "? ", "! ", ", ", "; ")


def is_sentence_key(name: str) -> bool:
    """Whether a property key is a sentence rather than a key name: more than
    :data:`SENTENCE_KEY_WORDS` words between blanks, or a sentence's punctuation (``. ? ! , ;`` before a
    blank, or ``?`` / ``!`` at the end). Such a key is scrubbed as text (a secret in it is still
    redacted) and never drops its property: ``the sig query parameter carries the signature`` is a
    note about a signature, not one. ``db signature``, ``the admin password`` and ``API key`` stay
    credential-named."""
    stripped = name.strip()
    return (
        len(stripped.split()) > SENTENCE_KEY_WORDS
        or any(mark in stripped for mark in _SENTENCE_MARKS)
        or stripped.endswith(("?", "!"))
    )


def is_credential_key(name: Any) -> bool:
    """Whether a property key names a credential."""
    return credential_kind(name) is not None


# ---------------------------------------------------------------------------------------------------
# The scrubber
# ---------------------------------------------------------------------------------------------------
def _type_name(value: object) -> str:
    # A class name is code, not input, but it is echoed into an error message: scrub it like input.
    return redact(type(value).__name__, 80)


class CredentialScrubber:
    """Replaces credentials in text and drops credential-named properties.

    ``pii=True`` also redacts e-mail addresses and phone numbers. ``implementation`` picks the engine
    (``"rust"`` or ``"python"``; the package's backend by default). The scrubber holds no state between
    calls; one instance may be shared. :meth:`for_record` makes one bound to a record: it also redacts,
    in every text, every secret found anywhere in the record.
    """

    def __init__(self, *, pii: bool = False, implementation: str | None = None) -> None:
        self.pii = bool(pii)
        self._engine = _engine(implementation)
        # A record's secrets (for_record): (value, rule id, kind), and each text's own findings.
        self._known: tuple[Known, ...] = ()
        # What a text must hold for the record's secrets to change its findings: each value, and each
        # value without a sentence's last marks (the core searches both).
        self._needles: tuple[str, ...] = ()
        self._first: dict[str, list[tuple[int, int, str, str]]] = {}
        #: The secrets of the record this scrubber is bound to (:meth:`for_record`); empty otherwise.
        self.secrets: tuple[Secret, ...] = ()

    @property
    def implementation(self) -> str:
        return self._engine.name

    def _scan(self, text: str) -> list[tuple[int, int, str, str]]:
        """The engine's findings, and (bound to a record) every copy of the record's secrets."""
        if not self._known:
            return self._engine.scan(text, self.pii)
        first = self._first.get(text)
        if first is None:
            first = self._engine.scan(text, self.pii)
        own = {text[start:end] for start, end, _rule, _kind in first}
        if any(value not in own and value in text for value in self._needles):
            return self._engine.scan(text, self.pii, self._known)
        return first

    def scan(self, text: str) -> tuple[Finding, ...]:
        """Every credential in ``text``: code-point spans, non-overlapping, in order. A secret's every
        copy is found, wherever it stands (and, bound to a record, every copy of the record's secrets)."""
        if not isinstance(text, str):
            raise InputTypeError(f"scan takes a str, not {_type_name(text)}")
        return tuple(Finding(*found) for found in self._scan(str.__str__(text)))

    def for_record(self, *parts: Any) -> CredentialScrubber:
        """A scrubber bound to one record: ``parts`` are all its texts (strings, and mappings and lists
        of them: a label, properties, a turn's chat messages, a model's ops). Every value found as a
        secret in any of them, and every value of a credential-named property (which
        :meth:`scrub_properties` drops), is redacted wherever it occurs in every text the returned
        scrubber scrubs, whatever surrounds the copy. Its :attr:`secrets` lists them (what a store may
        remember: :mod:`memdedup.secret_memory`). Never raises on a part it cannot read (it is left
        to the scrubbing to refuse)."""
        record = copy.copy(self)  # the same class and settings, its own record state
        known: dict[str, Known] = {}
        first: dict[str, list[tuple[int, int, str, str]]] = {}

        def note(value: str, rule: str, kind: str) -> None:
            if value and value not in known:
                known[value] = (value, rule, kind)

        def visit(value: Any, depth: int) -> None:
            if depth > MAX_DEPTH:
                return
            if isinstance(value, str):
                text = clean_text(str.__str__(value))
                if text not in first:
                    first[text] = found = self._engine.scan(text, self.pii)
                    for start, end, rule, found_kind in found:
                        note(text[start:end], rule, found_kind)
            elif isinstance(value, Mapping):
                for key, item in value.items():
                    name = key if isinstance(key, str) else _safe_str(key)
                    visit(name, depth + 1)
                    dropped = self._dropped_kind(name, item)
                    if (
                        dropped is not None
                        and isinstance(item, str | int | float)
                        and not isinstance(item, bool)
                    ):
                        # An int past Python's digit limit has no text to search for (str raises).
                        with contextlib.suppress(ValueError):
                            note(clean_text(_number_or_str(item)), "assignment", dropped)
                    visit(item, depth + 1)
            elif isinstance(value, list | tuple):
                for item in value:
                    visit(item, depth + 1)

        for part in parts:
            visit(part, 0)
        record._known = tuple(known.values())
        needles = dict.fromkeys(known)
        for value in known:
            bare = value.rstrip(" \t\n\x0c\r").rstrip("!?.")
            if len(bare) >= 8:
                needles[bare] = None
        record._needles = tuple(needles)
        record._first = first
        record.secrets = tuple(Secret(value, kind) for value, _rule, kind in known.values())
        return record

    def scrub_record(self, texts: Iterable[str]) -> ScrubbedRecord:
        """The texts of one record scrubbed together: every secret found in any of them is redacted in
        all of them (:meth:`for_record`), with the kinds redacted from each and the record's secrets."""
        texts = [text if isinstance(text, str) else _safe_str(text) for text in texts]
        record = self.for_record(texts)
        results = [record.scrub_text(text) for text in texts]
        return ScrubbedRecord(
            tuple(r.text for r in results), tuple(r.redactions for r in results), record.secrets
        )

    def _dropped_kind(self, name: str, item: Any) -> str | None:
        """The kind of the credential-named key ``name`` when :meth:`scrub_properties` drops it with
        ``item``, else None."""
        if is_sentence_key(name):
            return None
        kind = self._engine.key_kind(name)
        if kind is not None:
            return None if self._keeps(kind, item) else kind
        weak = self._engine.key_class(name)
        if weak is not None and isinstance(item, str) and self._engine.value_random(item):
            return weak[0]
        return None

    def scrub_text(self, text: str) -> ScrubResult:
        """``text`` with every recognised credential replaced by ``[REDACTED:KIND]``, and the kinds."""
        if not isinstance(text, str):
            raise InputTypeError(f"scrub_text takes a str, not {_type_name(text)}")
        if type(text) is not str:
            text = str.__str__(text)  # an exact copy: a subclass's slicing never decides the output
        found = self._scan(text)
        if not found:
            return ScrubResult(text, ())
        pieces: list[str] = []
        done = 0
        for start, end, _rule, kind in found:
            pieces += (text[done:start], _PLACEHOLDERS.get(kind) or placeholder(kind))
            done = end
        pieces.append(text[done:])
        return ScrubResult("".join(pieces), tuple(kind for _s, _e, _r, kind in found))

    def scrub_properties(self, mapping: Mapping[Any, Any]) -> ScrubbedProperties:
        """A scrubbed copy of ``mapping``.

        Every string is scrubbed: values, list items and key names (a key that is itself a secret
        becomes its placeholder). A credential-named key (:func:`credential_kind`) is dropped, at any
        depth, unless its value is one the policy keeps: None, a boolean, an empty container, an obvious
        placeholder (``required``, ``none``, ``<redacted>``, ``***``, ``$TOKEN``...) or, except under a
        PASSWORD or PIN key, a number of at most 6 integer digits. Dropped keys are reported by path
        (``db.password``, ``hosts[1].token``), built from scrubbed key names only. Values that are not
        JSON types are scrubbed as their ``str()``. Two keys that scrub to the same name are kept
        apart (``[REDACTED:TOKEN] (2)``).
        """
        if not isinstance(mapping, Mapping):
            raise InputTypeError(f"scrub_properties takes a mapping, not {_type_name(mapping)}")
        dropped: list[str] = []
        kinds: list[str] = []

        def text_of(value: str) -> str:
            result = self.scrub_text(value)
            kinds.extend(result.redactions)
            return result.text

        def walk(value: Any, path: str, depth: int) -> Any:
            if depth > MAX_DEPTH:
                raise InvalidInputError(f"properties are nested deeper than {MAX_DEPTH} levels")
            if isinstance(value, Mapping):
                out: dict[Any, Any] = {}
                for key, item in value.items():
                    name = key if isinstance(key, str) else str(key)
                    clean = text_of(name)
                    where = f"{path}.{clean}" if path else clean
                    if self._dropped_kind(name, item) is not None:
                        dropped.append(where)
                        continue
                    new_key: Any = clean if isinstance(key, str) or clean != name else key
                    if new_key in out:
                        copy = 2
                        while f"{clean} ({copy})" in out:
                            copy += 1
                        new_key = f"{clean} ({copy})"
                    out[new_key] = walk(item, where, depth + 1)
                return out
            if isinstance(value, list | tuple):
                return [walk(item, f"{path}[{index}]", depth + 1) for index, item in enumerate(value)]
            if isinstance(value, str):
                return text_of(value)
            if value is None or isinstance(value, bool | int | float):
                return value
            return text_of(str(value))

        return ScrubbedProperties(walk(mapping, "", 0), tuple(dropped), tuple(kinds))

    def redact(self, value: object, width: int | None = None) -> str:
        """``value`` as a message may quote it: its text (``str()`` of anything else), cleaned
        (:func:`clean_text`), scrubbed, and only then cut to at most ``width`` characters (ending in
        ``…``). Scrubbing first is the point: a token cut to 40 characters may no longer match its
        rule, and a cut never ends inside a placeholder. The one way a refusal reason, an error or a
        report quotes input."""
        text = value if isinstance(value, str) else _safe_str(value)
        text = self.scrub_text(clean_text(str.__str__(text))).text
        if width is None or len(text) <= width:
            return text
        cut = max(width - 1, 0)
        opened = text.rfind("[", 0, cut)
        if opened >= 0 and text.startswith(PLACEHOLDER_PREFIX, opened) and text.find("]", opened, cut) < 0:
            cut = opened  # the cut would split a placeholder: end before it
        return text[:cut] + ELLIPSIS

    def _keeps(self, kind: str, value: Any) -> bool:
        """Whether a credential-named key of ``kind`` keeps ``value`` (the property policy)."""
        if value is None or isinstance(value, bool):
            return True
        if isinstance(value, int | float):
            return not digits_are_secret(kind) and self._engine.value_kept(kind, repr(value), True)
        if isinstance(value, str):
            return self._engine.value_kept(kind, value, True)
        if isinstance(value, Mapping | list | tuple):
            return len(value) == 0
        return False


def redact(value: object, width: int | None = None, *, pii: bool = False) -> str:
    """:meth:`CredentialScrubber.redact` with the default scrubber: ``value`` scrubbed, then cut to
    ``width``, for messages, logs and reports that echo input."""
    return _default_scrubber(pii).redact(value, width)


def _number_or_str(value: str | int | float) -> str:
    """A str's own text, or a number's as str() writes it (the exact types: a subclass's ``__str__``
    is not run)."""
    if isinstance(value, str):
        return str.__str__(value)
    return int.__repr__(value) if isinstance(value, int) else float.__repr__(value)


def _safe_str(value: object) -> str:
    """``str(value)`` for a message; an object whose ``__str__`` fails is named by its type only."""
    try:
        text = str(value)
    except Exception:
        return f"<{type(value).__name__}>"
    return text if isinstance(text, str) else f"<{type(value).__name__}>"


_DEFAULT: dict[bool, CredentialScrubber] = {}


def _default_scrubber(pii: bool) -> CredentialScrubber:
    if pii not in _DEFAULT:
        _DEFAULT[pii] = CredentialScrubber(pii=pii)
    return _DEFAULT[pii]
