"""Texts longer than an embedder's window are embedded in pieces it reads whole (issue 17 item 6)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from memory.embedders import local_model_available
from memory.embedders.base import (
    CHUNK_CHARS,
    Embedder,
    WindowedEmbedder,
    chunk_text,
    embed_chunked,
    embed_texts,
    split_at_tokens,
    text_chunks,
)
from memory.embedders.hashing import HashingEmbedder
from memory.errors import InvalidInputError


def _word_offsets(text: str) -> list[tuple[int, int]]:
    """One token per run of non-space characters (a stand-in tokenizer with exact offsets)."""
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def test_a_text_within_the_limit_stays_whole() -> None:
    text = "one two three"
    assert split_at_tokens(text, _word_offsets(text), 3) == [text]
    assert split_at_tokens("", [], 3) == []


def test_pieces_hold_at_most_the_limit_and_every_word_once() -> None:
    text = " ".join(f"w{i}" for i in range(23))
    pieces = split_at_tokens(text, _word_offsets(text), 5)
    assert [len(p.split()) for p in pieces] == [5, 5, 5, 5, 3]
    assert " ".join(pieces) == text


def test_cuts_fall_on_whitespace_and_newlines() -> None:
    text = "alpha beta\ngamma delta epsilon zeta"
    pieces = split_at_tokens(text, _word_offsets(text), 2)
    assert pieces == ["alpha beta", "gamma delta", "epsilon zeta"]


def test_subword_tokens_are_not_split_from_their_word_when_a_space_is_near() -> None:
    # "unbelievable" as three tokens: the cut goes before the word, not inside it.
    text = "it was unbelievable"
    offsets = [(0, 2), (3, 6), (7, 9), (9, 14), (14, 19)]
    assert split_at_tokens(text, offsets, 3) == ["it was", "unbelievable"]


def test_a_text_without_spaces_is_cut_at_token_starts() -> None:
    text = "abcdefghij"
    offsets = [(i, i + 1) for i in range(10)]
    assert split_at_tokens(text, offsets, 4) == ["abcd", "efgh", "ij"]


def test_zero_width_tokens_cannot_stall_the_split() -> None:
    text = "abc"
    offsets = [(0, 0)] * 6 + [(0, 3)]
    pieces = split_at_tokens(text, offsets, 2)
    assert "".join(pieces) == text


def test_a_bad_limit_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        split_at_tokens("a b", [(0, 1), (2, 3)], 0)


def test_an_embedder_without_a_window_gets_character_chunks() -> None:
    embedder = HashingEmbedder()
    assert not isinstance(embedder, WindowedEmbedder)
    text = " ".join(f"word{i}" for i in range(1500))
    assert text_chunks(embedder, text) == chunk_text(text)
    assert all(len(c) <= CHUNK_CHARS for c in text_chunks(embedder, text))


class _Windowed(HashingEmbedder):
    """The hashing embedder with a window of 4 words."""

    def split_for_window(self, text: str) -> list[str]:
        return split_at_tokens(text, _word_offsets(text), 4)


def test_a_windowed_embedder_embeds_the_mean_of_its_pieces() -> None:
    embedder = _Windowed()
    text = "red green blue cyan magenta yellow black white grey"
    assert text_chunks(embedder, text) == ["red green blue cyan", "magenta yellow black white", "grey"]
    pieces = embed_texts(embedder, text_chunks(embedder, text))
    mean = pieces.sum(axis=0)
    np.testing.assert_allclose(embed_chunked(embedder, [text])[0], mean / np.linalg.norm(mean), atol=1e-6)


def test_pieces_of_a_windowed_embedder_are_still_capped_by_characters() -> None:
    embedder = _Windowed()
    text = "x" * (CHUNK_CHARS * 2 + 10)  # one "word": one piece for the window, three by characters
    assert [len(c) for c in text_chunks(embedder, text)] == [CHUNK_CHARS, CHUNK_CHARS, 10]


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    from memory.embedders.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


@pytest.mark.model
@pytest.mark.skipif(not local_model_available(), reason="local model not installed")
class TestMiniLMWindow:
    def test_it_declares_its_window(self, minilm: Embedder) -> None:
        assert isinstance(minilm, WindowedEmbedder)

    def test_every_piece_fits_254_word_pieces(self, minilm: Embedder) -> None:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(minilm._tokenizer_file))  # type: ignore[attr-defined]
        tokenizer.no_truncation()
        text = " ".join(f"Alice mentioned item number {i} of her reading list, unforgettable." for i in range(60))
        pieces = text_chunks(minilm, text)
        counts = [len(tokenizer.encode(p, add_special_tokens=False).ids) for p in pieces]
        assert len(pieces) >= 3 and max(counts) <= 254
        assert " ".join(pieces) == text  # cut at spaces: nothing lost, nothing repeated

    def test_short_texts_are_one_piece(self, minilm: Embedder) -> None:
        assert text_chunks(minilm, "Jon: Thanks!") == ["Jon: Thanks!"]

    def test_the_tail_of_a_1500_character_text_reaches_its_vector(self, minilm: Embedder) -> None:
        head = " ".join(f"The weather report for day {i} said rain and wind." for i in range(30))
        assert 1_200 < len(head) < CHUNK_CHARS
        a, b = (head + " My sister adopted a grey kitten named Pixel.", head + " Quarterly revenue grew by 8 %.")
        whole_a, whole_b = embed_texts(minilm, [a, b])  # one piece each: the model reads the head only
        assert float(whole_a @ whole_b) > 0.9999
        chunked_a, chunked_b = embed_chunked(minilm, [a, b])
        assert float(chunked_a @ chunked_b) < 0.99

    def test_the_sync_audit_counts_the_pieces(self, minilm: Embedder, tmp_path: object) -> None:
        from pathlib import Path

        from memory import Memory

        text = " ".join(f"The weather report for day {i} said rain and wind." for i in range(30))
        assert len(text) < CHUNK_CHARS  # one piece by characters, two for MiniLM's window
        with Memory(f"sqlite:///{Path(str(tmp_path)) / 'm.db'}", embedder=minilm) as mem:
            message = mem.messages.append("t1", text)
            assert mem.run_sync().messages_done == 1
            (audit,) = [e for e in mem.history(message.id) if e.op == "embed"]
        assert audit.after is not None and audit.after["chunks"] == len(text_chunks(minilm, text)) == 2
