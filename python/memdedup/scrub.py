"""Keep credentials out of stored memories: scrub text, drop credential-named properties.

:class:`CredentialScrubber` replaces each credential it recognises with a placeholder that keeps the
kind (``[REDACTED:JWT]``), so a recalled memory still says *that* a key was mentioned and of what kind,
and reports the kinds it redacted. It runs before a record's id is derived and before dedup, so neither
the id hash nor a stored label ever carries the secret.

What is recognised, and why these patterns are hand-written:

Value shapes (always on)
    ``PRIVATE_KEY`` (PEM/PGP private key blocks, terminated or truncated), ``URL_PASSWORD`` (the password
    of ``scheme://user:password@host``), ``JWT``, ``ANTHROPIC_API_KEY`` (``sk-ant-``), ``OPENAI_API_KEY``
    (``sk-``, ``sk-proj-``, ``sk-svcacct-``, ``sk-admin-``), ``STRIPE_STYLE_KEY``
    (``(sk|pk|rk|api|token)_(live|test)_...``), ``AWS_ACCESS_KEY_ID``, ``GITHUB_TOKEN`` (``ghp_`` & co.,
    ``github_pat_``), ``SLACK_TOKEN``, ``GOOGLE_API_KEY``, ``BEARER_TOKEN`` and ``BASIC_AUTH``
    (``Authorization`` header values), and assignments to a credential-named key (``password=...``,
    ``"api_key": "..."``, ``authToken: ...``) as ``PASSWORD``, ``TOKEN``, ``API_KEY`` or ``SECRET``; in
    prose, ``the password is hunter2`` when the value has a digit or a symbol (so ``the password is
    required`` stays readable).
PII (opt-in, ``pii=True``)
    ``EMAIL`` and ``PHONE`` (``+``-prefixed international numbers, and ``(555) 123-4567`` style).

Generated token shapes need a digit in their random part and a minimum length, which keeps look-alikes
(``sk-learn``, ``task-management-dashboard``, ``token_test_suite``, ``bearer of bad news``) intact.

Key names are matched as words (``snake_case``, ``kebab-case`` and ``camelCase`` are split): a key is a
credential when one of its words is ``password``/``passwd``/``passphrase``/``passcode``/``pwd``,
``secret(s)``, ``credential(s)``, ``apikey``, ``authorization``, ``privatekey`` or ``jwt``; or when its
*last* word is ``token``, ``auth`` or ``cookie``; or when it ends in ``key`` qualified by ``api``,
``access``, ``secret``, ``private``, ``signing``, ``encryption``, ``master``, ``auth``, ``client``,
``app`` or ``ssh``. So ``api_key``, ``authToken``, ``client-secret`` and ``DB_PASSWORD`` are dropped, while
``max_tokens``, ``token_count``, ``secretary``, ``author`` and ``primary_key`` are kept.

Why not detect-secrets: its plugins report *that* a line holds a secret, not where (replacing needs the
span), its OpenAI detector only knows the legacy ``T3BlbkFJ`` key shape (no ``sk-proj-``/``sk-ant-``), and
its default entropy detectors flag commit SHAs and UUIDs, which memories legitimately hold. The patterns
here are short, documented and tested kind by kind against benign look-alikes.

Scrubbing is idempotent: a placeholder never matches a pattern, so ``scrub(scrub(x)) == scrub(x)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from memdedup.errors import InputTypeError

__all__ = [
    "CREDENTIAL_KINDS",
    "PII_KINDS",
    "CredentialScrubber",
    "ScrubResult",
    "ScrubbedProperties",
    "is_credential_key",
    "key_words",
    "placeholder",
]

PLACEHOLDER_PREFIX = "[REDACTED:"


def placeholder(kind: str) -> str:
    """The text that replaces a credential of ``kind``."""
    return f"{PLACEHOLDER_PREFIX}{kind}]"


class ScrubResult(NamedTuple):
    """Scrubbed text and the kinds redacted from it, in the order the passes found them."""

    text: str
    redactions: tuple[str, ...]


class ScrubbedProperties(NamedTuple):
    """Scrubbed properties, the paths of the credential-named keys dropped, and the value kinds redacted."""

    properties: dict[str, Any]
    dropped_keys: tuple[str, ...]
    redactions: tuple[str, ...]


# ---------------------------------------------------------------------------------------------------
# Key names as words
# ---------------------------------------------------------------------------------------------------
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_ANYWHERE_WORDS = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "passcode",
        "pwd",
        "secret",
        "secrets",
        "credential",
        "credentials",
        "apikey",
        "authorization",
        "privatekey",
        "jwt",
    }
)
_LAST_WORDS = frozenset({"token", "auth", "cookie"})
_KEY_QUALIFIERS = frozenset(
    {"api", "access", "secret", "private", "signing", "encryption", "master", "auth", "client", "app", "ssh"}
)
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "passcode", "pwd"})


def key_words(name: Any) -> list[str]:
    """The lower-cased words of a key name: ``authToken`` -> ``["auth", "token"]``."""
    return [word.lower() for word in _WORD.findall(str(name))]


def is_credential_key(name: Any) -> bool:
    """Whether a property key names a credential (see the module docstring for the word rules)."""
    words = key_words(name)
    if not words:
        return False
    if any(word in _ANYWHERE_WORDS for word in words):
        return True
    if words[-1] in _LAST_WORDS:
        return True
    return len(words) >= 2 and words[-1] == "key" and words[-2] in _KEY_QUALIFIERS


def _assignment_kind(name: str) -> str:
    words = key_words(name)
    if any(word in _PASSWORD_WORDS for word in words):
        return "PASSWORD"
    if words and words[-1] == "token":
        return "TOKEN"
    if "apikey" in words or words[-2:] == ["api", "key"]:
        return "API_KEY"
    return "SECRET"


# ---------------------------------------------------------------------------------------------------
# Value shapes
# ---------------------------------------------------------------------------------------------------
_BOUNDARY = r"(?<![A-Za-z0-9_\-])"
_END = r"(?![A-Za-z0-9_\-])"
_HAS_DIGIT = re.compile(r"[0-9]")
_NOT_SECRET_VALUES = frozenset({"true", "false", "null", "none", "yes", "no", "nil", "undefined"})
# An Authorization header's scheme: the BEARER_TOKEN / BASIC_AUTH passes own what follows it.
_AUTH_SCHEMES = frozenset({"bearer", "basic", "digest", "token"})


class _Pass(NamedTuple):
    kind: str
    pattern: re.Pattern[str]
    # The replacement for a match and the kind it redacts, or None to keep the match as it is.
    replace: Callable[[re.Match[str], str], tuple[str, str] | None]


_Replacement = tuple[str, str] | None


def _whole(match: re.Match[str], kind: str) -> _Replacement:
    return placeholder(kind), kind


def _whole_if_digit(match: re.Match[str], kind: str) -> _Replacement:
    return (placeholder(kind), kind) if _HAS_DIGIT.search(match.group("body")) else None


def _keep_prefix(match: re.Match[str], kind: str) -> _Replacement:
    return match.group("prefix") + placeholder(kind), kind


def _bearer(match: re.Match[str], kind: str) -> _Replacement:
    token = match.group("token")
    in_header = "authorization" in match.string[max(0, match.start() - 32) : match.start()].lower()
    # Outside an Authorization header, "bearer" is an English word: demand a token's shape.
    if not in_header and (len(token) < 16 or not _HAS_DIGIT.search(token)):
        return None
    return match.group("prefix") + placeholder(kind), kind


def _url_password(match: re.Match[str], kind: str) -> _Replacement:
    return match.group("prefix") + placeholder(kind) + "@", kind


def _unquote(value: str) -> tuple[str, str]:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[0], value[1:-1]
    return "", value


def _assignment(match: re.Match[str], kind: str) -> _Replacement:
    key = match.group("key")
    if not is_credential_key(key):
        return None
    quote, value = _unquote(match.group("value"))
    if not value.strip() or value.lower() in _NOT_SECRET_VALUES or value.startswith(PLACEHOLDER_PREFIX):
        return None
    if not quote and value.lower() in _AUTH_SCHEMES:
        return None
    kind = _assignment_kind(key)
    return match.group("lead") + quote + placeholder(kind) + quote, kind


def _prose_password(match: re.Match[str], kind: str) -> _Replacement:
    value = match.group("value")
    if value.startswith(PLACEHOLDER_PREFIX) or value.isalpha():
        return None
    quote = match.group("quote")
    return match.group("lead") + quote + placeholder(kind) + quote, kind


def _apply(step: _Pass, text: str, kinds: list[str]) -> str:
    """Replace the matches ``step`` accepts; after a refused match, search again one character on.

    (``re.sub`` would resume after the refused match and so miss ``password=x`` inside ``note: password=x``.)
    """
    pieces: list[str] = []
    done = search_from = 0
    while (match := step.pattern.search(text, search_from)) is not None:
        result = step.replace(match, step.kind)
        if result is None:
            search_from = match.start() + 1
            continue
        replacement, kind = result
        pieces += (text[done : match.start()], replacement)
        kinds.append(kind)
        done = search_from = match.end()
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


_CREDENTIAL_PASSES: tuple[_Pass, ...] = (
    _Pass(
        "PRIVATE_KEY",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            # A complete block, or a truncated one: its header lines and base64 lines, not the prose after.
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:\s*[A-Za-z][A-Za-z\-]*:[^\n]*)*(?:\s*[A-Za-z0-9+/=]{16,})*)",
            re.DOTALL,
        ),
        _whole,
    ),
    _Pass(
        "URL_PASSWORD",
        # The password runs to the last "@" of the authority, so "p@ss" is redacted whole.
        re.compile(r"(?P<prefix>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@\[\]]*:)(?P<pw>[^\s/?#\[\]]+)@"),
        _url_password,
    ),
    _Pass(
        "JWT",
        re.compile(_BOUNDARY + r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*" + _END),
        _whole,
    ),
    _Pass(
        "ANTHROPIC_API_KEY",
        re.compile(_BOUNDARY + r"sk-ant-(?P<body>[A-Za-z0-9_\-]{20,})" + _END),
        _whole_if_digit,
    ),
    _Pass(
        "OPENAI_API_KEY",
        re.compile(_BOUNDARY + r"sk-(?:proj-|svcacct-|admin-)?(?P<body>[A-Za-z0-9_\-]{20,})" + _END),
        _whole_if_digit,
    ),
    _Pass(
        "STRIPE_STYLE_KEY",
        re.compile(_BOUNDARY + r"(?:sk|pk|rk|api|token)_(?:live|test)_(?P<body>[A-Za-z0-9]{16,})" + _END),
        _whole_if_digit,
    ),
    _Pass(
        "AWS_ACCESS_KEY_ID",
        re.compile(
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA)[A-Z0-9]{16}(?![A-Za-z0-9])"
        ),
        _whole,
    ),
    _Pass(
        "GITHUB_TOKEN",
        re.compile(
            _BOUNDARY
            + r"(?:(?:ghp|gho|ghu|ghs|ghr)_(?P<body>[A-Za-z0-9]{36,})|github_pat_[A-Za-z0-9_]{22,})"
            + _END
        ),
        _whole,
    ),
    _Pass(
        "SLACK_TOKEN",
        re.compile(_BOUNDARY + r"xox[abposr]-(?P<body>[A-Za-z0-9\-]{10,})" + _END),
        _whole_if_digit,
    ),
    _Pass("GOOGLE_API_KEY", re.compile(_BOUNDARY + r"AIza[0-9A-Za-z_\-]{35}" + _END), _whole),
    _Pass(
        "BASIC_AUTH",
        re.compile(r"(?i)(?P<prefix>\bauthorization[\"']?\s*[:=]\s*[\"']?basic\s+)[A-Za-z0-9+/]{8,}={0,2}"),
        _keep_prefix,
    ),
    _Pass(
        "BEARER_TOKEN",
        re.compile(r"(?i)(?P<prefix>\bbearer\s+)(?P<token>[A-Za-z0-9\-._~+/]+=*)"),
        _bearer,
    ),
    _Pass(
        "ASSIGNMENT",
        re.compile(
            r"(?P<lead>(?<![A-Za-z0-9_.\-])(?P<q>[\"']?)(?P<key>[A-Za-z_][A-Za-z0-9_.\-]{0,63})(?P=q)\s*[:=]\s*)"
            r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s,;'\"()\[\]{}<>]+)"
        ),
        _assignment,
    ),
    _Pass(
        "PASSWORD",
        re.compile(
            r"(?i)(?P<lead>(?<![A-Za-z0-9])(?:pass(?:word|phrase|code)|pwd)\s+(?:is|was|will be)\s+)"
            r"(?P<quote>[\"']?)(?P<value>[^\s\"',;]*[^\s\"',;.!?:])(?P=quote)"
        ),
        _prose_password,
    ),
)

_PII_PASSES: tuple[_Pass, ...] = (
    _Pass(
        "EMAIL",
        re.compile(
            r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b"
        ),
        _whole,
    ),
    _Pass(
        "PHONE",
        re.compile(
            r"(?<![\w+])(?:\+[1-9][0-9]{0,2}[\s.\-]?(?:\(?[0-9]{1,4}\)?[\s.\-]?){1,4}[0-9]{2,4}"
            r"|\(?[0-9]{3}\)?[\s.\-][0-9]{3}[\s.\-][0-9]{4})(?![\w])"
        ),
        _whole,
    ),
)

CREDENTIAL_KINDS: tuple[str, ...] = (
    *(p.kind for p in _CREDENTIAL_PASSES if p.kind != "ASSIGNMENT"),
    "TOKEN",
    "API_KEY",
    "SECRET",
)
PII_KINDS: tuple[str, ...] = tuple(p.kind for p in _PII_PASSES)


class CredentialScrubber:
    """Replaces credentials in text and drops credential-named properties.

    ``pii=True`` also redacts e-mail addresses and phone numbers. The scrubber holds no state between
    calls; one instance may be shared.
    """

    def __init__(self, *, pii: bool = False) -> None:
        self.pii = pii
        self._passes = _CREDENTIAL_PASSES + (_PII_PASSES if pii else ())

    def scrub_text(self, text: str) -> ScrubResult:
        """``text`` with every recognised credential replaced by ``[REDACTED:KIND]``, and the kinds."""
        if not isinstance(text, str):
            raise InputTypeError(f"scrub_text takes a str, not {type(text).__name__}")
        kinds: list[str] = []
        for step in self._passes:
            if step.kind == "ASSIGNMENT" and ":" not in text and "=" not in text:
                continue
            text = _apply(step, text, kinds)
        return ScrubResult(text, tuple(kinds))

    def scrub_properties(self, mapping: Mapping[Any, Any]) -> ScrubbedProperties:
        """A scrubbed copy: credential-named keys dropped (at any depth), every string value scrubbed.

        Nested mappings and lists are walked; dropped keys are reported by path (``db.password``,
        ``hosts[1].token``). A string key that itself holds a credential is scrubbed like a value.
        """
        if not isinstance(mapping, Mapping):
            raise InputTypeError(f"scrub_properties takes a mapping, not {type(mapping).__name__}")
        dropped: list[str] = []
        kinds: list[str] = []

        def walk(value: Any, path: str) -> Any:
            if isinstance(value, Mapping):
                out: dict[Any, Any] = {}
                for key, item in value.items():
                    where = f"{path}.{key}" if path else str(key)
                    if is_credential_key(key):
                        dropped.append(where)
                        continue
                    if isinstance(key, str):
                        scrubbed_key = self.scrub_text(key)
                        kinds.extend(scrubbed_key.redactions)
                        key = scrubbed_key.text
                    out[key] = walk(item, where)
                return out
            if isinstance(value, list | tuple):
                return [walk(item, f"{path}[{index}]") for index, item in enumerate(value)]
            if isinstance(value, str):
                result = self.scrub_text(value)
                kinds.extend(result.redactions)
                return result.text
            return value

        return ScrubbedProperties(walk(mapping, ""), tuple(dropped), tuple(kinds))
