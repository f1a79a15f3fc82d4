"""The typed context that feature services receive instead of the `Memory` facade.

`Memory` builds one :class:`Core` when it opens a store and hands it to each
service (items, recall, messages, blocks, graph, tiers, feedback, extraction,
sync). A service takes from it only what it needs: the backend, the embedder,
the LLM, settings, the clock and the store's scope defaults. Nothing here
imports a service or the facade, so no service import leads back up to
``memory.memory``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from memory.backends.base import Backend
from memory.config import Settings
from memory.embedders.base import Embedder
from memory.errors import EmbeddingMismatchError, Error, InvalidInputError, ProviderError, StoreUnavailableError
from memory.filters import Filter
from memory.limits import MAX_METADATA_FILTERS
from memory.llms import LLM
from memory.records import check_datetime, check_kind, check_name, check_sensitivity, check_strings, check_tags
from memory.retrieval.config import RetrievalConfig, preset

if TYPE_CHECKING:
    from memory.backends.episodic import EpisodicStore
    from memory.backends.feedback import FeedbackStore
    from memory.backends.tiers import TierStore

__all__ = [
    "Core",
    "EmbeddingSpace",
    "HasCore",
    "core_of",
    "episodic_store",
    "feedback_store",
    "tier_store",
]


def episodic_store(backend: Backend) -> EpisodicStore:
    """The backend's conversation store. Raises StoreUnavailableError when it has none."""
    store = backend.episodic
    if store is None:
        raise StoreUnavailableError(
            f"the {backend.name} backend has no conversation store yet "
            "(messages, blocks, sync); use the sqlite, postgres or inmemory backend for these features"
        )
    return store


def feedback_store(backend: Backend) -> FeedbackStore:
    """The backend's feedback store. Raises StoreUnavailableError when the backend has none."""
    store = backend.feedback
    if store is None:
        raise StoreUnavailableError(
            f"the {backend.name} backend has no feedback store; use sqlite, postgres or inmemory"
        )
    return store


def tier_store(backend: Backend) -> TierStore:
    """The backend's tier store. Raises StoreUnavailableError when the backend has none."""
    store = backend.tiers
    if store is None:
        raise StoreUnavailableError(
            f"the {backend.name} backend has no tier store; use sqlite, postgres or inmemory for tiers"
        )
    return store


@dataclass
class EmbeddingSpace:
    """The embedder's vector space in the store: registered (and checked) once, on first need."""

    backend: Backend
    embedder: Embedder
    ready: bool = False

    def ensure(self, *, strict: bool) -> bool:
        """Register/check the embedder's vector space; False if its dimension is unknown yet.

        Raises EmbeddingMismatchError when the store was built with another
        model, and (with ``strict``) the embedder's ProviderError.
        """
        if self.ready:
            return True
        try:
            dim = self.embedder.dimension
        except ProviderError:
            if strict:
                raise
            return False
        model = self.embedder.model_name
        spaces = self.backend.vector_spaces()
        if spaces and all(s.model != model for s in spaces):
            known = ", ".join(f"{s.model} (dim {s.dim})" for s in spaces)
            raise EmbeddingMismatchError(
                f"this store was built with embedder {known}; the configured embedder is "
                f"{model} (dim {dim}). Configure the store's embedder, or export and import "
                "into a new store to re-embed."
            )
        self.backend.ensure_vector_space(model, dim)
        self.ready = True
        return True


@dataclass(frozen=True)
class Core:
    """What a feature service may use: storage, embedder, LLM, settings, clock and scope defaults."""

    backend: Backend
    embedder: Embedder
    llm: LLM
    settings: Settings
    retrieval: RetrievalConfig
    clock: Callable[[], datetime]
    space: EmbeddingSpace

    @property
    def namespace(self) -> str:
        """The store's default namespace."""
        return self.settings.namespace

    def now(self) -> datetime:
        """The current time by the store's clock (UTC)."""
        return self.clock()

    def ns(self, namespace: str | None) -> str:
        """``namespace`` checked, or the default one when None. Raises InvalidInputError."""
        if namespace is None:
            return self.settings.namespace
        value = check_name(namespace, "namespace", optional=False)
        assert value is not None
        return value

    def ensure_space(self, *, strict: bool) -> bool:
        """See :meth:`EmbeddingSpace.ensure`."""
        return self.space.ensure(strict=strict)

    def retrieval_config(self, retrieval: RetrievalConfig | str | None) -> RetrievalConfig:
        """The given config, a preset by name, or the store's default when None."""
        if retrieval is None:
            return self.retrieval
        if isinstance(retrieval, RetrievalConfig):
            return retrieval
        return preset(retrieval)

    def keys_on(self) -> bool:
        """Whether the backend indexes the key fields (window, time words): it can store windows."""
        return self.backend.windows is not None

    def windows_on(self) -> bool:
        """Whether this store keeps context windows (configured, and the backend can store them)."""
        return self.settings.context_window > 0 and self.keys_on()

    def filter(
        self,
        namespace: str | None = None,
        *,
        user: str | None = None,
        agent: str | None = None,
        thread: str | None = None,
        kinds: Iterable[str] | str | None = None,
        tags: Iterable[str] | None = None,
        tags_all: Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        clearance: str = "private",
        include_expired: bool = False,
        include_invalid: bool = False,
        ids: Sequence[str] | None = None,
    ) -> Filter:
        """Build a validated :class:`Filter` with this store's defaults and clock.

        Raises InvalidInputError for bad filter values.
        """
        if isinstance(kinds, str):
            kinds = [kinds]
        if kinds is not None:
            kinds = check_strings(kinds, "kinds")
        if metadata is not None:
            if not isinstance(metadata, Mapping):
                raise InvalidInputError("metadata filter must be a mapping of key to value")
            if len(metadata) > MAX_METADATA_FILTERS:
                raise InvalidInputError(f"metadata filter has more than {MAX_METADATA_FILTERS} keys")
            for key, value in metadata.items():
                if value is not None and not isinstance(value, (str, int, float, bool)):
                    raise InvalidInputError(
                        f"metadata filter {key!r} must compare to a string, number, boolean or null"
                    )
                if isinstance(value, float) and value != value:
                    raise InvalidInputError(f"metadata filter {key!r} is NaN")
        try:
            return Filter(
                namespace=self.ns(namespace),
                user=check_name(user, "user"),
                agent=check_name(agent, "agent"),
                thread=check_name(thread, "thread"),
                kinds=tuple(check_kind(k) for k in kinds) if kinds is not None else None,
                tags_any=check_tags(tags) if tags is not None else None,
                tags_all=check_tags(tags_all) if tags_all is not None else None,
                metadata=dict(metadata) if metadata is not None else None,
                created_after=check_datetime(since, "since"),
                created_before=check_datetime(until, "until"),
                ids=tuple(ids) if ids is not None else None,
                clearance=check_sensitivity(clearance),
                include_expired=bool(include_expired),
                include_invalid=bool(include_invalid),
                now=self.clock(),
            )
        except Error:
            raise
        except ValueError as exc:  # pydantic validation of the Filter model
            raise InvalidInputError(f"invalid filter: {exc}") from exc


class HasCore(Protocol):
    """An object that owns a store's :class:`Core` (a ``Memory``)."""

    @property
    def core(self) -> Core:
        """The store's service context."""


def core_of(store: Core | HasCore) -> Core:
    """The :class:`Core` of ``store``: itself, or the one a ``Memory`` owns."""
    return store if isinstance(store, Core) else store.core


def open_core(
    settings: Settings,
    *,
    backend: Backend | None,
    embedder: Embedder | None,
    llm: LLM | None,
    retrieval: RetrievalConfig | None,
    clock: Callable[[], datetime],
) -> tuple[Core, Callable[[], None]]:
    """Open what ``settings`` name and is not given; returns the Core and the function that closes it.

    The closer closes the backend, and the embedder and LLM only when they
    were created here. On a failure (ConfigError, EmbeddingMismatchError) the
    backend is closed before the error propagates.
    """
    from memory.backends import open_backend
    from memory.embedders import create_embedder
    from memory.embedders.batching import batching
    from memory.llms import create_llm

    opened = backend or open_backend(settings.database)
    try:
        # Concurrent callers of one store share embedder calls (memory.embedders.batching).
        chosen = batching(
            embedder if embedder is not None else create_embedder(settings.embedder.provider, settings.embedder.options)
        )
        space = EmbeddingSpace(opened, chosen)
        space.ensure(strict=False)
        model = llm if llm is not None else create_llm(settings.llm.provider, settings.llm.options)
    except BaseException:
        opened.close()
        raise
    core = Core(
        backend=opened, embedder=chosen, llm=model, settings=settings, clock=clock, space=space,
        retrieval=retrieval if retrieval is not None else settings.retrieval_config(),
    )  # fmt: skip
    owned = [x for x, given in ((chosen, embedder), (model, llm)) if given is None]

    def close() -> None:
        opened.close()
        for thing in owned:
            closer = getattr(thing, "close", None)
            if callable(closer):
                closer()

    return core, close
