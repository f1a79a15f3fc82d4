"""Pure helpers: text, hashing, ids, cursors, config, registry."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory import ConfigError, InvalidInputError
from memory.backends import backend_name_for
from memory.config import load_settings, write_config
from memory.ids import new_id
from memory.pagination import decode_cursor, encode_cursor
from memory.records import content_hash
from memory.registry import available, create, register
from memory.retrieval import text as text_module
from memory.retrieval.text import query_terms, words


def test_query_terms_strip_stopwords_and_syntax() -> None:
    assert query_terms("What does Alice like?") == ["alice", "like"]
    assert query_terms('"NEAR(a b)" OR col:value*') == ["near", "b", "col", "value"]
    assert query_terms("who is he") == ["who", "is", "he"]
    assert query_terms("Caroline's dog") == ["caroline", "dog"]
    assert query_terms("!!!") == []


def test_ascii_words_are_the_unicode_rule_s_words() -> None:
    """ASCII text takes a faster pattern; it must split exactly as the general one (tried on every ASCII mix)."""
    import random

    rng = random.Random(3)
    pieces = ["Don't", "it's", "rock'n'roll", "a_b", "x1", "42", " ", "-", "'", "''", "_", "Ab", "z9'", "'q", ".,;"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 12)))
        assert words(text) == text_module._WORD.findall(text.lower()), text
    assert words("Caroline’s dog") == ["caroline's", "dog"]  # not ASCII: the general rule, ’ read as '


def test_content_hash_normalises_whitespace_not_case() -> None:
    assert content_hash("a  b\n c") == content_hash("a b c")
    assert content_hash("A b") != content_hash("a b")


def test_ids_sort_by_time() -> None:
    ids = [new_id() for _ in range(1000)]
    assert ids == sorted(ids) and len(set(ids)) == 1000


def test_cursor_round_trip() -> None:
    at = datetime(2026, 5, 1, 10, 30, 15, 123456, tzinfo=UTC)
    assert decode_cursor(encode_cursor(at, "abc")) == (at, "abc")
    with pytest.raises(InvalidInputError):
        decode_cursor("%%%")


def test_database_urls() -> None:
    assert backend_name_for("memory://") == ("inmemory", {})
    assert backend_name_for("sqlite:///rel.db") == ("sqlite", {"path": "rel.db"})
    assert backend_name_for("sqlite:////abs/x.db") == ("sqlite", {"path": "/abs/x.db"})
    assert backend_name_for("postgresql://h/db")[0] == "postgres"
    with pytest.raises(ConfigError):
        backend_name_for("")


def test_settings_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_config({"database": "sqlite:///from-file.db", "namespace": "file-ns"}, tmp_path / "c.toml")
    monkeypatch.setenv("MEMORY_CONFIG", str(path))
    assert load_settings().database == "sqlite:///from-file.db"
    monkeypatch.setenv("MEMORY_DATABASE", "sqlite:///from-env.db")
    assert load_settings().database == "sqlite:///from-env.db"
    assert load_settings().namespace == "file-ns"
    assert load_settings({"database": "memory://"}).database == "memory://"
    monkeypatch.setenv("MEMORY_EMBEDDER", "hashing")
    monkeypatch.setenv("MEMORY_EMBEDDER_OPTIONS", '{"dim": 64}')
    assert load_settings().embedder.options == {"dim": 64}
    monkeypatch.setenv("MEMORY_EMBEDDER_OPTIONS", "{not json")
    with pytest.raises(ConfigError):
        load_settings()


def test_bad_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("database = [unclosed")
    monkeypatch.setenv("MEMORY_CONFIG", str(bad))
    with pytest.raises(ConfigError, match="cannot read config"):
        load_settings()
    bad.write_text('surprise = "key"')
    with pytest.raises(ConfigError, match="invalid settings"):
        load_settings()


def test_registry() -> None:
    assert {"minilm", "hashing", "openai", "ollama"} <= set(available("embedder"))
    with pytest.raises(ConfigError, match="unknown embedder"):
        create("embedder", "nope")
    with pytest.raises(ConfigError, match="bad options"):
        create("embedder", "hashing", {"dim": 2})
    with pytest.raises(ConfigError, match="bad options"):
        create("embedder", "hashing", {"colour": "red"})

    class Custom:
        model_name = "custom"
        dimension = 3

        def embed_batch(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0, 0.0] for _ in texts]

    register("embedder", "custom-test", Custom)
    assert create("embedder", "custom-test").model_name == "custom"
    assert create("embedder", "memory.embedders.hashing:HashingEmbedder").dimension == 384
