"""Pure helpers of the MiniLM embedder (no model needed)."""

from __future__ import annotations

import numpy as np
import pytest

from memory.embedders.minilm import length_groups, mean_pool
from memory.errors import ConfigError


def test_length_groups_cover_every_index_once_shortest_first() -> None:
    lengths = [30, 5, 31, 6, 5, 100, 7, 33]
    groups = length_groups(lengths, max_size=3, slack=0.1)
    flat = [i for group in groups for i in group]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)
    assert all(len(group) <= 3 for group in groups)
    for group in groups:
        shortest = min(lengths[i] for i in group)
        assert max(lengths[i] for i in group) <= shortest * 1.1 + 1


def test_length_groups_edge_cases() -> None:
    assert length_groups([]) == []
    assert length_groups([4]) == [[0]]
    assert length_groups([8] * 40, max_size=16) == [list(range(16)), list(range(16, 32)), list(range(32, 40))]


def test_mean_pool_ignores_padding_and_normalises() -> None:
    hidden = np.array([[[1.0, 0.0], [3.0, 0.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]], dtype=np.int64)
    np.testing.assert_allclose(mean_pool(hidden, mask), [[1.0, 0.0]])


def test_bad_runtime_is_a_config_error() -> None:
    from memory.embedders.minilm import MiniLMEmbedder

    with pytest.raises(ConfigError, match="runtime"):
        MiniLMEmbedder(runtime="tf")
