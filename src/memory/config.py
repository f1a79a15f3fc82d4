"""Settings: one frozen object built from explicit values, environment and config file.

Precedence: objects passed to ``Memory(...)`` > explicit settings > ``MEMORY_*``
environment variables > the config file > defaults. The environment and the
file are read when settings are built, never at import time.

Environment variables: ``MEMORY_CONFIG`` (config file path), ``MEMORY_DATABASE``
(alias ``MEMORY_DSN``),
``MEMORY_NAMESPACE``, ``MEMORY_EMBEDDER`` (provider name),
``MEMORY_EMBEDDER_OPTIONS`` (JSON object), ``MEMORY_RETRIEVAL`` (preset name),
``MEMORY_LLM`` (LLM provider name), ``MEMORY_LLM_OPTIONS`` (JSON object),
``MEMORY_CHAT_URL`` and ``MEMORY_CHAT_MODEL`` (the chat endpoint of ``memory chat``;
its API key is read from the variable named by ``chat.api_key_env``,
``MEMORY_CHAT_API_KEY`` by default, and never stored in the config file),
``MEMORY_MEDIA_DIR`` (where message media files go).
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory.errors import ConfigError, InvalidInputError
from memory.records import DEFAULT_MAX_CONTENT_CHARS
from memory.retrieval.config import RetrievalConfig, preset
from memory.retrieval.window import WINDOW

__all__ = [
    "ProviderSpec",
    "RerankSettings",
    "Limits",
    "ExtractionSettings",
    "ChatSettings",
    "ServerSettings",
    "FeedbackSettings",
    "Settings",
    "load_settings",
    "config_path",
    "default_data_dir",
    "write_config",
]

APP_NAME = "memory"


class ProviderSpec(BaseModel):
    """A provider by name with its options."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str
    options: dict[str, Any] = Field(default_factory=dict)


class RerankSettings(ProviderSpec):
    """The optional rerank stage (``[reranker]`` in the config): a provider, and how much of recall it sees."""

    top_n: int = Field(20, ge=2, le=200, description="fused candidates the reranker scores (the rest keep their order)")
    weight: float = Field(
        1.0, ge=0.0, le=1.0, description="share of the reranker's score in the final score (1: its order alone)"
    )


class Limits(BaseModel):
    """Input limits."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_content_chars: int = Field(DEFAULT_MAX_CONTENT_CHARS, ge=1)
    max_batch: int = Field(10_000, ge=1)
    embed_batch_size: int = Field(64, ge=1)


class ExtractionSettings(BaseModel):
    """How ``remember(..., extract=True)`` extracts and decides updates."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["auto", "inline", "background"] = Field(
        "auto", description="auto: inline with the heuristic LLM, background (queued) with a model"
    )
    decide: bool = Field(True, description="compare new facts with near neighbours (ADD/UPDATE/SUPERSEDE/...)")
    neighbours: int = Field(5, ge=1, le=50, description="near neighbours a new fact is compared with")
    entity_merge_similarity: float = Field(
        0.92, gt=0, le=1, description="cosine above which a new entity name becomes an alias of an existing one"
    )
    messages: bool = Field(
        False, description="the sync job stores facts from conversation messages (not secrets) as memories"
    )


class ChatSettings(BaseModel):
    """The OpenAI-compatible chat endpoint ``memory chat`` and MemoryAgent use (``[chat]`` in the config)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = "http://127.0.0.1:11434/v1"
    model: str | None = None
    api_key_env: str = "MEMORY_CHAT_API_KEY"
    timeout: float = Field(60.0, gt=0)
    budget: int = Field(4000, ge=64)
    max_steps: int = Field(8, ge=1)
    system: str | None = None


class ServerSettings(BaseModel):
    """Settings shared by ``memory serve`` (REST) and ``memory mcp --http`` (the ``[server]`` table).

    ``require_keys`` False is for local development only (the CLI refuses it
    on a non-loopback host). ``cors_origins`` empty means no CORS headers.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(8765, ge=0, le=65535)
    mcp_port: int = Field(8766, ge=0, le=65535)
    require_keys: bool = True
    # 8 MiB: a text at the content limit (500,000 characters) still fits as JSON-escaped UTF-8.
    max_body_bytes: int = Field(8_388_608, ge=1024)
    cors_origins: tuple[str, ...] = ()
    # 32, not 8: a request waiting for its shared embedding batch holds a thread, and with 8 a
    # MiniLM server formed batches of at most 8 while get/list requests queued behind them
    # (`memory bench serve`, README "Load").
    threads: int = Field(32, ge=1, le=256)
    # Seconds the server may spend warming the default namespace (its vector copy, the token
    # counter, lazy imports) before it accepts connections and says it is listening; the other
    # namespaces warm in the background. 0: accept at once and warm in the background only.
    warm_wait: float = Field(30.0, ge=0.0, le=600.0)


class FeedbackSettings(BaseModel):
    """The feedback loop (``[feedback]`` in the config; see docs/feedback.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    auto_promote: bool = Field(
        False, description="promote a candidate prompt version automatically when its measured reward is better"
    )
    min_count: int = Field(10, ge=2, description="scored conversations each version needs before auto-promotion")
    explore: float = Field(
        0.0, ge=0.0, le=1.0, description="share of new threads prompts.use gives the newest candidate version"
    )
    low_reward: float = Field(0.5, ge=0.0, le=1.0, description="below: a low-reward conversation")
    high_reward: float = Field(0.7, ge=0.0, le=1.0, description="at or above: a conversation that went well")
    max_rules: int = Field(10, ge=1, le=100, description="learned rules a suggested prompt keeps")
    reflect_batch: int = Field(50, ge=1, le=10_000, description="records one reflection pass examines")
    reflect_min_support: int = Field(
        3,
        ge=1,
        le=1000,
        description="conversations with the same outcome a reflection lesson needs before it is written",
    )


class Settings(BaseModel):
    """Everything a Memory needs to open a store."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    database: str = "sqlite:///memory.db"
    namespace: str = "default"
    embedder: ProviderSpec = ProviderSpec(provider="auto")
    llm: ProviderSpec = ProviderSpec(provider="heuristic")
    #: Optional reranker of the fused top-N in recall (memory.retrieval.rerank); none by default.
    reranker: RerankSettings | None = None
    extraction: ExtractionSettings = ExtractionSettings()
    retrieval: RetrievalConfig | str = "balanced"
    limits: Limits = Limits()
    chat: ChatSettings = ChatSettings()
    #: Where message media files go; default: ``<database file>.media`` next to a SQLite file.
    media_dir: str | None = None
    server: ServerSettings = ServerSettings()
    #: Memories on each side in a thread that form a memory's context window (0: none);
    #: see memory.retrieval.window.
    context_window: int = Field(WINDOW, ge=0, le=10)
    #: Which memories carry their extracted facts in their index key ("extracted": those stored
    #: with extract=; "all"; "off"); see memory.retrieval.fact_key.
    fact_keys: Literal["extracted", "all", "off"] = "extracted"
    feedback: FeedbackSettings = FeedbackSettings()

    def retrieval_config(self) -> RetrievalConfig:
        """The retrieval settings, resolving a preset name."""
        if isinstance(self.retrieval, RetrievalConfig):
            return self.retrieval
        try:
            return preset(self.retrieval)
        except InvalidInputError as exc:
            raise ConfigError(str(exc)) from None


def config_path() -> Path:
    """The config file: ``$MEMORY_CONFIG`` or ``config.toml`` in the user's config dir."""
    explicit = os.environ.get("MEMORY_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def default_data_dir() -> Path:
    """Where ``memory init`` puts the database by default (the user's data dir)."""
    return Path(platformdirs.user_data_dir(APP_NAME))


def _from_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc


def _from_env() -> dict[str, Any]:
    env: dict[str, Any] = {}
    if value := os.environ.get("MEMORY_DATABASE") or os.environ.get("MEMORY_DSN"):
        env["database"] = value  # MEMORY_DSN is an alias (e.g. postgresql://...); MEMORY_DATABASE wins
    if value := os.environ.get("MEMORY_NAMESPACE"):
        env["namespace"] = value
    if value := os.environ.get("MEMORY_RETRIEVAL"):
        env["retrieval"] = value
    if value := os.environ.get("MEMORY_MEDIA_DIR"):
        env["media_dir"] = value
    if value := os.environ.get("MEMORY_EMBEDDER"):
        spec: dict[str, Any] = {"provider": value}
        if raw := os.environ.get("MEMORY_EMBEDDER_OPTIONS"):
            try:
                spec["options"] = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"MEMORY_EMBEDDER_OPTIONS is not valid JSON: {exc}") from exc
        env["embedder"] = spec
    if value := os.environ.get("MEMORY_LLM"):
        llm: dict[str, Any] = {"provider": value}
        if raw := os.environ.get("MEMORY_LLM_OPTIONS"):
            try:
                llm["options"] = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"MEMORY_LLM_OPTIONS is not valid JSON: {exc}") from exc
        env["llm"] = llm
    if value := os.environ.get("MEMORY_RERANKER"):
        reranker: dict[str, Any] = {"provider": value}
        if raw := os.environ.get("MEMORY_RERANKER_OPTIONS"):
            try:
                reranker["options"] = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"MEMORY_RERANKER_OPTIONS is not valid JSON: {exc}") from exc
        env["reranker"] = reranker
    chat = {
        key: value
        for key, name in (("base_url", "MEMORY_CHAT_URL"), ("model", "MEMORY_CHAT_MODEL"))
        if (value := os.environ.get(name))
    }
    if chat:
        env["chat"] = chat
    return env


def load_settings(overrides: dict[str, Any] | None = None, *, path: Path | None = None) -> Settings:
    """Build Settings from defaults < config file < environment < ``overrides``.

    Raises ConfigError when a layer is malformed.
    """
    merged: dict[str, Any] = {}
    for layer in (_from_file(path or config_path()), _from_env(), overrides or {}):
        for key, value in layer.items():
            if value is None:
                continue
            tables = ("chat", "feedback", "reranker")
            if key in tables and isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = {**merged[key], **value}  # a [chat] table and MEMORY_CHAT_* combine
            else:
                merged[key] = value
    try:
        return Settings(**merged)
    except ValidationError as exc:
        raise ConfigError(f"invalid settings: {exc}") from exc


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise ConfigError(f"cannot write {type(value).__name__} to TOML")


def write_config(settings: dict[str, Any], path: Path | None = None) -> Path:
    """Write a config file holding ``settings`` (top-level scalars and one level of tables)."""
    target = path or config_path()
    lines: list[str] = []
    tables: list[tuple[str, dict[str, Any]]] = []
    for key, value in settings.items():
        if isinstance(value, dict):
            tables.append((key, value))
        elif value is not None:
            lines.append(f"{key} = {_toml_value(value)}")
    for name, table in tables:
        lines.append("")
        lines.append(f"[{name}]")
        nested: list[tuple[str, dict[str, Any]]] = []
        for key, value in table.items():
            if isinstance(value, dict):
                nested.append((f"{name}.{key}", value))
            else:
                lines.append(f"{key} = {_toml_value(value)}")
        for sub, values in nested:
            lines.append("")
            lines.append(f"[{sub}]")
            lines.extend(f"{k} = {_toml_value(v)}" for k, v in values.items())
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target
