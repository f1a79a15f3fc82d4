"""Vector storage and cosine search for the SQLite backend.

Each vector space (embedding model) has two tables: ``vectors_<id>`` holds
the vectors (exact scores come from them) and ``vcodes_<id>`` holds one sign
bit per dimension with a per-namespace sequence number.

Sign-bit codes (issue 22). A space made by this version takes the signs of
the vector turned by a fixed random rotation (:func:`rotation`, SimHash:
each bit is a random hyperplane, so the Hamming distance follows the angle
for any vectors); a space made before takes the signs of the coordinates
themselves, which works for dense embeddings (MiniLM) but not for sparse
ones (the hashing embedder's are mostly zeros). The registry records which
(``vector_spaces.code``, migration ``0017_vector_code``, default ``sign``
for existing spaces); stored codes and query codes of a space always agree.

Storage type (issue 22: bytes per memory). A space stores its vectors as
float16 (2 bytes a dimension: 768 for MiniLM's 384, half of float32) when it
was made by this version, as float32 when it was made before; the space
registry records which (``vector_spaces.dtype``, added by migration
``0016_vector_dtype`` with the default ``float32``, so every existing space
reads as what it holds) and every vector of a space has its type. Recording
it, rather than telling the type by a blob's length, keeps the file
self-describing and the code one branch (:func:`storable_rows`, :func:`decode`);
and an older version of memory refuses a file with the migration instead of
reading its float16 blobs as float32. Vectors are read back as float32 and
scored in float32 by numpy (no SQLite extension is loaded): scores are exact cosines of the stored vectors, which
in a float16 space are the given ones rounded to float16 (relative error
below 2^-11 per component; a vector whose largest component float16 cannot
hold is stored scaled to a largest component of 1: same direction, same
cosines).

Search strategy (see :func:`search`):

1. Count the items in the filter's indexed scope (namespace, user, agent,
   thread, kinds, ids, tags), stopping at ``exact_limit + 1``. When at most
   ``exact_limit`` are in scope (small namespaces, or a selective scope such
   as one user, thread, kind or tag), read the vectors of the rows passing
   the whole filter (in SQL) and score them all: exact. A whole namespace
   (no indexed narrowing) whose copy (2.) holds its vectors is not counted
   or read: under ``FLOAT_POOL`` × 3 vectors every one is scored in the copy,
   exactly, and the best are checked against the filter as in 2. (small
   namespaces may make copies within ``SMALL_COPY_SHARE`` of the total budget;
   the 600 turns of a LoCoMo conversation: recall p50 16–17 → 11–12 ms). In a namespace of
   more vectors than that, whose in-process copy (2.) holds them, the rows
   are read with their vectors' sequence numbers instead and scored from the
   copy: the same scores to the bit, without reading the vectors (the 2,000
   memories of one user in a 100k store: 16.4 against 5.6 ms).
2. Otherwise pick candidates from an in-process copy of the namespace: sign
   bits ranked by Hamming distance (< 1 ms for 100k vectors) choose a pool,
   and while the copy also holds the vectors, as the space stores them (up to
   ``DEFAULT_FLOAT_CACHE_BYTES`` per namespace, and
   ``DEFAULT_TOTAL_FLOAT_CACHE_BYTES`` for the copies of all namespaces
   together: see :class:`CodeCache`) the pool — ``FLOAT_POOL``
   entries or 1 % of the namespace, whichever is more — is ranked by exact
   cosine in numpy. Measured on 100k MiniLM sentence vectors and 220
   queries: the top 10 hold 99.64 % of the exact top 10 with the float
   refinement (every one with a pool of 4,000, at 0.6 ms more per search);
   99.55 % without it (1000 sign-bit candidates). With the float copy its cosines are the
   scores (the copy holds the stored vectors and their lengths); without
   it the best candidates' vectors are read and scored exactly. The filter is then
   checked in SQL best first until ``k`` pass, and the candidate set widens
   while fewer than ``k`` pass. Scores are always exact cosines of the
   stored vectors (up to float32 rounding of the arithmetic); which items
   are considered is near-exact, not guaranteed exact.
3. A namespace of ``vector_graph_min`` vectors or more (200,000 by default)
   takes its candidates from an HNSW graph instead of the Hamming pass
   (:mod:`.hnsw`, built in the background and kept beside the file): k and
   a fifth more of them, and the best of the vectors written since the graph was built by
   their sign bits; they are scored and checked as in 2. Until its graph is
   built, a namespace is searched as in 2.

The in-process copy is refreshed incrementally before each search: new
sign bits are read by sequence number, and deletions are counted, so the
copy is rebuilt once enough of it is stale. Stale entries cannot leak into
results: candidates scored from a copy with stale entries are named by
sequence number and checked against the codes table with the filter (a
replaced or deleted vector's old number is gone); from a copy without any
(no deletion since it was read, the usual case) by row id, checked against
the owner rows alone, one B-tree lookup a candidate instead of two.
Candidates rescored otherwise are re-read.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from memory.backends.base import ChannelHit, Vector
from memory.backends.sqlite.migrations import space_tables
from memory.backends.sqlite.sql import ROLE_SQL, SPEAKER_SQL
from memory.backends.values import RankFields
from memory.blas import single_thread_blas
from memory.ids import from_epoch

__all__ = [
    "FLOAT16",
    "FLOAT32",
    "Space",
    "CodeIndex",
    "CodeCache",
    "quantize",
    "rotation",
    "coded",
    "ROTATED",
    "SIGN",
    "storable_rows",
    "quantize_rows",
    "decode",
    "cosines",
    "write_vector",
    "write_new_vectors",
    "delete_vectors",
    "search",
    "stored_vectors",
    "read_counters",
]

#: Storage types of a space's vectors (``vector_spaces.dtype``): new spaces, and spaces made before float16.
FLOAT16 = "float16"
FLOAT32 = "float32"
_DTYPES: dict[str, type[np.floating[Any]]] = {FLOAT16: np.float16, FLOAT32: np.float32}
#: How a space's sign-bit codes are made: the signs of the vector turned by a fixed random rotation
#: (:func:`rotation`; spaces made since migration 0017), or of its own coordinates (spaces made before).
ROTATED = "rotated"
SIGN = "sign"
CODES = (ROTATED, SIGN)
#: float16's largest finite value and smallest normal one: a vector whose largest component is outside is rescaled.
_F16_MAX = float(np.finfo(np.float16).max)
_F16_TINY = float(np.finfo(np.float16).smallest_normal)
#: float16's bits moved into float32's fields read 2^-112 of their value: the factor back.
_F16_TO_F32 = np.float32(2.0**112)
#: Filters whose indexed scope holds at most this many items are searched exactly.
DEFAULT_EXACT_LIMIT = 2_000
#: Coarse candidates per wanted result, and the least number of candidates.
DEFAULT_OVERSAMPLE = 20
DEFAULT_MIN_CANDIDATES = 1_000
#: Candidates ranked by exact cosine from the float copy (chosen from the sign-bit pass): at least this
#: many, and at least ``FLOAT_POOL_SHARE`` of the namespace, so the share of the namespace rescored stays the
#: same as it grows. Measured on 100k MiniLM sentence vectors and 220 queries (issue 22): the top 10 equal the
#: exact top 10 for 0.9964 of their members with 1,000, 0.9986 with 2,000 and 1.0 with 4,000; gathering and
#: scoring the pool costs 0.24, 0.41 and 0.81 ms (HNSW in Chroma 1.5.9 finds 0.912 of them).
FLOAT_POOL = 1_000
FLOAT_POOL_SHARE = 0.01
#: Share of the total float budget (:class:`CodeCache`'s ``total_float_budget``) that all copies together may
#: have spent for a namespace under ``exact_limit`` vectors to get one: many small namespaces (a store of one
#: per user) never take the room a large one opened later needs. Beyond it a small namespace is scanned from
#: the table.
SMALL_COPY_SHARE = 0.5
#: Per-namespace budget for keeping the vectors in process (as stored: float16 in spaces made since 0016, with a
#: float32 length each; 772 bytes a MiniLM vector); sign bits only beyond it.
DEFAULT_FLOAT_CACHE_BYTES = 512 * 1024 * 1024
#: Budget for the float copies of every namespace of a store together: a namespace whose copy is
#: built once the others have spent it keeps sign bits only (its best candidates are rescored
#: from the table), so a server with many namespaces holds at most this much of them.
DEFAULT_TOTAL_FLOAT_CACHE_BYTES = 1024 * 1024 * 1024
#: Candidates asked of a namespace's HNSW graph first: k and a fifth more (at least 10 more), and at least
#: GRAPH_FIRST. The graph ranks them by int8 cosines, close to the exact order, so few beyond k are needed; its
#: search breadth, not the count, decides how much of the exact top 10 they hold. On the 1M hashing vectors of
#: ``memory bench speed`` (k = 50): 100 candidates and 60 held the same 0.79 of it, vector-only recall p50 2.7
#: and 2.3 ms (issue 22); for vector-only recall's 16 (a head of 10), 26 and 40 held the same of the exact top 10
#: (200 queries), p50 2.70 and 2.95 ms (each rescored from the table: the float copy of 1M is over budget). A
#: filter that passes few widens the search.
GRAPH_FIRST = 20
#: A filter that passes few candidates widens the candidate pool up to this many times (from at least
#: ``_WIDEN_FROM`` candidates: the widest search does not shrink with the first ask).
_MAX_WIDENING = 64
_WIDEN_FROM = 40
#: Rows read per chunk when a namespace's copy is (re)built.
REFRESH_CHUNK = 4_096
#: Rebuild a namespace's copy once this many deletions (or 10 % of it) are stale.
_MIN_STALE = 1_000

_HAS_BITWISE_COUNT = hasattr(np, "bitwise_count")
_POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
#: Words whose popcounts :meth:`CodeIndex.distances` sums in one byte: 3 * 64 = 192 < 256.
_WORDS_PER_BYTE_SUM = 3


@dataclass(frozen=True, slots=True)
class Space:
    """A registered vector space: its id (naming its tables), model, dimension and storage type."""

    space_id: int
    model: str
    dim: int
    #: The table whose rows the vectors belong to: ``items`` or ``messages``.
    owner: str = "items"
    #: How its vectors are stored: :data:`FLOAT16`, or :data:`FLOAT32` (spaces made before float16).
    dtype: str = FLOAT32
    #: How its sign-bit codes are made: :data:`ROTATED`, or :data:`SIGN` (spaces made before 0017).
    code: str = SIGN

    def __post_init__(self) -> None:
        if self.dtype not in _DTYPES:
            raise ValueError(f"unknown vector storage type {self.dtype!r}")
        if self.code not in CODES:
            raise ValueError(f"unknown sign-bit code {self.code!r}")

    def for_messages(self) -> Space:
        """The same space holding vectors of ``messages`` rows (tables ``msg_vectors_<id>``…)."""
        return replace(self, owner="messages")

    @property
    def vectors_table(self) -> str:
        """Table of the vectors (blobs of :attr:`dtype`)."""
        name = space_tables(self.space_id)[0]
        return name if self.owner == "items" else f"msg_{name}"

    @property
    def codes_table(self) -> str:
        """Table of sign-bit codes."""
        name = space_tables(self.space_id)[1]
        return name if self.owner == "items" else f"msg_{name}"

    @property
    def counters_table(self) -> str:
        """Table of per-namespace code sequence numbers and deletion counts."""
        return "vector_counters" if self.owner == "items" else "msg_vector_counters"

    @property
    def owner_table(self) -> str:
        """The table the vectors' ``rid`` refers to."""
        return self.owner

    @property
    def rank_columns(self) -> str:
        """Columns ranking reads (items: created_at, importance, metadata role and speaker), read with the hits."""
        return f", i.created_at, i.importance, {ROLE_SQL}, {SPEAKER_SQL}" if self.owner == "items" else ""

    @property
    def words(self) -> int:
        """64-bit words per sign-bit code."""
        return (self.dim + 63) // 64


def _hit(space: Space, item_id: Any, score: float, row: Sequence[Any]) -> ChannelHit:
    """A hit, with its rank fields when ``row`` ends with :attr:`Space.rank_columns` (items)."""
    if not space.rank_columns:
        return ChannelHit(str(item_id), score)
    created_at, importance, role, speaker = row[-4:]
    return ChannelHit(str(item_id), score, RankFields(from_epoch(float(created_at)), float(importance), role, speaker))


def quantize(vector: Vector, words: int) -> bytes:
    """Sign bits of ``vector`` (1 where > 0), packed little-endian and zero-padded to ``words`` uint64."""
    bits = np.packbits(np.asarray(vector) > 0, bitorder="little")
    padded = np.zeros(words * 8, dtype=np.uint8)
    padded[: bits.shape[0]] = bits
    return padded.tobytes()


def quantize_rows(rows: npt.NDArray[Any], words: int) -> list[bytes]:
    """:func:`quantize` of each row of ``rows``, packed in one pass."""
    bits = np.packbits(np.asarray(rows) > 0, axis=1, bitorder="little")
    padded = np.zeros((bits.shape[0], words * 8), dtype=np.uint8)
    padded[:, : bits.shape[1]] = bits
    return [row.tobytes() for row in padded]


@functools.lru_cache(maxsize=8)
def rotation(dim: int) -> npt.NDArray[np.float32]:
    """The fixed random rotation of ``dim``-d vectors that :data:`ROTATED` codes take signs after (SimHash).

    Gaussian rows from numpy's legacy ``RandomState`` (its stream is fixed
    across numpy versions, so every process and build makes the same
    matrix), seeded by the dimension. The signs of a vector's own
    coordinates are poor candidates for sparse vectors: the hashing
    embedder's are 69-84 % zeros, and a zero's bit is a negative's. Measured
    on 100k LoCoMo sentence vectors (issue 22): the 1,000 nearest by Hamming
    distance held 0.518 of the exact top 10 for the hashing embedder with
    own signs, 0.980 rotated; MiniLM 0.997 and 0.998.
    """
    matrix = np.random.RandomState(0x51C0DE + dim).standard_normal((dim, dim))
    out: npt.NDArray[np.float32] = np.ascontiguousarray(matrix, dtype=np.float32)
    out.flags.writeable = False
    return out


def coded(vectors: npt.NDArray[Any], code: str) -> npt.NDArray[np.float32]:
    """What the signs of ``code`` codes are taken of: the rows of ``vectors`` (or a vector), turned or not."""
    array = np.asarray(vectors, dtype=np.float32)
    if code == SIGN:
        return array
    if array.ndim == 1:  # one vector: a product on this thread
        return array @ rotation(array.shape[-1]).T
    with single_thread_blas():  # a batch: OpenBLAS's threads would spin on the other core after it
        turned: npt.NDArray[np.float32] = array @ rotation(array.shape[-1]).T
    return turned


def storable_rows(space: Space, vectors: Sequence[Vector]) -> npt.NDArray[np.floating[Any]]:
    """``vectors`` as ``space`` stores them, one row each: float32, or float16 rounded.

    A vector whose largest component is beyond float16's range, or below its
    smallest normal value (too few bits left), is divided by that component
    first: its direction, and so every cosine, stays.
    """
    rows = np.ascontiguousarray(np.stack([np.asarray(v, dtype=np.float32) for v in vectors]), dtype=np.float32)
    if space.dtype == FLOAT32 or rows.size == 0:
        return rows
    top = np.max(np.abs(rows), axis=1)
    rescaled = (top > _F16_MAX) | ((top > 0.0) & (top < _F16_TINY))
    if rescaled.any():
        rows = rows.copy()
        rows[rescaled] = rows[rescaled] / top[rescaled, None]
    return rows.astype(np.float16)


def _float32(raw: bytes, dtype: type[np.floating[Any]]) -> npt.NDArray[np.float32]:
    """Stored bytes of ``dtype`` as a new float32 array."""
    if dtype is np.float32:
        return np.frombuffer(raw, dtype=np.float32).copy()
    return _widen(np.frombuffer(raw, dtype=np.float16))


def _widen(halves: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
    """float16 values as a new float32 array of the same shape.

    Widened by bit arithmetic (:func:`_shifted`) and the exponent bias
    corrected by one exact multiplication by 2^112 (exact for every finite
    float16, subnormals included; a space never stores infinities). numpy's
    own cast runs one value at a time here: 0.9 ms for 2,000 384-d rows
    against 0.15 ms.
    """
    out = _shifted(halves)
    out *= _F16_TO_F32
    return out


def _shifted(halves: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
    """float16 values times 2^-112, exactly, as a new float32 array: their bits moved into float32's fields.

    A dot product with a vector scaled by 2^112 is then the dot product of
    the widened values, to the bit: scaling by a power of two is exact
    (float16's normal values land on float32's normal ones, its subnormals
    on float32's subnormals) and every product is the same real number,
    rounded the same. Ranking saves the pass that corrects the bias.
    """
    bits = halves.view(np.int16).astype(np.int32)  # sign-extended
    bits <<= 13  # mantissa and exponent in place; the sign and its extension at bits 28-31
    bits &= np.int32(-0x70000001)  # keep bit 31 (the sign), clear 28-30
    out: npt.NDArray[np.float32] = bits.view(np.float32)
    return out


def decode(space: Space, blob: bytes) -> npt.NDArray[np.float32]:
    """A stored blob of ``space`` as a float32 vector (a copy)."""
    return _float32(blob, _DTYPES[space.dtype])


def decode_rows(space: Space, blobs: Sequence[bytes]) -> npt.NDArray[np.float32]:
    """Stored blobs of ``space`` as a float32 matrix, one row each."""
    return _float32(b"".join(blobs), _DTYPES[space.dtype]).reshape(len(blobs), space.dim)


def _norms(rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Each row's length, 1 for a zero row: a row's dot product with a unit query over it is their cosine."""
    norms: npt.NDArray[np.float32] = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    norms[norms == 0] = 1.0
    return norms


def _unit(vector: Vector) -> npt.NDArray[np.float32]:
    query = np.asarray(vector, dtype=np.float32)
    return query / np.float32(float(np.linalg.norm(query)) or 1.0)


def cosines(space: Space, blobs: Sequence[bytes], vector: Vector) -> npt.NDArray[np.float32]:
    """Cosine of each stored blob of ``space`` with ``vector``, in float32 arithmetic.

    The in-process copy's cosines (rows scaled to unit length first) agree
    with these to float32 rounding (below 1e-7).
    """
    if not blobs:
        return np.zeros(0, dtype=np.float32)
    rows = decode_rows(space, blobs)
    # einsum, not BLAS (see CodeIndex._ranked); dot products over norms: no scaled copy of the rows
    scores: npt.NDArray[np.float32] = np.einsum("ij,j->i", rows, _unit(vector)) / _norms(rows)
    return scores


class Graph(Protocol):
    """A namespace's HNSW graph as the copy uses it (:class:`memory.backends.sqlite.hnsw.Graph`)."""

    @property
    def last_seq(self) -> int:
        """Every vector with a sequence number up to this one, when the graph was built, is in it."""
        ...

    def search(self, query: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.int64]:
        """Sequence numbers of about the ``count`` entries nearest ``query``, nearest first."""
        ...


class GraphSource(Protocol):
    """Gives a namespace's usable graph, or None (:class:`memory.backends.sqlite.hnsw.GraphIndexes`)."""

    def current(
        self, conn: Any, space: Space, namespace: str, size: int, last_seq: int, deletions: int
    ) -> Graph | None:
        """The graph of ``namespace`` in ``space`` for a copy of ``size`` entries up to ``last_seq``, or None."""
        ...


def _copied_bytes(dim: int, dtype: type[np.floating[Any]]) -> int:
    """Bytes one vector of ``dim`` values of ``dtype`` takes in a float copy, with its float32 length."""
    return dim * np.dtype(dtype).itemsize + 4


class CodeIndex:
    """In-process copy of one namespace's sign-bit codes in one space.

    Codes are kept word-major (one contiguous row per 64-bit word), so the
    Hamming distance to a query is a few vectorised XOR + popcount passes.
    """

    def __init__(self, words: int, dim: int = 0, float_budget: int = 0, dtype: str = FLOAT32, code: str = SIGN) -> None:
        """Create an empty copy for codes of ``words`` uint64, made as ``code`` says (:data:`ROTATED` or :data:`SIGN`).

        With ``dim`` and a ``float_budget`` in bytes, the vectors are kept
        too (exact ranking), as the space stores them (``dtype``: float16 or
        float32) with their lengths, until they would exceed the budget.
        """
        self.words = words
        self.code = code
        self.dim = dim
        self.dtype = _DTYPES[dtype]
        self.float_budget = float_budget
        self.rids = np.empty(0, dtype=np.int64)
        self.seqs = np.empty(0, dtype=np.int64)
        self.codes = np.empty((words, 0), dtype=np.uint64)
        keep_floats = bool(dim) and float_budget > 0
        self.floats: npt.NDArray[Any] | None = np.empty((0, dim), dtype=self.dtype) if keep_floats else None
        self.norms = np.empty(0, dtype=np.float32)
        self.size = 0
        self.last_seq = 0
        self.deletions = 0
        self.stale = 0
        #: The namespace's HNSW graph, when it has one (:mod:`.hnsw`): candidates come from it and the tail after it.
        self.graph: Graph | None = None

    @property
    def live(self) -> bool:
        """True when no vector of the copy was deleted or replaced since it was read (:meth:`scored` names row ids)."""
        return self.stale == 0

    @property
    def exact(self) -> bool:
        """True while the float copy is held (candidates refined by exact cosine)."""
        return self.floats is not None

    @property
    def float_bytes(self) -> int:
        """Bytes the float copy holds (its whole allocation), 0 without one."""
        return 0 if self.floats is None else int(self.floats.nbytes + self.norms.nbytes)

    @property
    def _row_bytes(self) -> int:
        """Bytes one entry's vector and length take in the float copy."""
        return _copied_bytes(self.dim, self.dtype)

    def reserve(self, extra: int) -> None:
        """Make room for ``extra`` more entries now, so a large refresh read in chunks allocates once.

        A new copy is allocated to its size; a copy that grows gets an eighth
        more room than it needs (at least 1,024 entries), so the writes that
        follow one another between searches do not each copy it whole.
        """
        needed = self.size + max(0, extra)
        if needed <= self.rids.shape[0]:
            return
        if self.floats is not None and needed * self._row_bytes > self.float_budget:
            self._drop_floats()  # over budget: sign bits only
        self._grow(needed, needed if self.size == 0 else max(needed + needed // 8, self.size + 1024))

    def _drop_floats(self) -> None:
        """Keep sign bits only: the vectors and their lengths go."""
        self.floats = None
        self.norms = np.empty(0, dtype=np.float32)

    def _grow(self, needed: int, capacity: int) -> None:
        if self.floats is not None:
            capacity = min(capacity, max(needed, self.float_budget // self._row_bytes))
        rids = np.empty(capacity, dtype=np.int64)
        seqs = np.empty(capacity, dtype=np.int64)
        codes = np.empty((self.words, capacity), dtype=np.uint64)
        rids[: self.size] = self.rids[: self.size]
        seqs[: self.size] = self.seqs[: self.size]
        codes[:, : self.size] = self.codes[:, : self.size]
        self.rids, self.seqs, self.codes = rids, seqs, codes
        if self.floats is not None:
            floats = np.empty((capacity, self.dim), dtype=self.dtype)
            floats[: self.size] = self.floats[: self.size]
            norms = np.empty(capacity, dtype=np.float32)
            norms[: self.size] = self.norms[: self.size]
            self.floats, self.norms = floats, norms

    def extend(self, rows: list[tuple[Any, ...]]) -> None:
        """Append ``(seq, rid, code[, embedding])`` rows read in sequence order."""
        if not rows:
            return
        needed = self.size + len(rows)
        if self.floats is not None and (needed * self._row_bytes > self.float_budget or len(rows[0]) < 4):
            self._drop_floats()  # over budget: fall back to sign bits only
        if needed > self.rids.shape[0]:
            self._grow(needed, max(needed, 2 * self.rids.shape[0], 1024))
        self._append(rows, needed)

    def _append(self, rows: list[tuple[Any, ...]], needed: int) -> None:
        self.rids[self.size : needed] = [row[1] for row in rows]
        self.seqs[self.size : needed] = [row[0] for row in rows]
        block = np.frombuffer(b"".join(row[2] for row in rows), dtype=np.uint64)
        self.codes[:, self.size : needed] = block.reshape(len(rows), self.words).T
        if self.floats is not None:
            raw = b"".join(row[3] for row in rows)
            self.floats[self.size : needed] = np.frombuffer(raw, dtype=self.dtype).reshape(len(rows), self.dim)
            self.norms[self.size : needed] = _norms(_float32(raw, self.dtype).reshape(len(rows), self.dim))
        self.size = needed
        self.last_seq = max(self.last_seq, rows[-1][0])

    def distances(self, query: bytes, start: int = 0) -> npt.NDArray[np.int32] | npt.NDArray[np.uint16]:
        """Hamming distance from ``query`` to every code in the copy from position ``start`` on.

        The popcounts of up to three words are summed in uint8 (at most 192
        bits differ, below 256), and the groups' sums in uint16 (a code has at
        most 64 * ``words`` bits, far below 65,536), in place: a third less
        time than summing every word's popcount in uint16 (0.50 against 0.77 ms
        for 100k 384-bit codes in cache; a pass reads each word once either way).
        """
        words = np.frombuffer(query, dtype=np.uint64)
        size = self.size - start
        scratch = np.empty(size, dtype=np.uint64)
        if not _HAS_BITWISE_COUNT:
            total = np.zeros(size, dtype=np.int32)
            for w in range(self.words):
                np.bitwise_xor(self.codes[w, start : self.size], words[w], out=scratch)
                total += _POPCOUNT8[scratch.view(np.uint8).reshape(size, 8)].sum(axis=1, dtype=np.int32)
            return total
        counts = np.zeros(size, dtype=np.uint16)
        group = np.empty(size, dtype=np.uint8)
        bits = np.empty(size, dtype=np.uint8)
        for first in range(0, self.words, _WORDS_PER_BYTE_SUM):
            for w in range(first, min(first + _WORDS_PER_BYTE_SUM, self.words)):
                np.bitwise_xor(self.codes[w, start : self.size], words[w], out=scratch)
                if w == first:
                    np.bitwise_count(scratch, out=group)
                else:
                    np.bitwise_count(scratch, out=bits)
                    np.add(group, bits, out=group)
            np.add(counts, group, out=counts)
        return counts

    def all_rids(self) -> list[int]:
        """Every distinct row id in the copy."""
        return [int(r) for r in np.unique(self.rids[: self.size])]

    def nearest(self, vector: Vector, n: int) -> list[int]:
        """Row ids of the ``n`` entries nearest ``vector`` (all if ``n >= size``).

        Sign bits pick a pool by Hamming distance; while the float copy is
        held, the pool (:meth:`pool_size`) is ranked by
        exact cosine before the best ``n`` are taken.
        """
        if n >= self.size:
            return self.all_rids()
        if self.floats is not None:
            return sorted({rid for rid, _ in self._ranked(vector, n)})
        if self.graph is not None:
            best = self._graph_positions(self.graph, _unit(vector), n)
        else:
            best = smallest(self.distances(quantize(coded(vector, self.code), self.words)), n)
        return [int(r) for r in np.unique(self.rids[best])]

    def wanted(self, k: int, oversample: int, min_candidates: int) -> int:
        """Candidates to ask :meth:`scored` or :meth:`nearest` for first, for ``k`` results.

        Sign bits alone rank coarsely (``k * oversample``, at least
        ``min_candidates``); ranked by exact cosine from the float copy, 4 k
        (at least 200, for filters that pass few); from a graph, k and a fifth
        more (at least :data:`GRAPH_FIRST`): its candidates come near their exact
        order already, and a filter that passes few widens the search (see
        :func:`search`).
        """
        if self.graph is not None:
            return max(k + max(10, k // 5), GRAPH_FIRST)
        if self.floats is not None:
            return max(4 * k, 200)
        return max(k * oversample, min_candidates)

    def _graph_positions(self, graph: Graph, query: npt.NDArray[np.float32], n: int) -> npt.NDArray[np.intp]:
        """Positions in the copy of about the ``n`` nearest entries: the graph's, and the tail's by sign bits.

        The graph names entries by sequence number (the copy is in sequence
        order, so a binary search finds each; a key the copy no longer holds
        is dropped). Entries after the graph's last sequence number (written
        since it was built) are ranked by Hamming distance, at most ``n`` of them.
        """
        seqs = self.seqs[: self.size]
        keys = graph.search(query, n)
        found = np.searchsorted(seqs, keys)
        inside = found < self.size
        found, keys = found[inside], keys[inside]
        found = np.asarray(found[seqs[found] == keys], dtype=np.intp)
        start = int(np.searchsorted(seqs, graph.last_seq, side="right"))
        if start >= self.size:
            return found
        tail = self.distances(quantize(coded(query, self.code), self.words), start)
        best = start + (np.arange(tail.shape[0]) if tail.shape[0] <= n else smallest(tail, n))
        return np.concatenate((found, best))

    def scored(self, vector: Vector, n: int) -> list[tuple[int, float]] | None:
        """``(key, cosine)`` of the ``n`` entries nearest ``vector``, best first; None without the float copy.

        The copy holds the stored vectors as they are stored, with their
        lengths, so these are the cosines that rescoring from the table
        (:func:`cosines`) computes, by the same float32 arithmetic. While the
        copy is :attr:`live` entries are named by row id; otherwise by
        sequence number: an entry whose vector was deleted or replaced since
        the copy was read has a sequence number the codes table no longer
        holds, so the caller drops it when it checks the candidates in SQL.
        """
        if self.floats is None:
            return None
        return self._ranked(vector, min(n, self.size), self.rids if self.live else self.seqs)

    def cosines_at(self, seqs: Sequence[int], vector: Vector) -> npt.NDArray[np.float32] | None:
        """Exact cosines of the entries with sequence numbers ``seqs`` (in that order), from the float copy.

        None without the float copy, or when it lacks one of them. These are
        the cosines :func:`cosines` computes from the stored vectors (see
        :meth:`scored`), so a filter's rows are scored without reading their vectors.
        """
        if self.floats is None:
            return None
        held = self.seqs[: self.size]
        wanted = np.asarray(seqs, dtype=np.int64)
        at = np.minimum(np.searchsorted(held, wanted), max(self.size - 1, 0))
        if self.size == 0 or not np.array_equal(held[at], wanted):
            return None
        return self._cosines(self.floats[at], self.norms[at], _unit(vector))

    def _cosines(
        self, rows: npt.NDArray[Any], norms: npt.NDArray[np.float32], query: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        """Cosines of copied ``rows`` (with their ``norms``) with the unit ``query``, as :func:`cosines` has them."""
        # einsum, not BLAS: a multi-threaded BLAS keeps spinning after the call and
        # starves the embedder's threads on small machines.
        sims: npt.NDArray[np.float32]
        if rows.dtype != np.float32:  # float16: the bias correction goes into the query (see _shifted)
            sims = np.einsum("ij,j->i", _shifted(rows), query * _F16_TO_F32) / norms
        else:
            sims = np.einsum("ij,j->i", rows, query) / norms
        return sims

    def pool_size(self, n: int) -> int:
        """Candidates the sign bits choose for exact ranking of the best ``n``: 4 n, ``FLOAT_POOL``, 1 % of the copy.

        A pool of a third of the copy or more is the whole copy: scoring every
        row in place reads it in order, as fast as gathering a third of it at
        random, and the ranking is then exact.
        """
        pool = max(4 * n, FLOAT_POOL, int(self.size * FLOAT_POOL_SHARE))
        return self.size if 3 * pool >= self.size else pool

    def _ranked(self, vector: Vector, n: int, names: npt.NDArray[np.int64] | None = None) -> list[tuple[int, float]]:
        """``(name, cosine)`` of the ``n`` nearest entries by exact cosine, best first (names: rids by default)."""
        assert self.floats is not None
        names = self.rids if names is None else names
        if n <= 0:
            return []
        query = _unit(vector)
        pool = self.pool_size(n)
        if self.graph is not None:
            coarse = self._graph_positions(self.graph, query, n)
            rows, norms = self.floats[coarse], self.norms[coarse]
        elif pool < self.size:
            coarse = smallest(self.distances(quantize(coded(query, self.code), self.words)), pool)
            rows, norms = self.floats[coarse], self.norms[coarse]
        else:  # everything is in the pool: score the copy in place, no gathered copy
            coarse = np.arange(self.size)
            rows, norms = self.floats[: self.size], self.norms[: self.size]
        sims = self._cosines(rows, norms, query)
        top = np.argpartition(-sims, n - 1)[:n] if n < sims.shape[0] else np.arange(sims.shape[0])
        top = top[np.argsort(-sims[top], kind="stable")]
        return list(zip(names[coarse[top]].tolist(), sims[top].tolist(), strict=True))


def smallest(values: npt.NDArray[np.int32] | npt.NDArray[np.uint16], n: int) -> npt.NDArray[np.intp]:
    """Positions of the ``n`` smallest ``values`` (``0 < n < len(values)``), ties broken by position.

    Hamming distances tie often. ``np.argpartition`` breaks ties in an order
    that depends on the SIMD code numpy picks for the CPU (AVX2 or AVX-512),
    so the same data gave different candidates on different machines; this
    takes everything below the n-th value and then the first of its ties.

    Distances are small integers (at most 64 bits a word), so the n-th value
    comes from a histogram instead of a partition: 0.20 against 0.70 ms for
    100k distances (2-core AMD EPYC, 2026-12-03), the same positions. Over
    many values the histogram is of the values at or below a bound read off
    every :data:`_SAMPLE_STEP`-th value (which holds more than ``n`` of them
    with a margin; when it does not, of all values): the same positions, as
    every value up to the n-th smallest is then below the bound. The
    histogram of all 100k (numpy widens them to int64 first) took 0.10 of the
    0.13 ms (2-core Xeon, 2026-12-04).
    """
    if values.shape[0] >= _SAMPLE_FROM:
        sample = np.cumsum(np.bincount(values[::_SAMPLE_STEP]))
        bound = int(np.searchsorted(sample, min(int(sample[-1]), n // _SAMPLE_STEP + _SAMPLE_MARGIN)))
        near = np.flatnonzero(values <= bound)
        if near.shape[0] >= n:  # the n-th smallest is at or below the bound: count only those
            held = values[near]
            kth = int(np.searchsorted(np.cumsum(np.bincount(held)), n))
            return _below_and_ties(near, held, kth, n)
    kth = int(np.searchsorted(np.cumsum(np.bincount(values)), n))  # the least value with n at or below it
    near = np.flatnonzero(values <= kth)
    return _below_and_ties(near, values[near], kth, n)


#: :func:`smallest` bounds the values it counts by a sample of every ``_SAMPLE_STEP``-th value from this many.
_SAMPLE_FROM = 16_384
_SAMPLE_STEP = 16
#: Sample values at or below the bound beyond those ``n`` calls for (a margin against the sample's luck).
_SAMPLE_MARGIN = 48


def _below_and_ties(near: npt.NDArray[np.intp], held: npt.NDArray[Any], kth: int, n: int) -> npt.NDArray[np.intp]:
    """Positions ``near`` (ascending, with their values ``held``) below ``kth``, then the first ties, ``n`` in all."""
    below = near[held < kth]
    ties = near[held == kth][: n - below.shape[0]]
    return np.concatenate((below, ties))


class CodeCache:
    """Code copies by (space, namespace), refreshed from the database before use.

    Float copies share one budget: a copy may hold its vectors within
    ``float_budget`` and within what the other copies leave of
    ``total_float_budget`` (first come, first served). One that is built or
    grows past what is left keeps sign bits only, which costs it speed (its
    candidates' vectors are read from the table), never results' exactness
    of score. Sign bits (8 bytes a 64-bit word) and row ids are always kept.
    """

    def __init__(
        self,
        float_budget: int = DEFAULT_FLOAT_CACHE_BYTES,
        total_float_budget: int = DEFAULT_TOTAL_FLOAT_CACHE_BYTES,
        graphs: GraphSource | None = None,
    ) -> None:
        """Create an empty cache: ``float_budget`` bytes of vectors (as stored) per namespace copy, at most
        ``total_float_budget`` for all copies together; ``graphs`` gives large namespaces their HNSW graph."""
        self._indexes: dict[tuple[str, int, str], CodeIndex] = {}
        #: What the copies' float arrays hold together, kept as they change (only :meth:`refresh` changes them):
        #: a search asks for the room left, and summing a store's thousands of copies each time cost 1.1 ms.
        self._float_total = 0
        self.float_budget = float_budget
        self.total_float_budget = total_float_budget
        self.graphs = graphs

    @property
    def float_bytes(self) -> int:
        """Bytes of vectors the copies hold together."""
        return self._float_total

    def _allowance(self, key: tuple[str, int, str], share: float = 1.0) -> int:
        """Float bytes the copy at ``key`` may hold: its own budget, within what the other copies leave
        of ``share`` of the total budget."""
        own = self._indexes.get(key)
        others = self._float_total - (own.float_bytes if own is not None else 0)
        return max(0, min(self.float_budget, int(self.total_float_budget * share) - others))

    def _forget(self, key: tuple[str, int, str]) -> None:
        """Drop the copy at ``key``: its floats no longer count against the others."""
        gone = self._indexes.pop(key, None)
        if gone is not None:
            self._float_total -= gone.float_bytes

    def holds_vectors(self, space: Space, namespace: str, count: int, share: float = 1.0) -> bool:
        """True when the copy of ``namespace`` in ``space``, with ``count`` vectors, holds them (or would,
        built now within ``share`` of the total budget)."""
        key = (space.owner, space.space_id, namespace)
        index = self._indexes.get(key)
        if index is not None and not index.exact:
            return False
        within = 1.0 if index is not None else share  # a copy made already keeps the room it has
        return count * _copied_bytes(space.dim, _DTYPES[space.dtype]) <= self._allowance(key, within)

    def clear(self) -> None:
        """Forget every copy."""
        self._indexes.clear()
        self._float_total = 0

    def refresh(self, conn: Any, space: Space, namespace: str, counters: tuple[int, int] | None = None) -> CodeIndex:
        """Bring the copy of ``namespace`` in ``space`` up to date and return it (``counters``: its
        :func:`read_counters`, when the caller read them in this transaction; read here otherwise)."""
        key = (space.owner, space.space_id, namespace)
        row = counters if counters is not None else read_counters(conn, space, namespace)
        index = self._indexes.get(key)
        if row is None:
            self._forget(key)
            return CodeIndex(space.words, space.dim, self.float_budget, space.dtype, space.code)
        last_seq, deletions = int(row[0]), int(row[1])
        stale = deletions - index.deletions if index is not None else 0
        if index is None or last_seq < index.last_seq or stale > max(_MIN_STALE, index.size // 10):
            self._forget(key)
            index = CodeIndex(space.words, space.dim, self._allowance(key), space.dtype, space.code)
            index.deletions = deletions
            self._indexes[key] = index
        index.stale = deletions - index.deletions
        if last_seq > index.last_seq:
            index.float_budget = self._allowance(key)  # it grows: within what the other copies left
            if index.exact:
                sql = (
                    f"SELECT c.seq, c.rid, c.code, v.embedding FROM {space.codes_table} c "
                    f"CROSS JOIN {space.vectors_table} v ON v.rid = c.rid "
                    "WHERE c.namespace = ? AND c.seq > ? ORDER BY c.seq"
                )
            else:
                sql = f"SELECT seq, rid, code FROM {space.codes_table} WHERE namespace = ? AND seq > ? ORDER BY seq"
            # Sequence numbers bound the new rows: room for all of them at once, then rows read in chunks,
            # so a first search of a large namespace holds one chunk of row objects, not all of them.
            new = last_seq - index.last_seq
            if new > REFRESH_CHUNK:  # deletions leave gaps in the sequence: count what is there
                new = int(
                    conn.execute(
                        f"SELECT COUNT(*) FROM {space.codes_table} WHERE namespace = ? AND seq > ?",
                        (namespace, index.last_seq),
                    ).fetchone()[0]
                )
            held = index.float_bytes
            try:
                index.reserve(new)
                cursor = conn.execute(sql, (namespace, index.last_seq))
                while rows := cursor.fetchmany(REFRESH_CHUNK):
                    index.extend(rows)
            finally:  # its floats grew, or were dropped past the budget
                self._float_total += index.float_bytes - held
        if self.graphs is not None:
            index.graph = self.graphs.current(conn, space, namespace, index.size, last_seq, deletions)
        return index


def read_counters(conn: Any, space: Space, namespace: str) -> tuple[int, int] | None:
    """``namespace``'s last sequence number and deletion count in ``space`` (one primary-key read); None: no vector."""
    row = conn.execute(
        f"SELECT last_seq, deletions FROM {space.counters_table} WHERE space_id = ? AND namespace = ?",
        (space.space_id, namespace),
    ).fetchone()
    return None if row is None else (int(row[0]), int(row[1]))


def _stored(counters: tuple[int, int] | None) -> int:
    return 0 if counters is None else max(counters[0] - counters[1], 0)


def stored_vectors(conn: Any, space: Space, namespace: str) -> int:
    """How many vectors ``namespace`` holds in ``space`` (from its counters: one primary-key read)."""
    return _stored(read_counters(conn, space, namespace))


def _counter(conn: Any, space: Space, namespace: str, seq: int, deletions: int) -> int:
    row = conn.execute(
        f"INSERT INTO {space.counters_table} (space_id, namespace, last_seq, deletions) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (space_id, namespace) DO UPDATE SET last_seq = last_seq + excluded.last_seq, "
        "deletions = deletions + excluded.deletions RETURNING last_seq",
        (space.space_id, namespace, seq, deletions),
    ).fetchone()
    return int(row[0])


def delete_vectors(conn: Any, space: Space, namespace: str, rids: list[int]) -> None:
    """Remove the vectors and codes of ``rids`` (items of ``namespace``) from ``space``."""
    if not rids:
        return
    ids = json.dumps(rids)
    conn.execute(f"DELETE FROM {space.vectors_table} WHERE rid IN (SELECT value FROM json_each(?))", (ids,))
    removed = conn.execute(
        f"DELETE FROM {space.codes_table} WHERE rid IN (SELECT value FROM json_each(?))", (ids,)
    ).rowcount
    if removed > 0:
        _counter(conn, space, namespace, 0, removed)


def write_vector(conn: Any, space: Space, namespace: str, rid: int, vector: Vector) -> None:
    """Store ``vector`` for item ``rid`` in ``space``, replacing any previous one (caller checked its shape)."""
    delete_vectors(conn, space, namespace, [rid])
    write_new_vectors(conn, space, namespace, [(rid, vector)])


def write_new_vectors(conn: Any, space: Space, namespace: str, rows: Sequence[tuple[int, Vector]]) -> None:
    """Store the vectors of rows that have none yet (e.g. just inserted), with one counter update for all.

    Rids must be distinct and without a vector in ``space`` (the caller
    checked shapes). One ``vector_counters`` upsert per batch instead of one
    per vector: per-vector upserts with RETURNING made long bulk loads slow
    down steadily (measured: 3,200/s falling to 1,560/s by 150k rows).
    """
    if not rows:
        return
    rids = [rid for rid, _ in rows]
    data = storable_rows(space, [vector for _, vector in rows])
    conn.executemany(
        f"INSERT INTO {space.vectors_table} (rid, embedding) VALUES (?, ?)",
        [(rid, row.tobytes()) for rid, row in zip(rids, data, strict=True)],
    )
    first = _counter(conn, space, namespace, len(rids), 0) - len(rids) + 1
    codes = quantize_rows(coded(data, space.code), space.words)  # one product for the batch
    conn.executemany(
        f"INSERT INTO {space.codes_table} (namespace, seq, rid, code) VALUES (?, ?, ?, ?)",
        [(namespace, first + n, rid, code) for n, (rid, code) in enumerate(zip(rids, codes, strict=True))],
    )


def _exact(conn: Any, space: Space, where: str, params: list[Any], query: Vector, k: int) -> list[ChannelHit]:
    """Every row passing the filter (read in SQL with its vector) scored; the best ``k``, ties by id."""
    rows = conn.execute(
        f"SELECT v.embedding, i.id{space.rank_columns} FROM {space.owner_table} i "
        f"JOIN {space.vectors_table} v ON v.rid = i.rid WHERE {where}",
        params,
    ).fetchall()
    return _best(space, rows, cosines(space, [row[0] for row in rows], query), k)


def _exact_from_copy(
    conn: Any, space: Space, index: Candidates, where: str, params: list[Any], query: Vector, k: int
) -> list[ChannelHit] | None:
    """What :func:`_exact` returns, the rows' vectors taken from ``index``'s float copy instead of the table.

    The rows passing the filter are read with the sequence number of their
    vector (its codes row), which names the copy's entry holding that very
    vector; None when the copy lacks one (or holds no vectors): the caller reads them.
    """
    rows = conn.execute(
        f"SELECT c.seq, i.id{space.rank_columns} FROM {space.owner_table} i "
        f"CROSS JOIN {space.codes_table} c ON c.rid = i.rid WHERE {where}",
        params,
    ).fetchall()
    scores = index.cosines_at([row[0] for row in rows], query)
    return None if scores is None else _best(space, rows, scores, k)


def _best(space: Space, rows: Sequence[Sequence[Any]], scores: npt.NDArray[np.float32], k: int) -> list[ChannelHit]:
    """Hits of the best ``k`` of ``rows`` (each ``(_, id, rank columns…)``) by ``scores``, ties by id."""
    if len(rows) > k:  # every row at least as good as the k-th best (ties at the cut are broken by id below)
        kth = float(scores[np.argpartition(-scores, k - 1)[k - 1]])
        keep = np.flatnonzero(scores >= kth).tolist()
    else:
        keep = list(range(len(rows)))
    best = sorted((-float(scores[n]), str(rows[n][1]), n) for n in keep)[:k]
    return [_hit(space, item_id, -negative, rows[n]) for negative, item_id, n in best]


def _rescore(
    conn: Any, space: Space, rids: list[int], where: str, params: list[Any], query: Vector, k: int
) -> tuple[list[ChannelHit], float]:
    """The best ``k`` of ``rids`` passing the filter by exact cosine (ties by id), and the share that passed.

    One statement reads each candidate's row (checking the filter) and its
    vector; a candidate whose vector is gone is not counted as passing.
    """
    if not rids:
        return [], 0.0
    rows = conn.execute(
        f"SELECT v.embedding, i.id{space.rank_columns} FROM json_each(?) AS j "
        f"CROSS JOIN {space.owner_table} i ON i.rid = j.value "
        f"CROSS JOIN {space.vectors_table} v ON v.rid = i.rid WHERE {where}",
        [json.dumps(rids), *params],
    ).fetchall()
    scores = cosines(space, [row[0] for row in rows], query).tolist()
    best = sorted((-score, str(row[1]), n) for n, (score, row) in enumerate(zip(scores, rows, strict=True)))[:k]
    hits = [_hit(space, item_id, -negative, rows[n][1:]) for negative, item_id, n in best]
    return hits, len(rows) / len(rids)


def _check_scored(
    conn: Any,
    space: Space,
    namespace: str,
    scored: tuple[list[tuple[int, float]], bool],
    where: str,
    params: list[Any],
    k: int,
) -> tuple[list[ChannelHit], float]:
    """Candidates with their cosines, named by row id (``by_rid``) or by sequence number.

    By sequence number only entries the codes table still holds count; by
    row id (a copy with no stale entry) the owner rows are checked alone.
    """
    candidates, by_rid = scored
    if by_rid:
        return _best_passing(
            conn, space, candidates, (f"json_each(?) AS j CROSS JOIN {space.owner_table} i ON i.rid = j.value", []),
            where, params, k,
        )  # fmt: skip
    rows = (
        f"json_each(?) AS j CROSS JOIN {space.codes_table} c ON c.namespace = ? AND c.seq = j.value "
        f"CROSS JOIN {space.owner_table} i ON i.rid = c.rid"
    )
    return _best_passing(conn, space, candidates, (rows, [namespace]), where, params, k)


def _best_passing(
    conn: Any,
    space: Space,
    scored: Sequence[tuple[int, float]],
    rows: tuple[str, list[Any]],
    where: str,
    params: list[Any],
    k: int,
) -> tuple[list[ChannelHit], float]:
    """The filter checked on ``(key, score)`` candidates best first until ``k`` pass (ties kept).

    ``rows`` is the FROM clause joining the JSON list of keys (``j.value``)
    to the owner rows ``i``, with its parameters after the list. Returns the
    hits and the fraction of the checked candidates that passed the filter.
    """
    source, source_params = rows
    passing: list[tuple[float, str, tuple[Any, ...]]] = []
    chunk = max(k, 16)  # when every candidate passes (no filter beyond the namespace) one chunk is enough
    position = 0
    while position < len(scored):
        batch = scored[position : position + chunk]
        position += len(batch)
        allowed = {
            row[0]: row
            for row in conn.execute(
                f"SELECT j.value, i.id{space.rank_columns} FROM {source} WHERE {where}",
                [json.dumps([row[0] for row in batch]), *source_params, *params],
            ).fetchall()
        }
        passing += [(float(score), str(allowed[key][1]), allowed[key]) for key, score in batch if key in allowed]
        if len(passing) >= k:
            kth_best = sorted((hit[0] for hit in passing), reverse=True)[k - 1]
            if position >= len(scored) or scored[position][1] < kth_best:
                break
        chunk *= 2
    passing.sort(key=lambda hit: (-hit[0], hit[1]))
    hits = [_hit(space, item_id, score, row) for score, item_id, row in passing[:k]]
    return hits, len(passing) / max(position, 1)


class Candidates(Protocol):
    """Where approximate nearest rows come from: a namespace's sign-bit copy, or an engine's own index."""

    @property
    def size(self) -> int:
        """Vectors of the namespace in the space."""
        ...

    @property
    def exact(self) -> bool:
        """True when :meth:`nearest` ranks by exact cosine (fewer candidates need rescoring)."""
        ...

    @property
    def live(self) -> bool:
        """True when :meth:`scored` names its entries by row id (none stale), not by sequence number."""
        ...

    def nearest(self, vector: Vector, n: int) -> list[int]:
        """Row ids of about the ``n`` entries nearest ``vector``."""
        ...

    def wanted(self, k: int, oversample: int, min_candidates: int) -> int:
        """How many candidates to ask for first for ``k`` results (the coarser the ranking, the more)."""
        ...

    def scored(self, vector: Vector, n: int) -> list[tuple[int, float]] | None:
        """``(key, exact cosine)`` of the ``n`` nearest, best first (key: rid if :attr:`live`, else seq); or None."""
        ...

    def all_rids(self) -> list[int]:
        """Every row id of the namespace in the space."""
        ...

    def cosines_at(self, seqs: Sequence[int], vector: Vector) -> npt.NDArray[np.float32] | None:
        """Exact cosines of the entries ``seqs`` (sequence numbers), or None when they are not held."""
        ...


class CandidateCache(Protocol):
    """Gives the current :class:`Candidates` of a namespace in a space (a :class:`CodeCache`, or a native index)."""

    def refresh(self, conn: Any, space: Space, namespace: str, counters: tuple[int, int] | None = None) -> Candidates:
        """The namespace's candidates, up to date (``counters``: its :func:`read_counters`, if already read)."""
        ...

    def holds_vectors(self, space: Space, namespace: str, count: int, share: float = 1.0) -> bool:
        """True when the namespace's candidates hold its ``count`` vectors in memory (:meth:`Candidates.cosines_at`),
        or would, made now within ``share`` of the memory allowed for all namespaces."""
        ...


def search(
    conn: Any,
    cache: CandidateCache,
    space: Space,
    namespace: str,
    predicate: tuple[str, list[Any]],
    probe: tuple[str, list[Any]],
    scope: tuple[str, list[Any]] | None,
    vector: Vector,
    k: int,
    *,
    exact_limit: int = DEFAULT_EXACT_LIMIT,
    oversample: int = DEFAULT_OVERSAMPLE,
    min_candidates: int = DEFAULT_MIN_CANDIDATES,
) -> list[ChannelHit]:
    """Items passing ``predicate`` nearest to ``vector`` by cosine, best first (ties by id), at most ``k``.

    ``predicate`` is the compiled filter (alias ``i``, from
    :func:`~memory.backends.sqlite.sql.compile_filter`), ``probe`` the same
    compiled for checking given rows (``probe=True``); ``scope`` is the
    compiled :func:`~memory.backends.sqlite.sql.scope_of` the filter, a
    superset that only uses indexed columns and so is cheap to count, or
    None when that is the whole namespace (then a namespace with more than
    ``exact_limit`` vectors needs no count). See the module docstring for the strategy.
    """
    if k <= 0:
        return []
    where, params = predicate
    query = np.ascontiguousarray(vector, dtype=np.float32)
    counters = read_counters(conn, space, namespace)
    stored = _stored(counters)
    if stored == 0:  # e.g. a window space no memory of this namespace uses
        return []
    held = cache.holds_vectors(space, namespace, stored, 1.0 if stored > exact_limit else SMALL_COPY_SHARE)
    whole = scope is None and held  # the whole namespace, its vectors in process: ranked in the copy at any size
    if whole or (scope is None and stored > exact_limit):  # the namespace holds at least as many items as vectors
        in_scope = stored
    else:
        where_scope, scope_params = scope if scope is not None else ("i.namespace = ?", [namespace])
        in_scope = conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {space.owner_table} i WHERE {where_scope} LIMIT ?)",
            [*scope_params, exact_limit + 1],
        ).fetchone()[0]
    if in_scope <= exact_limit and not whole:
        if stored > exact_limit and held:  # the copy has them in memory
            copy = cache.refresh(conn, space, namespace, counters)
            hits = _exact_from_copy(conn, space, copy, where, params, query, k)
            if hits is not None:
                return hits
        return _exact(conn, space, where, params, query, k)
    index = cache.refresh(conn, space, namespace, counters)
    if index.size <= exact_limit and not index.exact:  # many matching items, few vectors: rescore them all
        return _rescore(conn, space, index.all_rids(), *probe, query, k)[0]
    # Candidates refined by exact cosine, or from a graph, need far less oversampling than raw sign bits.
    first = index.wanted(k, oversample, min_candidates)
    wanted = min(index.size, first)
    most = min(index.size, max(first, _WIDEN_FROM) * _MAX_WIDENING)
    while True:
        # With the float copy the candidates come with their exact cosines; otherwise their vectors are read.
        scored = index.scored(vector, wanted)
        if scored is not None:
            hits, rate = _check_scored(conn, space, namespace, (scored, index.live), *probe, k)
        else:
            hits, rate = _rescore(conn, space, index.nearest(vector, wanted), *probe, query, k)
        # A filter that lets only a fraction of the candidates through leaves that fraction
        # of the oversampling: widen until at least half of `first` pass (at most `most`).
        if (len(hits) >= k and 2 * rate * wanted >= first) or wanted >= most:
            return hits
        wanted = min(most, max(wanted * 4, int(first / max(rate, 1e-6))))
