"""From a model's extraction output to memories, with a reason for every operation that is not one.

The wire format is symfonic-core's: a JSON object ``{"ops": [...]}`` whose ops name an ``action``, a
``layer``, a ``label``, ``properties`` and an ``importance`` on the 1-10 grid. :func:`parse_extraction`
reads what models really emit (bare JSON, JSON in a code fence or inside a tag such as ``<memory>``, JSON
embedded in prose, an ``operations`` alias, a bare list, a single op object, and even an array cut off by
a token limit, whose complete ops are kept) and records which form it read in
:attr:`ExtractionResult.form` (``"fenced/ops"``, ``"tagged/operations"``, ``"salvaged/ops"`` ...).

Every op is accounted for exactly once: it becomes an :class:`ExtractedMemory` or a ``(identifier,
reason)`` pair in :attr:`ExtractionResult.dropped`. A reason starts with a stable code (see
:data:`REFUSAL_CODES` and :func:`reason_code`) followed by ``": "`` and a sentence for people; the empty
reason is a ``noop``, the model saying there is nothing to remember. Output that cannot be read gives
``degraded=True`` and a ``reason``, never an exception, and one bad op never loses the others.

Classification (``memory_category`` and ``subject`` in an op's properties)
    Both are required and come as a pair: ``memory_category`` names what kind of memory it is, from
    :data:`MEMORY_CATEGORIES`, each allowed on some layers only; ``subject`` names what the memory is
    about (``"user"``, ``"assistant"``, ``"project:memdedup"``), 1-80 characters once whitespace is
    collapsed, no control characters, stored lower-cased. Neither present, or one without the other, is
    ``classification_missing``; a wrong type, an unknown category, a category not allowed on the op's
    layer, or a bad subject is ``classification_invalid``.

Order of the checks, which decides the reason an op gets when several apply: not an object, action
(missing, ``noop``, a non-node action, unknown), layer, text, importance, classification, then the
``max_records`` ceiling.

Cleaning and scrubbing (:func:`scrub_op`) come first, once, for every text an op carries (the label or
id, the action and layer names, property keys and values, the paths of dropped credential keys): lone
surrogates (valid in JSON escapes, not in UTF-8) become U+FFFD (:func:`clean_text`, the one cleaning
rule, which the ingest pipeline applies to chat messages too), then :class:`CredentialScrubber` runs.
Minting (:func:`mint_scrubbed`) reads only the scrubbed op, so the record id hashes scrubbed text and
a refusal reason quotes scrubbed text. :func:`mint_operation` (the seed's) is the two in a row.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from memdedup.scope import Scope
from memdedup.scrub import CredentialScrubber, clean_text, redact

__all__ = [
    "CLASSIFICATION_KEYS",
    "DEDUP_LAYERS",
    "MEMORY_CATEGORIES",
    "NODE_ACTIONS",
    "NON_NODE_ACTIONS",
    "REFUSAL_CODES",
    "ExtractedMemory",
    "ExtractionRequest",
    "ExtractionResult",
    "MemoryLayer",
    "MemoryRecord",
    "MemoryScope",
    "ProviderFamily",
    "ScrubbedOp",
    "WriteRequest",
    "classification_identity",
    "clean_text",
    "derive_id",
    "importance_to_salience",
    "locate_ops",
    "mint_all",
    "mint_operation",
    "mint_scrubbed",
    "parse_extraction",
    "read_ops",
    "reason_code",
    "record_id",
    "resolve_layer",
    "retrievable_text",
    "scrub_op",
]

MemoryScope = Scope
"""The scope an extraction writes to (an alias of :class:`memdedup.scope.Scope`)."""


class MemoryLayer(StrEnum):
    """The five memory layers of the wire format (the values symfonic-core uses)."""

    SEMANTIC = "semantic"
    EPISODIC = "episodic"
    PROCEDURAL = "procedural"
    PROSPECTIVE = "prospective"
    WORKING = "working"


DEDUP_LAYERS = frozenset({MemoryLayer.SEMANTIC, MemoryLayer.PROCEDURAL})
"""Layers whose writes collapse into an existing memory; the others are append-only (as in symfonic-core)."""

NODE_ACTIONS = frozenset({"upsert_node", "store_skill", "set_trigger", "create_event"})
NON_NODE_ACTIONS = frozenset({"create_edge", "delete_node", "retract_node"})
NOOP_ACTION = "noop"
_NODE_ACTION_LIST = ", ".join(sorted(NODE_ACTIONS))


class ProviderFamily(StrEnum):
    """Which model family produced an extraction; stamped on each record's ``origin``."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    GOOGLE = "google"
    MISTRAL = "mistral"
    META = "meta"
    LOCAL = "local"
    UNKNOWN = "unknown"

    @classmethod
    def parse(cls, value: Any) -> ProviderFamily:
        """A family from a name or a model id (``"Anthropic"``, ``"gpt-4o"``); anything else is UNKNOWN."""
        if isinstance(value, ProviderFamily):
            return value
        if not isinstance(value, str):
            return cls.UNKNOWN
        name = value.strip().lower()
        for family in cls:
            if name == family.value:
                return family
        for prefixes, family in _FAMILY_PREFIXES:
            if name.startswith(prefixes):
                return family
        return cls.UNKNOWN


_FAMILY_PREFIXES: tuple[tuple[tuple[str, ...], ProviderFamily], ...] = (
    (("gpt", "o1", "o3", "o4", "azure-openai", "chatgpt"), ProviderFamily.OPENAI),
    (("claude",), ProviderFamily.ANTHROPIC),
    (("gemini", "vertex", "palm"), ProviderFamily.GOOGLE),
    (("mistral", "mixtral", "codestral"), ProviderFamily.MISTRAL),
    (("llama", "meta-"), ProviderFamily.META),
    (("ollama", "llamacpp", "vllm", "local"), ProviderFamily.LOCAL),
)

# ---------------------------------------------------------------------------------------------------
# Refusal reasons
# ---------------------------------------------------------------------------------------------------
NON_OBJECT_OP = "non_object_op"
MISSING_ACTION = "missing_action"
NON_NODE_ACTION = "non_node_action"
UNKNOWN_ACTION = "unknown_action"
UNKNOWN_LAYER = "unknown_layer"
NO_TEXT = "no_text"
BELOW_MIN_IMPORTANCE = "below_min_importance"
CLASSIFICATION_MISSING = "classification_missing"
CLASSIFICATION_INVALID = "classification_invalid"
OVER_MAX_RECORDS = "over_max_records"
INVALID_OP = "invalid_op"

REFUSAL_CODES: tuple[str, ...] = (
    NON_OBJECT_OP,
    MISSING_ACTION,
    NON_NODE_ACTION,
    UNKNOWN_ACTION,
    UNKNOWN_LAYER,
    NO_TEXT,
    BELOW_MIN_IMPORTANCE,
    CLASSIFICATION_MISSING,
    CLASSIFICATION_INVALID,
    OVER_MAX_RECORDS,
    INVALID_OP,
)
"""Every code a refusal reason starts with. ``invalid_op`` is a guard: an op whose minting raised."""


def reason_code(reason: str) -> str:
    """The stable code of a refusal reason; ``"noop"`` for the empty reason."""
    return reason.split(":", 1)[0] if reason else NOOP_ACTION


def _refuse(code: str, detail: str) -> str:
    return f"{code}: {detail}"


# ---------------------------------------------------------------------------------------------------
# Classification
# ---------------------------------------------------------------------------------------------------
CLASSIFICATION_KEYS = ("memory_category", "subject")
SUBJECT_MAX_CHARS = 80

_L = MemoryLayer
MEMORY_CATEGORIES: Mapping[str, frozenset[MemoryLayer]] = {
    # A stable fact about the subject: "the staging cluster runs Postgres 16".
    "fact": frozenset({_L.SEMANTIC}),
    # What the subject likes or wants: "prefers dark mode", "wants answers in British English".
    "preference": frozenset({_L.SEMANTIC, _L.PROCEDURAL}),
    # Who the subject is: name, role, location, time zone.
    "profile": frozenset({_L.SEMANTIC}),
    # A relation between the subject and another entity: "reports to Priya".
    "relationship": frozenset({_L.SEMANTIC}),
    # Settings, environments, versions, codenames: "deployment codename ATLAS-8642".
    "configuration": frozenset({_L.SEMANTIC, _L.PROCEDURAL}),
    # A standing instruction on how to work: "run ruff before committing".
    "instruction": frozenset({_L.PROCEDURAL}),
    # A multi-step procedure: "to release: bump, tag, publish".
    "workflow": frozenset({_L.PROCEDURAL}),
    # A reusable capability or technique.
    "skill": frozenset({_L.PROCEDURAL}),
    # Something that happened: "the 2.3 release was rolled back on Tuesday".
    "event": frozenset({_L.EPISODIC}),
    # A decision taken, as an event or as a standing fact.
    "decision": frozenset({_L.EPISODIC, _L.SEMANTIC}),
    # Something promised: "will send the benchmark numbers on Friday".
    "commitment": frozenset({_L.PROSPECTIVE}),
    # Something to bring up later.
    "reminder": frozenset({_L.PROSPECTIVE}),
    # Pending work.
    "task": frozenset({_L.PROSPECTIVE, _L.WORKING}),
    # Session-scoped context.
    "context": frozenset({_L.WORKING}),
}
del _L

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# clean_text (lone surrogates -> U+FFFD), the one cleaning rule, is memdedup.scrub's and re-exported here.


def _clean_tree(value: Any) -> Any:
    """:func:`clean_text` on every ``str`` of a JSON-like value, keys included."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, Mapping):
        return {_clean_tree(key): _clean_tree(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clean_tree(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_clean_tree(item) for item in value)
    return value


def classification_identity(
    properties: Mapping[str, Any], *, layer: Any = None
) -> tuple[tuple[str, str] | None, str]:
    """The ``(memory_category, subject)`` pair of an op's properties, or ``(None, reason)``.

    ``layer`` (a :class:`MemoryLayer` or its value), when given, must be one the category allows.
    """
    category = properties.get("memory_category")
    subject = properties.get("subject")
    has_category = category is not None and category != ""
    has_subject = subject is not None and subject != ""
    if not has_category and not has_subject:
        return None, _refuse(
            CLASSIFICATION_MISSING, "the op's properties carry no memory_category and no subject"
        )
    if not has_category:
        return None, _refuse(CLASSIFICATION_MISSING, "subject without memory_category (they come as a pair)")
    if not has_subject:
        return None, _refuse(CLASSIFICATION_MISSING, "memory_category without subject (they come as a pair)")
    if not isinstance(category, str):
        return None, _refuse(
            CLASSIFICATION_INVALID, f"memory_category is a {type(category).__name__}, not text"
        )
    if not isinstance(subject, str):
        return None, _refuse(CLASSIFICATION_INVALID, f"subject is a {type(subject).__name__}, not text")
    category_name = category.strip().lower()
    layers = MEMORY_CATEGORIES.get(category_name)
    if layers is None:
        return None, _refuse(
            CLASSIFICATION_INVALID,
            f"memory_category {redact(category, 60)!r} is not one of {', '.join(sorted(MEMORY_CATEGORIES))}",
        )
    if layer is not None:
        layer_value = getattr(layer, "value", layer)
        if layer_value not in {allowed.value for allowed in layers}:
            return None, _refuse(
                CLASSIFICATION_INVALID,
                f"memory_category {category_name!r} is not allowed on the {layer_value} layer "
                f"(only on {', '.join(sorted(allowed.value for allowed in layers))})",
            )
    subject_name = " ".join(subject.split()).lower()
    if not subject_name or len(subject_name) > SUBJECT_MAX_CHARS or _CONTROL.search(subject_name):
        return None, _refuse(
            CLASSIFICATION_INVALID,
            f"subject must be 1-{SUBJECT_MAX_CHARS} characters without control characters, "
            f"got {redact(subject, 100)!r}",
        )
    return (category_name, clean_text(subject_name)), ""


# ---------------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One memory as it is written: a derived id, its layer, the retrievable text, its owner."""

    record_id: str
    layer: MemoryLayer
    text: str
    scope_path: str
    salience: float = 0.5
    origin: str = ""


@dataclass(frozen=True)
class ExtractedMemory:
    """One candidate memory: the record, and what the store needs besides it."""

    record: MemoryRecord
    importance: float = 5.0
    action: str = "upsert_node"
    properties: dict[str, Any] = field(default_factory=dict)
    redactions: tuple[str, ...] = ()
    op_index: int = 0


@dataclass(frozen=True)
class ExtractionRequest:
    """One turn, and the ceilings the extraction of it must respect."""

    scope: MemoryScope
    user_message: str = ""
    assistant_message: str = ""
    turn: int = 0
    max_records: int = 50
    min_importance: float = 3.0


@dataclass(frozen=True)
class WriteRequest:
    """The records one turn's extraction asks to write."""

    scope: MemoryScope
    records: tuple[MemoryRecord, ...] = ()
    turn: int = 0


@dataclass(frozen=True)
class ExtractionResult:
    """What one extraction produced, and a reason for everything it did not.

    ``form`` is ``"<envelope>/<shape>"``: the envelope is ``bare``, ``fenced``, ``tagged``, ``embedded``,
    ``salvaged`` or ``object`` (already-parsed JSON); the shape is ``ops``, ``operations``,
    ``ops+operations``, ``list`` or ``single_op``; ``"none"`` when nothing could be read.
    ``op_count`` ops were found; each is in ``memories`` or ``dropped``, once.
    """

    scope: MemoryScope
    turn: int = 0
    memories: tuple[ExtractedMemory, ...] = ()
    dropped: tuple[tuple[str, str], ...] = ()
    family: ProviderFamily = ProviderFamily.UNKNOWN
    redactions: tuple[str, ...] = ()
    degraded: bool = False
    reason: str = ""
    form: str = "none"
    op_count: int = 0

    @property
    def records(self) -> tuple[MemoryRecord, ...]:
        return tuple(memory.record for memory in self.memories)

    def write_request(self) -> WriteRequest:
        """The post-response write this extraction implies."""
        return WriteRequest(scope=self.scope, records=self.records, turn=self.turn)

    def op_identifiers(self) -> list[str]:
        """Every op's identifier, minted and dropped together: ``op[0]`` .. ``op[op_count-1]``, once each."""
        minted = [f"op[{memory.op_index}]" for memory in self.memories]
        return sorted(minted + [identifier for identifier, _ in self.dropped], key=lambda s: int(s[3:-1]))


def derive_id(kind: str, turn: int, index: int, text: str) -> str:
    """``{kind}{turn}.{index}.{first 12 hex of sha256(text)}``: the one way memdedup builds a row id.

    ``kind`` is ``"x"`` for an extracted memory (:func:`record_id`) and ``"t"`` for a transcript row
    (:class:`memdedup.window.TranscriptRow`). Derived, not taken from the text (free-form model output;
    a ``/`` in it would forge an id), and derived from the scrubbed text, so a retried turn upserts its
    own row instead of a second copy, and the id never hashes a secret.
    """
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{kind}{turn}.{index}.{digest}"


def record_id(request: ExtractionRequest, index: int, text: str) -> str:
    """``x{turn}.{index}.{first 12 hex of sha256(text)}``: a deterministic, charset-safe upsert key
    (:func:`derive_id` of the scrubbed text)."""
    return derive_id("x", request.turn, index, text)


def importance_to_salience(importance: float) -> float:
    """The 1-10 importance grid mapped linearly onto salience 0.0-1.0 (clamped)."""
    if not math.isfinite(importance):
        importance = 5.0
    return round((min(max(importance, 1.0), 10.0) - 1.0) / 9.0, 6)


def _render_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, Mapping):
        parts = [f"{key}: {rendered}" for key, item in value.items() if (rendered := _render_value(item))]
        return ", ".join(parts)
    if isinstance(value, list | tuple):
        return ", ".join(rendered for item in value if (rendered := _render_value(item)))
    return str(value)


def retrievable_text(label: str, properties: Mapping[str, Any]) -> str:
    """The text recall renders: the label, then every property value the label does not already carry.

    A label such as ``deployment_codename`` names a field but not the fact; without its value
    (``ATLAS-8642``) recall would say a codename exists and drop it. Each value is tested on its own, so
    a name already in the label does not suppress the occupation next to it.
    """
    folded = label.casefold()
    parts = []
    for key, value in properties.items():
        rendered = _render_value(value)
        if rendered and rendered.casefold() not in folded:
            parts.append(f"{key}: {rendered}")
    return f"{label} ({'; '.join(parts)})" if parts else label


def resolve_layer(value: Any) -> MemoryLayer | None:
    """The layer an op names (case-insensitive), or None when it names none of the five."""
    if isinstance(value, MemoryLayer):
        return value
    if not isinstance(value, str):
        return None
    try:
        return MemoryLayer(value.strip().lower())
    except ValueError:
        return None


def _as_float(value: Any, *, default: float) -> float:
    if isinstance(value, bool) or value is None:
        return default
    try:
        if isinstance(value, int | float):
            number = float(value)
        elif isinstance(value, str):
            number = float(value.strip())
        else:
            return default
    except (ValueError, OverflowError):  # not a number, or an integer beyond any float: as infinity
        return default
    return number if math.isfinite(number) else default


def _op_text(op: Mapping[str, Any]) -> tuple[str, str, str]:
    """The op's text (its label, else its id), the key it came from, and, when it has none, why."""
    for key in ("label", "id"):
        value = op.get(key)
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, str) and value.strip():
            return value.strip(), key, ""
        if not isinstance(value, str):
            return "", key, f"the op's {key} is a {type(value).__name__}, not text"
    return "", "", "the op carries no memory text (no label or id)"


_RESERVED_PROPERTY_KEYS = frozenset({"scope_path"})
_TEXT_FIELDS = ("action", "layer", "label", "id", "importance")
# An action or layer that names one of these (any case and spacing) is a word of the wire format: no
# scrubber rule can match it, so it is not scrubbed (a fifth of the scrubbing of a turn, measured).
_NAME_FIELDS = frozenset({"action", "layer"})
_KNOWN_NAMES = NODE_ACTIONS | NON_NODE_ACTIONS | {NOOP_ACTION} | {layer.value for layer in MemoryLayer}


@dataclass(frozen=True)
class ScrubbedOp:
    """One op with every text it carries cleaned and scrubbed, once: what :func:`mint_scrubbed` reads.

    ``op`` is the scrubbed op (the fields minting reads: action, layer, label, id, importance,
    properties), or the op as it came when it is not an object (minting refuses it). ``text_redactions``
    holds, per text field (``label``, ``id``), the kinds redacted from it; ``property_redactions`` the
    kinds redacted from property keys and values, then ``KEY:<path>`` for each credential-named key
    dropped (its path scrubbed too) and ``RESERVED:<key>`` for each key a model may not set.
    ``error`` is set when scrubbing itself failed (a structure too deep to walk, say).
    """

    op: Any
    text_redactions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    property_redactions: tuple[str, ...] = ()
    error: str = ""


def scrub_op(op: Any, scrubber: CredentialScrubber) -> ScrubbedOp:
    """Clean and scrub every text of one op, once (see the module docstring). Never raises."""
    if not isinstance(op, Mapping):
        return ScrubbedOp(op)
    try:
        out: dict[str, Any] = {}
        text_redactions: dict[str, tuple[str, ...]] = {}
        for key in _TEXT_FIELDS:
            if key not in op:
                continue
            value = op[key]
            if key in ("label", "id") and isinstance(value, int | float) and not isinstance(value, bool):
                value = str(value)  # a number given as the text is the text
            if isinstance(value, str) and not (key in _NAME_FIELDS and value.strip().lower() in _KNOWN_NAMES):
                scrubbed = scrubber.scrub_text(clean_text(value))
                value = scrubbed.text
                text_redactions[key] = scrubbed.redactions
            out[key] = value
        raw_properties = op.get("properties")
        property_redactions: tuple[str, ...] = ()
        if isinstance(raw_properties, Mapping):
            # The owner of a row is the write scope, never a model-supplied property.
            reserved = [key for key in raw_properties if key in _RESERVED_PROPERTY_KEYS]
            kept = {key: value for key, value in raw_properties.items() if key not in _RESERVED_PROPERTY_KEYS}
            properties, dropped_keys, value_redactions = scrubber.scrub_properties(_clean_tree(kept))
            out["properties"] = properties
            property_redactions = (
                tuple(value_redactions)
                + tuple(f"KEY:{scrubber.redact(path)}" for path in dropped_keys)
                + tuple(f"RESERVED:{key}" for key in reserved)
            )
        return ScrubbedOp(out, text_redactions, property_redactions)
    except Exception as exc:  # a guard: one op that cannot be scrubbed never loses the others
        return ScrubbedOp(
            None, error=_refuse(INVALID_OP, f"the op could not be scrubbed ({type(exc).__name__})")
        )


def mint_scrubbed(
    scrubbed: ScrubbedOp, index: int, request: ExtractionRequest, family: ProviderFamily
) -> ExtractedMemory | tuple[str, str]:
    """Mint one memory from one scrubbed op (:func:`scrub_op`), or report why it produced none as
    ``(identifier, reason)``; an empty reason is a ``noop``. Nothing here scrubs: every text read is."""
    identifier = f"op[{index}]"
    if scrubbed.error:
        return identifier, scrubbed.error
    op = scrubbed.op
    if not isinstance(op, Mapping):
        return identifier, _refuse(NON_OBJECT_OP, f"the op is a {type(op).__name__}, not an object")
    raw_action = op.get("action")
    if raw_action is None or raw_action == "":
        return identifier, _refuse(
            MISSING_ACTION, f"the op names no action ({_NODE_ACTION_LIST} mint a memory)"
        )
    if not isinstance(raw_action, str):
        return identifier, _refuse(UNKNOWN_ACTION, f"the action is a {type(raw_action).__name__}, not a name")
    action = raw_action.strip().lower()
    if action == NOOP_ACTION:
        return identifier, ""
    if action in NON_NODE_ACTIONS:
        return identifier, _refuse(
            NON_NODE_ACTION,
            f"action {action!r} carries no memory text; only {_NODE_ACTION_LIST} mint a memory",
        )
    if action not in NODE_ACTIONS:
        return identifier, _refuse(
            UNKNOWN_ACTION,
            f"action {redact(raw_action, 60)!r} is not one of "
            f"{', '.join(sorted(NODE_ACTIONS | NON_NODE_ACTIONS))}",
        )
    raw_layer = op.get("layer", MemoryLayer.SEMANTIC.value)
    layer = resolve_layer(raw_layer)
    if layer is None:
        return identifier, _refuse(
            UNKNOWN_LAYER,
            f"layer {redact(raw_layer, 60)!r} is not one of "
            f"{', '.join(layer.value for layer in MemoryLayer)}",
        )
    text, text_key, missing = _op_text(op)
    if not text:
        return identifier, _refuse(NO_TEXT, missing)
    importance = _as_float(op.get("importance"), default=5.0)
    if importance < request.min_importance:
        return identifier, _refuse(
            BELOW_MIN_IMPORTANCE,
            f"importance {importance:g} is below the {request.min_importance:g} write threshold",
        )
    raw_properties = op.get("properties")
    properties = dict(raw_properties) if isinstance(raw_properties, Mapping) else {}
    identity, classification_error = classification_identity(properties, layer=layer)
    if classification_error or identity is None:
        return identifier, classification_error or _refuse(CLASSIFICATION_MISSING, "no classification")
    properties["memory_category"], properties["subject"] = identity
    # Rendered from scrubbed parts: the label and each value were scrubbed on their own, and the
    # joints (" (", "key: ", "; ") cannot complete a credential across two of them.
    rendered = retrievable_text(
        text, {key: value for key, value in properties.items() if key not in CLASSIFICATION_KEYS}
    )
    return ExtractedMemory(
        record=MemoryRecord(
            record_id=record_id(request, index, rendered),
            layer=layer,
            text=rendered,
            scope_path=request.scope.scope_path,
            salience=importance_to_salience(importance),
            origin=f"extraction:{family.value}",
        ),
        importance=min(max(importance, 1.0), 10.0),
        action=action,
        properties=properties,
        redactions=tuple(scrubbed.text_redactions.get(text_key, ())) + scrubbed.property_redactions,
        op_index=index,
    )


def mint_operation(
    op: Mapping[str, Any],
    index: int,
    request: ExtractionRequest,
    family: ProviderFamily,
    scrubber: CredentialScrubber,
) -> ExtractedMemory | tuple[str, str]:
    """Mint one memory from one operation, or report why it produced none as ``(identifier, reason)``.

    An empty reason means a ``noop``: the model saying there is nothing to remember is an answer, not
    a refusal. The seed's signature: :func:`scrub_op`, then :func:`mint_scrubbed`.
    """
    return mint_scrubbed(scrub_op(op, scrubber), index, request, family)


# ---------------------------------------------------------------------------------------------------
# Reading the model's output
# ---------------------------------------------------------------------------------------------------
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+\-]*)[ \t]*\n?(.*?)```", re.DOTALL)
_TAG_OPEN = re.compile(r"<([A-Za-z][A-Za-z0-9_\-:]*)(?:\s[^<>]*)?>")
_MAX_TAGS = 64
_OPS_KEY = re.compile(r"[\"'](ops|operations)[\"']\s*:\s*\[")
_MAX_EMBEDDED_STARTS = 256
_DECODER = json.JSONDecoder()


def _tagged_bodies(text: str) -> list[str]:
    """What ``<tag ...>`` ... ``</tag>`` pairs enclose, for the first ``_MAX_TAGS`` openings."""
    bodies = []
    for count, opening in enumerate(_TAG_OPEN.finditer(text)):
        if count >= _MAX_TAGS:
            break
        end = text.find(f"</{opening.group(1)}", opening.end())
        if end >= 0:
            bodies.append(text[opening.end() : end])
    return bodies


def _shape(value: Any, *, strict_list: bool) -> tuple[list[Any], str, str] | None:
    """``(ops, shape, problem)`` when ``value`` is an accepted shape of the wire format, else None."""
    if isinstance(value, Mapping):
        keys = [key for key in ("ops", "operations") if key in value]
        if keys:
            ops: list[Any] = []
            problems = []
            for key in keys:
                item = value[key]
                if isinstance(item, list):
                    ops.extend(item)
                elif isinstance(item, Mapping):
                    ops.append(item)
                elif item is not None:
                    problems.append(f"{key!r} is a {type(item).__name__}, not a list of ops")
            return ops, "+".join(keys), "; ".join(problems)
        if "action" in value:
            return [value], "single_op", ""
        return None
    if isinstance(value, list):
        if strict_list and value and not any(isinstance(item, Mapping) for item in value):
            return None
        return list(value), "list", ""
    return None


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOTHING


_NOTHING = object()


def _salvage(text: str) -> tuple[list[Any], str] | None:
    """The complete ops of an ``"ops": [`` array that never closes (a truncated or damaged output)."""
    match = _OPS_KEY.search(text)
    if match is None:
        return None
    ops: list[Any] = []
    position = match.end()
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text) or text[position] == "]":
            break
        try:
            op, position = _DECODER.raw_decode(text, position)
        except (ValueError, RecursionError):
            break
        ops.append(op)
    return ops, match.group(1)


def locate_ops(raw: Any) -> tuple[list[Any], str, str]:
    """Find the ops in a model's raw output: ``(ops, form, problem)``; a non-empty problem means degraded."""
    if isinstance(raw, bytes | bytearray):
        raw = bytes(raw).decode("utf-8", "replace")
    if raw is None:
        return [], "none", "there is no model output"
    if not isinstance(raw, str):
        shaped = _shape(raw, strict_list=False)
        if shaped is None:
            return [], "none", f"the model output is a {type(raw).__name__} with no 'ops' list"
        ops, shape, problem = shaped
        return ops, f"object/{shape}", problem
    text = raw.strip().lstrip("\ufeff")
    if not text:
        return [], "none", "the model output is empty"
    parsed_something = False
    candidates: list[tuple[str, str]] = [("bare", text)]
    candidates += [("fenced", m.group(2)) for m in _FENCE.finditer(text)]
    candidates += [("tagged", body) for body in _tagged_bodies(text)]
    for envelope, body in candidates:
        value = _loads(body.strip())
        if value is _NOTHING:
            continue
        parsed_something = True
        shaped = _shape(value, strict_list=False)
        if shaped is not None:
            ops, shape, problem = shaped
            return ops, f"{envelope}/{shape}", problem
    # JSON inside prose: an object with an ops list wins; a lone op object or a list of ops is read only
    # when no truncated "ops" array is there to salvage (it would be that array's first op).
    fallback: tuple[list[Any], str, str] | None = None
    starts = [i for i, char in enumerate(text) if char in "{["][:_MAX_EMBEDDED_STARTS]
    for start in starts:
        try:
            value, _end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        parsed_something = True
        shaped = _shape(value, strict_list=True)
        if shaped is None:
            continue
        ops, shape, problem = shaped
        if shape not in ("single_op", "list"):
            return ops, f"embedded/{shape}", problem
        if fallback is None:
            fallback = ops, f"embedded/{shape}", problem
    salvaged = _salvage(text)
    if salvaged is not None:
        ops, key = salvaged
        return (
            ops,
            f"salvaged/{key}",
            (
                f"the {key!r} array is truncated or malformed; "
                f"{len(ops)} complete op(s) before the damage were read"
            ),
        )
    if fallback is not None:
        return fallback
    if parsed_something:
        return [], "none", "the model output holds JSON, but no 'ops' list or op object"
    return [], "none", f"no JSON could be read from the model output ({len(text)} characters)"


_DETAIL_WIDTH = 300
"""The most characters of an exception's text a reason quotes (scrubbed first, then cut)."""


def read_ops(raw: Any, scrubber: CredentialScrubber) -> tuple[list[Any], str, str]:
    """:func:`locate_ops` that never raises: ``(ops, form, problem)``; a failure is a (scrubbed) problem."""
    try:
        return locate_ops(raw)
    except Exception as exc:  # a guard: reading the output must never break the turn
        detail = scrubber.redact(f"{type(exc).__name__}: {exc}", _DETAIL_WIDTH)
        return [], "none", f"the model output could not be read ({detail})"


def mint_all(
    scrubbed_ops: list[ScrubbedOp],
    request: ExtractionRequest,
    *,
    family: ProviderFamily = ProviderFamily.UNKNOWN,
    form: str = "none",
    problem: str = "",
) -> ExtractionResult:
    """Mint every scrubbed op in order into one :class:`ExtractionResult` (``form`` and ``problem`` as
    :func:`read_ops` gave them). Once ``request.max_records`` memories are minted, every further op that
    would mint one is dropped as ``over_max_records``."""
    memories: list[ExtractedMemory] = []
    dropped: list[tuple[str, str]] = []
    for index, scrubbed in enumerate(scrubbed_ops):
        try:
            outcome = mint_scrubbed(scrubbed, index, request, family)
        except Exception as exc:  # a guard: one op that breaks minting never loses the others
            # An exception's text may quote anything it was handed: it is scrubbed like input.
            outcome = (
                f"op[{index}]",
                _refuse(INVALID_OP, redact(f"{type(exc).__name__}: {exc}", _DETAIL_WIDTH)),
            )
        if isinstance(outcome, ExtractedMemory):
            if len(memories) >= request.max_records:
                dropped.append(
                    (
                        f"op[{index}]",
                        _refuse(
                            OVER_MAX_RECORDS, f"the turn already minted max_records={request.max_records}"
                        ),
                    )
                )
                continue
            memories.append(outcome)
        else:
            dropped.append(outcome)
    return ExtractionResult(
        scope=request.scope,
        turn=request.turn,
        memories=tuple(memories),
        dropped=tuple(dropped),
        family=family,
        redactions=tuple(kind for memory in memories for kind in memory.redactions),
        degraded=bool(problem),
        reason=problem,
        form=form,
        op_count=len(scrubbed_ops),
    )


def parse_extraction(
    raw: Any,
    request: ExtractionRequest,
    *,
    family: ProviderFamily | str = ProviderFamily.UNKNOWN,
    scrubber: CredentialScrubber | None = None,
) -> ExtractionResult:
    """Turn one model output into memories and reasons; never raises on any output.

    ``raw`` is the model's text (or already-parsed JSON): its ops are read (:func:`read_ops`), scrubbed
    (:func:`scrub_op`) and minted in order (:func:`mint_all`).
    """
    scrubber = scrubber if scrubber is not None else CredentialScrubber()
    ops, form, problem = read_ops(raw, scrubber)
    record = scrubber.for_record(ops)  # a secret found in one op is redacted in all
    scrubbed = [scrub_op(op, record) for op in ops]
    return mint_all(scrubbed, request, family=ProviderFamily.parse(family), form=form, problem=problem)
