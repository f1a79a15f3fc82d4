"""`mem.messages`: threads and messages — append, read, search, archive, clear.

Appending never waits for the embedder (messages arrive ``pending``; the sync
job embeds them) unless ``embed=True`` is given. Search is hybrid like
recall: the messages' own BM25 index and vectors, fused by the same weighted
RRF (:mod:`memory.retrieval.fusion`), blended with recency.
"""

from __future__ import annotations

import builtins
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory import limits
from memory.backends.episodic import EpisodicStore
from memory.embedders.base import embed_query
from memory.episodic.media import MediaStore
from memory.episodic.types import (
    CONTENT_TYPES,
    MediaRef,
    Message,
    MessageExtraction,
    MessageHit,
    MessageQuery,
    ThreadInfo,
)
from memory.errors import Error, InvalidInputError, NotFoundError, ProviderError, StoreUnavailableError
from memory.ids import new_id
from memory.records import (
    check_datetime,
    check_encodable,
    check_metadata,
    check_name,
    check_query,
    check_seconds,
    check_sensitivity,
    check_tags,
    normalise_content,
    offset_time,
)
from memory.retrieval.config import RetrievalConfig, preset
from memory.retrieval.fusion import fuse, recency_factor
from memory.retrieval.quantity import quantity_factors
from memory.retrieval.rerank import RerankStage
from memory.retrieval.speaker import turn_factors
from memory.retrieval.text import feedback_applies, feedback_terms, query_terms
from memory.services import Core, episodic_store

if TYPE_CHECKING:
    from memory.backends.base import Backend

#: Called with messages just stored (the tiers' auto pages); set by the facade.
OnStored = Callable[[builtins.list[Message]], object]
#: Extracts facts from stored messages (``memory.episodic.extract.extract_messages`` bound to a store).
ExtractMessages = Callable[[Sequence[Message]], builtins.list[MessageExtraction]]

__all__ = ["Messages", "episodic_store", "default_media_dir", "ROLE_PATTERN"]

log = logging.getLogger(__name__)

ROLE_PATTERN = re.compile(limits.ROLE_PATTERN)
MAX_RECENT = 10_000
_FIELDS = {
    "role", "speaker", "user", "agent", "namespace", "content_type", "media", "media_name", "mime", "uri",
    "tags", "metadata", "sensitivity", "ttl", "expires_at", "created_at",
}  # fmt: skip


def default_media_dir(backend: Backend, configured: str | None) -> Path:
    """``configured``, else ``<database file>.media`` next to a file database, else the user data dir."""
    if configured:
        return Path(configured).expanduser()
    path = backend.path
    if path is not None:
        base = Path(path)
        return base.with_name(base.name + ".media")
    import platformdirs

    return Path(platformdirs.user_data_dir("memory")) / "media"


def _positive(value: object, what: str, maximum: int = MAX_RECENT) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidInputError(f"{what} must be an integer from 1 to {maximum}, got {value!r}")
    return value


#: Channels and lexical fields of a retrieval preset that message search can serve.
MESSAGE_CHANNELS = frozenset({"vector", "lexical", "feedback"})
_NOTED: set[tuple[str, ...]] = set()


def unsupported_parts(config: RetrievalConfig) -> list[str]:
    """What of ``config`` message search cannot do: the graph and context channels, window and time fields.

    Messages are searched on their own text and vector only; these parts
    are left out of the fusion (the others keep their weights).
    """
    parts = [f"{c} channel" for c in config.channels if c not in MESSAGE_CHANNELS]
    parts += [
        f"{f} field" for f, w in config.fields.items() if f != "content" and w > 0 and "lexical" in config.channels
    ]
    if config.window_vectors and "vector" in config.channels and "context" not in config.channels:
        parts.append("window vectors")
    return parts


def _note_unsupported(config: RetrievalConfig) -> None:
    """Log (once per process and set of parts) what of ``config`` message search leaves out."""
    parts = tuple(unsupported_parts(config))
    if parts and parts not in _NOTED:
        _NOTED.add(parts)
        log.info("messages.search searches own text and vectors; left out of this preset: %s", ", ".join(parts))


class Messages:
    """Conversation history of a :class:`~memory.Memory` (``mem.messages``)."""

    def __init__(
        self,
        core: Core,
        *,
        on_stored: OnStored | None = None,
        extract: ExtractMessages | None = None,
        rerank: RerankStage | None = None,
    ) -> None:
        """Bind to the store's ``core``; ``on_stored`` sees appended messages, ``extract`` extracts facts,
        ``rerank`` (the store's rerank stage) reorders search's top N as it does recall's."""
        self._rerank = rerank
        self._core = core
        self._on_stored = on_stored
        self._extract = extract
        self._media: MediaStore | None = None

    @property
    def store(self) -> EpisodicStore:
        """The backend's episodic store (StoreUnavailableError if it has none)."""
        return episodic_store(self._core.backend)

    @property
    def media_store(self) -> MediaStore:
        """Where media files go: ``media_dir`` from settings, else next to the database."""
        if self._media is None:
            configured = getattr(self._core.settings, "media_dir", None)
            self._media = MediaStore(default_media_dir(self._core.backend, configured))
        return self._media

    # -- writing -----------------------------------------------------------
    def _build(self, thread: object, content: object, fields: Mapping[str, Any], now: datetime) -> Message:
        unknown = set(fields) - _FIELDS
        if unknown:
            raise InvalidInputError(f"unknown field(s) {sorted(unknown)} for a message")
        thread_name = check_name(thread, "thread", optional=False)
        role = fields.get("role", "user")
        if not isinstance(role, str) or not ROLE_PATTERN.fullmatch(role):
            raise InvalidInputError(f"role {role!r} is not valid: use a lowercase word like user, assistant, system")
        content_type = fields.get("content_type", "text")
        if content_type not in CONTENT_TYPES:
            raise InvalidInputError(f"content_type must be one of {', '.join(CONTENT_TYPES)}; got {content_type!r}")
        limit = self._core.settings.limits.max_content_chars
        media: MediaRef | None = None
        raw_media = fields.get("media")
        uri = fields.get("uri")
        if content_type == "text":
            if raw_media is not None or uri is not None:
                raise InvalidInputError(
                    "a text message takes no media; set content_type to image, audio, file or snapshot"
                )
            text = normalise_content(content, max_chars=limit)
        else:
            if content is None or (isinstance(content, str) and not content.strip()):
                text = ""
            else:
                text = normalise_content(content, max_chars=limit)
            if isinstance(raw_media, MediaRef):
                media = raw_media
            elif raw_media is not None:
                media = self.media_store.put(raw_media, name=fields.get("media_name"), mime=fields.get("mime"))
            if uri is not None:
                if not isinstance(uri, str) or not uri.strip():
                    raise InvalidInputError("uri must be a non-empty string")
                check_encodable(uri, "uri")
                media = (media or MediaRef(name=fields.get("media_name"), mime=fields.get("mime"))).model_copy(
                    update={"uri": uri}
                )
            if media is None:
                raise InvalidInputError(f"a {content_type} message needs media (bytes or a file path) or a uri")
        expires_at = check_datetime(fields.get("expires_at"), "expires_at")
        if fields.get("ttl") is not None:
            if expires_at is not None:
                raise InvalidInputError("give ttl or expires_at, not both")
            expires_at = offset_time(now, check_seconds(fields["ttl"], "ttl"), "ttl")
        speaker = fields.get("speaker")
        return Message(
            id=new_id(),
            namespace=self._core.ns(fields.get("namespace")),
            thread=thread_name,
            role=role,
            speaker=check_name(speaker, "speaker"),
            user=check_name(fields.get("user"), "user"),
            agent=check_name(fields.get("agent"), "agent"),
            content=text,
            content_type=content_type,
            media=media,
            tags=check_tags(fields.get("tags")),
            metadata=check_metadata(fields.get("metadata")),
            sensitivity=check_sensitivity(fields.get("sensitivity", "normal")),
            created_at=check_datetime(fields.get("created_at"), "created_at") or now,
            expires_at=expires_at,
            embedding_status="pending",
        )

    def append(
        self, thread: str, content: str | None = None, *, embed: bool = False, extract: bool = False, **fields: Any
    ) -> Message:
        """Add a message to ``thread`` and return it with its turn number.

        Fields: role ('user'), speaker, user, agent, namespace, content_type
        (text | image | audio | file | snapshot), media (bytes, a file path or
        a MediaRef; stored by content hash), media_name, mime, uri (an
        external/durable reference, e.g. a snapshot), tags, metadata,
        sensitivity, ttl or expires_at, created_at. The message is stored
        ``pending`` for the sync job; ``embed=True`` embeds it now (an
        embedder failure still stores it, ``failed`` with the error, and the
        sync job retries it). ``extract=True`` stores the facts the configured
        LLM (or the heuristic extractor) finds in it now, as memories citing the
        message (:mod:`memory.episodic.extract`; never for secrets; an LLM
        failure is logged and the message stays stored — retry with
        :meth:`extract_facts`). Without it, the sync job extracts when
        ``settings.extraction.messages`` is on. Raises InvalidInputError.
        """
        return self.append_many([{"thread": thread, "content": content, **fields}], embed=embed, extract=extract)[0]

    def append_many(
        self, entries: Sequence[Mapping[str, Any]], *, embed: bool = False, extract: bool = False, **defaults: Any
    ) -> builtins.list[Message]:
        """Append several messages in one transaction (each a mapping with thread, content and fields)."""
        if not isinstance(extract, bool):
            raise InvalidInputError(f"extract must be True or False, got {extract!r}")
        if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
            raise InvalidInputError("entries must be a list of mappings with thread and content")
        now = self._core.now()
        built = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, Mapping):
                raise InvalidInputError("each entry must be a mapping with thread and content")
            fields = {**defaults, **entry}
            thread = fields.pop("thread", None)
            content = fields.pop("content", None)
            try:
                built.append(self._build(thread, content, fields, now))
            except InvalidInputError as exc:
                if len(entries) == 1:
                    raise
                head = " ".join(content[:40].split()) + "…" if isinstance(content, str) else "?"
                raise InvalidInputError(f"entry {index} of the batch (thread {thread!r}, {head!r}): {exc}") from exc
        store = self.store
        stored = store.append_messages(built)
        if embed and stored:
            from memory.episodic.sync import embed_messages

            embed_messages(self._core, store, stored)
            stored = [store.get_messages(m.namespace, [m.id])[0] for m in stored]
        if (
            stored
            and self._on_stored is not None
            and self._core.backend.tiers is not None
            and any(m.role == "assistant" and m.agent for m in stored)
        ):
            try:  # the agent's tiers, when on (auto_pages), get a page per user+assistant pair
                self._on_stored(stored)
            except Error as exc:
                log.warning("tier pages from messages failed (messages kept): %s", exc)
        if extract and stored:
            for report in self._extract_messages(stored):
                if report.status == "failed":
                    log.warning("extraction of message %s failed (message kept): %s", report.message_id, report.error)
        return stored

    def extract_facts(
        self, message_ids: Sequence[str], *, namespace: str | None = None
    ) -> builtins.list[MessageExtraction]:
        """Extract facts from stored messages now (see :mod:`memory.episodic.extract`); one report per message.

        Unknown ids are left out. Raises InvalidInputError for bad ids.
        """
        if isinstance(message_ids, str) or not isinstance(message_ids, Sequence):
            raise InvalidInputError("message_ids must be a list of message ids")
        ids = [str(check_name(i, "message id", optional=False)) for i in message_ids]
        found = self.store.get_messages(self._core.ns(namespace), ids) if ids else []
        return self._extract_messages(found)

    def _extract_messages(self, messages: Sequence[Message]) -> builtins.list[MessageExtraction]:
        if self._extract is None:
            raise StoreUnavailableError("fact extraction from messages is not wired to this message log")
        return self._extract(messages)

    # -- reading -----------------------------------------------------------
    def query(
        self,
        *,
        namespace: str | None = None,
        thread: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        roles: Sequence[str] | None = None,
        after_turn: int | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        clearance: str = "private",
        include_expired: bool = False,
    ) -> MessageQuery:
        """A validated :class:`MessageQuery` with this store's defaults and clock."""
        if after_turn is not None and (isinstance(after_turn, bool) or not isinstance(after_turn, int)):
            raise InvalidInputError(f"after_turn must be an integer, got {after_turn!r}")
        if after_turn is not None and abs(after_turn) > limits.MAX_TURN:
            raise InvalidInputError(f"after_turn must be a turn number (at most {limits.MAX_TURN}), got {after_turn}")
        if roles is not None:
            roles = [roles] if isinstance(roles, str) else list(roles)
            for role in roles:
                if not isinstance(role, str) or not ROLE_PATTERN.fullmatch(role):
                    raise InvalidInputError(f"role {role!r} is not valid")
        return MessageQuery(
            namespace=self._core.ns(namespace),
            thread=check_name(thread, "thread"),
            user=check_name(user, "user"),
            agent=check_name(agent, "agent"),
            roles=tuple(roles) if roles is not None else None,
            after_turn=after_turn,
            created_after=check_datetime(since, "since"),
            created_before=check_datetime(until, "until"),
            clearance=check_sensitivity(clearance),
            include_expired=bool(include_expired),
            now=self._core.now(),
        )

    def recent(
        self, thread: str, n: int = 20, *, namespace: str | None = None, clearance: str = "private"
    ) -> builtins.list[Message]:
        """The last ``n`` visible messages of ``thread``, oldest first."""
        n = _positive(n, "n")
        query = self.query(
            namespace=namespace, thread=check_name(thread, "thread", optional=False), clearance=clearance
        )
        return list(reversed(self.store.list_messages(query, n, newest_first=True)))

    def get_thread(
        self,
        thread: str,
        *,
        namespace: str | None = None,
        after_turn: int | None = None,
        limit: int = 1000,
        clearance: str = "private",
    ) -> builtins.list[Message]:
        """The visible hot messages of ``thread`` in turn order (after ``after_turn``), at most ``limit``."""
        limit = _positive(limit, "limit")
        query = self.query(
            namespace=namespace, thread=check_name(thread, "thread", optional=False), after_turn=after_turn,
            clearance=clearance,
        )  # fmt: skip
        return self.store.list_messages(query, limit)

    def get(self, message_id: str, *, namespace: str | None = None, clearance: str = "private") -> Message:
        """One message (hot or archived). Raises NotFoundError (also when expired, or secret without clearance)."""
        check_name(message_id, "message id", optional=False)
        ns = self._core.ns(namespace)
        found = self.store.get_messages(ns, [message_id], include_archived=True)
        query = self.query(namespace=ns, clearance=clearance)
        from memory.episodic.query import message_matches

        if not found or not message_matches(query, found[0]):
            raise NotFoundError(f"no message {message_id!r} in namespace {ns!r}")
        return found[0]

    def threads(
        self, *, namespace: str | None = None, user: str | None = None, agent: str | None = None, limit: int = 100
    ) -> builtins.list[ThreadInfo]:
        """Threads of the namespace, most recently active first."""
        return self.store.threads(
            self._core.ns(namespace), user=check_name(user, "user"), agent=check_name(agent, "agent"),
            limit=_positive(limit, "limit"),
        )  # fmt: skip

    def archived(self, thread: str | None = None, *, namespace: str | None = None) -> builtins.list[Message]:
        """Archived messages (one thread, or all), in (thread, turn) order."""
        return list(self.store.iter_archived(self._core.ns(namespace), check_name(thread, "thread")))

    def media(self, message: Message) -> bytes:
        """The bytes of a message's stored media file. Raises NotFoundError."""
        if message.media is None:
            raise NotFoundError(f"message {message.id} has no media")
        return self.media_store.read(message.media)

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        namespace: str | None = None,
        thread: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        roles: Sequence[str] | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        clearance: str = "private",
        retrieval: RetrievalConfig | str | None = None,
    ) -> builtins.list[MessageHit]:
        """Messages most relevant to ``query``, best first: BM25 + vectors fused by weighted RRF, plus recency.

        Only embedded messages take part in the vector channel; an embedder
        failure leaves the lexical results. Raises InvalidInputError.
        """
        text = check_query(query)
        limit = _positive(limit, "limit", 1000)
        if retrieval is None:
            config = self._core.retrieval
        elif isinstance(retrieval, RetrievalConfig):
            config = retrieval
        else:
            config = preset(retrieval)
        q = self.query(
            namespace=namespace, thread=thread, user=user, agent=agent, roles=roles, since=since, until=until,
            clearance=clearance,
        )  # fmt: skip
        k = max(config.candidates, limit)
        store = self.store
        _note_unsupported(config)
        results = {}
        if "lexical" in config.channels:
            terms = query_terms(text)
            results["lexical"] = store.search_messages_lexical(q, terms, k)
            if "feedback" in config.channels and results["lexical"]:
                top = [h.id for h in results["lexical"][: config.feedback_docs]]
                texts = [m.content for m in store.get_messages(q.namespace, top)]
                extra = feedback_terms(texts, terms, config.feedback_terms)
                if extra and feedback_applies(texts, config.feedback_max_words):
                    results["feedback"] = store.search_messages_lexical(q, terms + extra, k, exact_only=True)
        if "vector" in config.channels:
            try:
                if self._core.ensure_space(strict=True):
                    vector = embed_query(self._core.embedder, text)
                    results["vector"] = store.search_messages_vector(q, self._core.embedder.model_name, vector, k)
            except ProviderError as exc:
                log.warning("vector channel skipped, embedder failed: %s", exc)
        fused = fuse(results, config.weights, config.rrf_k)
        found = {m.id: m for m in store.get_messages(q.namespace, [c.id for c in fused])}
        turns = {m.id: (m.role, m.speaker) for m in found.values()}
        factors = turn_factors(text, turns, config.speaker_penalty, config.named_speaker_penalty)
        amounts = quantity_factors(text, {m.id: m.content for m in found.values()}, config.quantity_penalty)
        hits = []
        for position, candidate in enumerate(fused):
            message = found.get(candidate.id)
            if message is None:
                continue
            recency = recency_factor(message.created_at, q.now, config.recency_half_life_days)
            score = (1.0 - config.recency_weight) * candidate.fusion + config.recency_weight * recency
            factor = factors.get(message.id)
            if factor is not None:  # another side's or speaker's turn than the question asks about (speaker.py)
                score *= factor
            amount = amounts.get(message.id)
            if amount is not None:  # the question asks for an amount and this turn states none (quantity.py)
                score *= amount
            hits.append((score, position, MessageHit(message=message, score=score, channels=candidate.channels)))
        hits.sort(key=lambda h: (-round(h[0], 12), h[1]))
        if self._rerank is not None:
            hits = self._reranked(text, hits)
        return [hit for _, _, hit in hits[:limit] if hit.score >= config.min_score]

    def _reranked(
        self, text: str, hits: builtins.list[tuple[float, int, MessageHit]]
    ) -> builtins.list[tuple[float, int, MessageHit]]:
        """The configured rerank stage on the ranked hits' top N, as recall has it; the rest keep their order."""
        assert self._rerank is not None
        blended = self._rerank.blended(text, [h.message.content for _, _, h in hits], [s for s, _, _ in hits])
        if blended is None:
            return hits
        head = [
            (score, position, hit.model_copy(update={"score": score}))
            for score, (_, position, hit) in zip(blended, hits, strict=False)
        ]
        head.sort(key=lambda h: (-round(h[0], 12), h[1]))
        return head + hits[len(head) :]

    # -- retention ---------------------------------------------------------
    def _selection(
        self, ns: str, thread: str, keep_last: int | None, older_than: object
    ) -> tuple[int | None, datetime | None]:
        if keep_last is None and older_than is None:
            raise InvalidInputError(
                "say what to select: keep_last=N and/or older_than=(seconds | timedelta | datetime)"
            )
        before_turn: int | None = None
        if keep_last is not None:
            if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0:
                raise InvalidInputError(f"keep_last must be a non-negative integer, got {keep_last!r}")
            query = MessageQuery(
                namespace=ns, thread=thread, clearance="secret", include_expired=True, now=self._core.now()
            )
            if keep_last == 0:
                before_turn = 2**62
            else:
                newest = self.store.list_messages(query, keep_last, newest_first=True)
                before_turn = newest[-1].turn if len(newest) == keep_last else None
        cutoff: datetime | None = None
        if older_than is not None:
            if isinstance(older_than, (datetime, str)):
                cutoff = check_datetime(older_than, "older_than")
            else:
                cutoff = offset_time(self._core.now(), -check_seconds(older_than, "older_than"), "older_than")
        return before_turn, cutoff

    def archive(
        self, thread: str, *, keep_last: int | None = None, older_than: object = None, namespace: str | None = None
    ) -> int:
        """Move older messages of ``thread`` out of the hot tables (kept for export); returns how many.

        ``keep_last=N`` keeps the newest N; ``older_than`` (seconds, timedelta
        or a datetime) archives messages created before it; both: either rule.
        """
        ns = self._core.ns(namespace)
        name = check_name(thread, "thread", optional=False)
        before_turn, cutoff = self._selection(ns, name, keep_last, older_than)  # type: ignore[arg-type]
        if before_turn is None and cutoff is None:
            return 0
        return self.store.archive_messages(ns, name, before_turn=before_turn, older_than=cutoff, at=self._core.now())  # type: ignore[arg-type]

    def delete(self, message_id: str, *, namespace: str | None = None) -> bool:
        """Delete one message (hot or archived) for good; False when the namespace holds no such message."""
        check_name(message_id, "message id", optional=False)
        return self.store.delete_message(self._core.ns(namespace), message_id)

    def clear(
        self, thread: str, *, keep_last: int | None = None, older_than: object = None, namespace: str | None = None
    ) -> int:
        """Delete older messages of ``thread`` for good (hot and archived); same selection as :meth:`archive`."""
        ns = self._core.ns(namespace)
        name = check_name(thread, "thread", optional=False)
        before_turn, cutoff = self._selection(ns, name, keep_last, older_than)  # type: ignore[arg-type]
        if before_turn is None and cutoff is None:
            return 0
        return self.store.delete_messages(ns, name, before_turn=before_turn, older_than=cutoff)  # type: ignore[arg-type]
