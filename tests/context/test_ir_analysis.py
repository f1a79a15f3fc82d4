"""Prompt IR (seed 000): compress, estimate_impact, equivalent, entropy, the compiled-prompt cache, embeddings."""

from __future__ import annotations

import random
import string
from datetime import UTC, datetime

import numpy as np
import pytest

from memory import Memory
from memory.context import (
    DEFAULT_CACHE,
    ContextRequest,
    ContextStrategy,
    PromptCache,
    PromptIR,
    PromptMeta,
    Section,
    SectionSource,
    TokenBudget,
    ToolDef,
    build_context,
    compile_prompt,
    compress,
    counter_for,
    embed_ir,
    equivalent,
    estimate_impact,
    estimated_entropy,
)
from memory.embedders.hashing import HashingEmbedder
from memory.embedders.zero import ZeroEmbedder
from memory.errors import InvalidInputError

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
COUNTER = counter_for("gpt-4o")
WORDS = "maya moved to lisbon after years in porto and now works at a bakery near the river".split()


def sec(id: str, content: str, **kw: object) -> Section:
    kw.setdefault("source", SectionSource(kind="static", name="test"))
    kw.setdefault("label", id.capitalize())
    return Section(id=id, content=content, **kw)  # type: ignore[arg-type]


def make_ir(sections: list[Section], total: int = 4000, observation: str = "Where does Maya live?") -> PromptIR:
    meta = PromptMeta(budget=TokenBudget(total=total), strategy=ContextStrategy(), timestamp=NOW)
    return PromptIR(sections=tuple(sections), observation=observation, meta=meta)


def prose(seed: int, words: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def big_ir() -> PromptIR:
    return make_ir(
        [
            sec("system", "You are a helpful assistant.", priority="critical", composition="hierarchical"),
            *[
                sec(f"fact{i}", prose(i, 120), priority="medium", relevance=0.9 - i * 0.1, min_tokens=20)
                for i in range(6)
            ],
            sec("low", prose(99, 200), priority="low", shrink="none"),
        ],
        total=400,
    )


# -- compress ------------------------------------------------------------------------
def test_compress_fits_the_budget_and_compile_uses_it() -> None:
    ir = big_ir()
    budget = ir.meta.budget
    compressed = compress(budget, ir, counter=COUNTER)
    assert compressed.meta.total_tokens is not None and 0 < compressed.meta.total_tokens <= budget.usable
    assert compressed.meta.compression_ratio is not None and 0 < compressed.meta.compression_ratio < 1
    assert compressed.meta.estimated_entropy is not None and compressed.meta.estimated_entropy > 0
    assert len(compressed.sections) < len(ir.sections) or any(
        a.content != b.content for a, b in zip(compressed.sections, ir.sections, strict=False)
    )
    assert {s.id for s in compressed.sections} <= {s.id for s in ir.sections}
    compiled = compile_prompt(ir, counter=COUNTER)
    assert compiled.sections == compressed.sections  # compile renders what compress kept
    assert compiled.trace.compression_ratio == compressed.meta.compression_ratio
    assert compiled.trace.estimated_entropy == compressed.meta.estimated_entropy
    again = compile_prompt(compressed, counter=COUNTER)  # nothing more to cut
    assert again.system == compiled.system
    assert all(t.status == "kept" for t in again.trace.sections)


def test_compress_to_a_smaller_budget_keeps_less() -> None:
    ir = big_ir()
    roomy = compress(TokenBudget(total=4000), ir, counter=COUNTER)
    tight = compress(TokenBudget(total=150), ir, counter=COUNTER)
    assert roomy.meta.compression_ratio == 1.0 and len(roomy.sections) == len(ir.sections)
    assert tight.meta.budget.total == 150 and tight.meta.total_tokens is not None and tight.meta.total_tokens <= 150
    assert tight.meta.compression_ratio is not None and tight.meta.compression_ratio < 0.5
    assert "system" in {s.id for s in tight.sections}  # critical stays


# -- impact, entropy, equivalence ------------------------------------------------------
def test_estimate_impact_follows_information_priority_relevance_and_given_embedding_norm() -> None:
    rng = random.Random(7)
    varied = "".join(rng.choice(string.ascii_lowercase + " ") for _ in range(600))
    repetitive = "ab " * 200
    assert estimate_impact(sec("a", varied)) > 3 * estimate_impact(sec("b", repetitive))
    base = estimate_impact(sec("c", varied))
    assert estimate_impact(sec("c", varied, priority="high")) > base > estimate_impact(sec("c", varied, priority="low"))
    assert estimate_impact(sec("c", varied, relevance=0.0)) == 0.0
    assert estimate_impact(sec("c", varied, relevance=0.5)) == pytest.approx(base / 2)
    assert estimate_impact(sec("c", varied, embedding=(3.0, 4.0))) == pytest.approx(base * 5)


def test_estimated_entropy_is_higher_for_less_predictable_text() -> None:
    rng = random.Random(3)
    noise = "".join(rng.choice(string.printable[:94]) for _ in range(2000))
    low, high = estimated_entropy("the same line\n" * 150), estimated_entropy(noise)
    assert low is not None and high is not None and low < 1.0 < high
    assert estimated_entropy("", "") is None


def test_equivalent_by_embedding_similarity() -> None:
    a = make_ir([sec("f", "Maya lives in Lisbon and works at a bakery near the river.")])
    same = make_ir([sec("f", "Maya lives in Lisbon and works at a bakery near the river.")])
    close = make_ir([sec("f", "Maya lives in Lisbon, and works at a bakery by the river.")])
    other = make_ir([sec("f", "Quarterly revenue fell as shipping costs doubled in March.")], observation="Costs?")
    assert equivalent(0.0, a, same)
    assert equivalent(0.3, a, close) and not equivalent(0.3, a, other)
    assert not equivalent(0.0, a, close)
    assert equivalent(0.0, a, same, embedder=ZeroEmbedder()) and not equivalent(2.0, a, close, embedder=ZeroEmbedder())
    for bad in (-0.1, 3, True, "x"):
        with pytest.raises(InvalidInputError):
            equivalent(bad, a, same)  # type: ignore[arg-type]


# -- embeddings ------------------------------------------------------------------------
def test_embed_ir_fills_only_missing_section_and_tool_embeddings() -> None:
    tool = ToolDef(name="lookup", description="Look a word up")
    given = (0.5,) * 8
    ir = make_ir([sec("a", "alpha"), sec("b", "beta", embedding=given)]).model_copy(update={"tools": (tool,)})
    filled = embed_ir(ir, ZeroEmbedder(8))
    assert filled.sections[0].embedding == (0.0,) * 8 and filled.sections[1].embedding == given
    assert filled.tools[0].embedding == (0.0,) * 8
    hashed = embed_ir(ir, HashingEmbedder())
    assert hashed.sections[0].embedding is not None and np.isclose(np.linalg.norm(hashed.sections[0].embedding), 1.0)
    assert embed_ir(filled, ZeroEmbedder(8)) is filled  # nothing left to fill


def test_context_fills_embeddings_when_asked() -> None:
    with Memory("memory://", embedder=HashingEmbedder()) as mem:
        mem.remember("Maya lives in Lisbon", user="maya")
        tool = ToolDef(name="recall", description="Search memory")
        plain = mem.context(ContextRequest(observation="Where does Maya live?", user="maya", tools=(tool,)))
        assert all(s.embedding is None for s in plain.sections)
        asked = mem.context(
            ContextRequest(
                observation="Where does Maya live?", user="maya", tools=(tool,),
                strategy=ContextStrategy(embed_sections=True),
            )
        )  # fmt: skip
    assert asked.sections and all(s.embedding is not None and len(s.embedding) == 384 for s in asked.sections)
    assert asked.tools[0].embedding is not None


# -- the compiled-prompt cache ------------------------------------------------------------
def test_cache_serves_an_identical_ir_and_only_that() -> None:
    cache = PromptCache(maxsize=8)
    strategy = ContextStrategy(include_time=False)
    with Memory("memory://", embedder=HashingEmbedder()) as mem:
        mem.remember("Maya lives in Lisbon", user="maya")
        request = ContextRequest(observation="Where does Maya live?", user="maya", strategy=strategy)
        first = build_context(mem, request, cache=cache)
        second = build_context(mem, request, cache=cache)
        assert not first.trace.cache_hit and second.trace.cache_hit
        assert second.system == first.system and second.messages == first.messages
        smaller = build_context(mem, request.model_copy(update={"budget": TokenBudget(total=50)}), cache=cache)
        assert not smaller.trace.cache_hit
        mem.remember("Maya moved to Porto", user="maya")  # the store changed: another IR
        changed = build_context(mem, request, cache=cache)
        assert not changed.trace.cache_hit and "Porto" in changed.system
        other_user = build_context(mem, request.model_copy(update={"user": "tom"}), cache=cache)
        assert not other_user.trace.cache_hit and "Lisbon" not in other_user.system
    assert cache.stats() == {"hits": 1, "misses": 4, "hit_rate": 0.2, "size": 4}


def test_cache_is_bounded_lru_and_can_be_off() -> None:
    cache = PromptCache(maxsize=2)
    ir = big_ir()
    compiled = compile_prompt(ir, counter=COUNTER)
    for key in ("a", "b", "c"):
        cache.put(key, compiled)
    assert cache.get("a") is None and cache.get("c") is compiled
    assert cache.stats()["size"] == 2
    off = PromptCache(maxsize=0)
    off.put("a", compiled)
    assert off.get("a") is None
    with Memory("memory://", embedder=HashingEmbedder()) as mem:
        mem.remember("Maya lives in Lisbon")
        request = ContextRequest(observation="Maya?", strategy=ContextStrategy(include_time=False))
        assert not build_context(mem, request, cache=None).trace.cache_hit
        assert not build_context(mem, request, cache=None).trace.cache_hit
        before = DEFAULT_CACHE.stats()["hits"]
        mem.context(request)
        assert mem.context(request).trace.cache_hit  # the facade uses the process-wide cache
        assert DEFAULT_CACHE.stats()["hits"] == before + 1
