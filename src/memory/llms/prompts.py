"""Every prompt the library sends to an LLM, in one place, versioned.

Bump :data:`PROMPT_VERSION` whenever a template changes; results and ledger
reasons carry it, so a change in extraction quality can be traced to a
prompt change.
"""

from __future__ import annotations

import json
from typing import Any

from memory.errors import InvalidInputError
from memory.llms.base import LLM, ChatMessage, ChatRequest, ChatResult, OutputT

__all__ = ["PROMPT_VERSION", "TASKS", "render", "repair_message", "structured"]

PROMPT_VERSION = "extract-v1/facts-v1/decide-v1/summarize-v1/section-v1/refine-v1/reflect-v1"

_EXTRACT_SYSTEM = """You extract structured memory from text for a long-term memory store.
Answer with one JSON object and nothing else:
{"facts": [...], "keywords": [...], "entities": [{"name": ..., "type": ...}],
 "relations": [{"subject": ..., "predicate": ..., "object": ...}]}
- facts: short standalone statements, each true on its own (resolve "I"/"my" to the speaker if known).
- keywords: the few words someone would search for.
- entities: people, places, organisations, products, dates; type is one of
  person, place, organisation, date, thing.
- relations: subject and object are entity names; predicate is a short verb phrase in lower case.
Example: "Alice moved to Berlin in 2021." ->
{"facts": ["Alice moved to Berlin in 2021."], "keywords": ["alice", "moved", "berlin"],
 "entities": [{"name": "Alice", "type": "person"}, {"name": "Berlin", "type": "place"},
 {"name": "2021", "type": "date"}],
 "relations": [{"subject": "Alice", "predicate": "moved to", "object": "Berlin"}]}"""

_FACTS_SYSTEM = """You turn one chat message into facts for a long-term memory about the people in the chat.
Answer with one JSON object and nothing else:
{"facts": [{"statement": ..., "subject": ..., "predicate": ..., "object": ..., "negated": false, "when": null}],
 "entities": [{"name": ..., "type": ...}], "correction": null}
- Only what the message states about a person: where they live, work, study; their job, family, partner,
  friends, pets; likes and dislikes; plans and goals; health and allergies; events and when they happened.
- Greetings, thanks, questions, compliments and small talk give no facts: answer {"facts": [], "entities": []}.
- statement: one short, self-contained sentence in the third person. Replace "I"/"me"/"my" with the
  SPEAKER's name and "you"/"your" with the LISTENER's name; never write "I" or "you".
- subject: the person the fact is about (a name). predicate: a short verb phrase in lower case
  ("lives in", "works at", "works as", "has manager", "has cat", "likes", "is allergic to", "plans to").
  object: the value ("Porto"), or "" when there is none.
- negated: true when the message says it is no longer or not true ("I don't eat meat any more").
- when: the time expression exactly as said ("last week", "in 2019"), or null; leave relative
  expressions out of the statement.
- entities: people, places, organisations, dates, things named in the message; type is one of
  person, place, organisation, date, thing.
- correction: when the message corrects the speaker's previous message ("sorry, I meant Tuesday"),
  the corrected value ("Tuesday") and no facts.
Example: SPEAKER Maya, LISTENER Tom, text "I moved to Porto last week!" ->
{"facts": [{"statement": "Maya moved to Porto.", "subject": "Maya", "predicate": "moved to",
 "object": "Porto", "negated": false, "when": "last week"}],
 "entities": [{"name": "Maya", "type": "person"}, {"name": "Porto", "type": "place"}], "correction": null}"""


def _facts_user(inputs: dict[str, Any]) -> str:
    lines = [f"SPEAKER: {inputs['speaker']}"]
    if inputs.get("listener"):
        lines.append(f"LISTENER: {inputs['listener']}")
    if inputs.get("date"):
        lines.append(f"DATE: {inputs['date']}")
    lines.append("Text:\n" + str(inputs["text"]))
    return "\n".join(lines)


_DECIDE_SYSTEM = """You maintain a memory store. Compare a NEW fact with EXISTING memories (numbered) and choose one action:
- ADD: the new fact is new information.
- NOOP: an existing memory already says the same thing (target = its number).
- UPDATE: the new fact adds detail to an existing memory about the same thing; give the merged text in "merged".
- SUPERSEDE: the new fact replaces an existing one that was true before but is no longer (e.g. a new address).
- DELETE: the new fact says an existing memory is false (target = its number).
Answer with one JSON object: {"action": ..., "target": number or null, "merged": text or null, "reason": short text}"""


def _extract_user(inputs: dict[str, Any]) -> str:
    known = inputs.get("known_entities") or []
    speaker = inputs.get("speaker")
    lines = []
    if speaker:
        lines.append(f"Speaker: {speaker}")
    if known:
        lines.append("Known entities: " + ", ".join(str(k) for k in known[:50]))
    lines.append("Text:\n" + str(inputs["text"]))
    return "\n".join(lines)


def _decide_user(inputs: dict[str, Any]) -> str:
    existing = inputs.get("neighbours") or []
    numbered = "\n".join(f"[{i}] {n['content']}" for i, n in enumerate(existing)) or "(none)"
    return f"NEW: {inputs['fact']}\nEXISTING:\n{numbered}"


_SUMMARIZE_SYSTEM = """A conversation has ended. Update the agent's working-memory blocks from it.
Answer with one JSON object and nothing else:
{"last_conversation_summary": text, "user_info": text or null, "goals_and_status": text or null,
 "important_context": text or null}
- last_conversation_summary: what the conversation was about and what was decided, a few sentences.
- user_info: the CURRENT user_info block rewritten with anything new the user said about themselves
  (keep what is still true); null if nothing changed.
- goals_and_status: the user's goals and their status, updated; null if nothing changed.
- important_context: anything else the agent must keep in mind; null if nothing.
Each value must stay under its size limit (characters), given with the current blocks."""

_SECTION_SYSTEM = """You shorten a section of an LLM prompt so it fits a token budget.
Keep the facts that matter for the QUERY; drop the rest. Never invent anything.
Answer with one JSON object and nothing else: {"summary": text}"""


def _summarize_user(inputs: dict[str, Any]) -> str:
    blocks = inputs.get("blocks") or {}
    current = "\n".join(
        f"[{label}] (limit {b['limit']} chars): {b['value'] or '(empty)'}" for label, b in blocks.items()
    )
    lines = "\n".join(f"{m['who']}: {m['content']}" for m in inputs.get("messages") or [])
    return f"CURRENT BLOCKS:\n{current or '(none)'}\n\nCONVERSATION:\n{lines}"


def _section_user(inputs: dict[str, Any]) -> str:
    query = inputs.get("query") or "(none)"
    return f"QUERY: {query}\nBUDGET: about {inputs['max_words']} words\nSECTION:\n{inputs['text']}"


_REFINE_SYSTEM = """You improve the system prompt of an AI agent from user feedback.
You get the CURRENT PROMPT and conversations in which it did badly: their summary, the user's
feedback, an example of the behaviour the user wanted, and the reward (0 bad .. 1 good).
Rewrite the prompt so the agent avoids those failures: keep every instruction that is still right,
add short, general rules (never copy private details of one conversation), stay under the size limit.
Answer with one JSON object and nothing else: {"prompt": text, "rationale": short text}"""

_REFLECT_SYSTEM = """You help an AI agent learn from a finished conversation.
You get its summary, the prompt version used, the user's feedback, an example of the wanted
behaviour, and the reward (0 bad .. 1 good). Write one to three short lessons the agent should
follow next time, each one general and actionable ("When ..., do/avoid ...").
Answer with one JSON object and nothing else: {"outcome": "went_well" | "went_badly" | "mixed",
 "lessons": [text, ...]}"""


def _refine_user(inputs: dict[str, Any]) -> str:
    rows = []
    for n, c in enumerate(inputs.get("conversations") or [], 1):
        parts = [f"[{n}] reward {c.get('reward')}"]
        for key in ("summary", "feedback", "example", "suggestion"):
            if c.get(key):
                parts.append(f"  {key}: {c[key]}")
        rows.append("\n".join(parts))
    return (
        f"PROMPT NAME: {inputs.get('name')}\nSIZE LIMIT: {inputs.get('max_chars')} characters\n"
        f"CURRENT PROMPT:\n{inputs.get('prompt')}\n\nLOW-REWARD CONVERSATIONS:\n" + ("\n".join(rows) or "(none)")
    )


def _reflect_user(inputs: dict[str, Any]) -> str:
    lines = [f"REWARD: {inputs.get('reward')}"]
    for key in ("prompt", "summary", "feedback", "example", "suggestion", "components"):
        if inputs.get(key):
            lines.append(f"{key.upper()}: {inputs[key]}")
    return "\n".join(lines)


TASKS = {
    "extract": (_EXTRACT_SYSTEM, _extract_user),
    "extract_facts": (_FACTS_SYSTEM, _facts_user),
    "decide": (_DECIDE_SYSTEM, _decide_user),
    "summarize_conversation": (_SUMMARIZE_SYSTEM, _summarize_user),
    "summarise_section": (_SECTION_SYSTEM, _section_user),
    "refine_prompt": (_REFINE_SYSTEM, _refine_user),
    "reflect_conversation": (_REFLECT_SYSTEM, _reflect_user),
}


def render(task: str, inputs: dict[str, Any]) -> list[ChatMessage]:
    """The chat messages for ``task`` filled with ``inputs``. Raises InvalidInputError for an unknown task."""
    try:
        system, user = TASKS[task]
    except KeyError:
        raise InvalidInputError(f"unknown LLM task {task!r}; known: {', '.join(sorted(TASKS))}") from None
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user(inputs))]


def repair_message(problem: str, schema: dict[str, Any]) -> ChatMessage:
    """The follow-up sent after an invalid answer: what was wrong and the schema to follow."""
    return ChatMessage(
        role="user",
        content=(
            f"Your answer was not valid: {problem}. Answer again with only one JSON object "
            f"matching this JSON schema:\n{json.dumps(schema)}"
        ),
    )


def structured(llm: LLM, task: str, inputs: dict[str, Any], schema: type[OutputT]) -> ChatResult[OutputT]:
    """Render the versioned prompt for ``task`` with ``inputs`` and ask ``llm`` for a ``schema`` answer."""
    request = ChatRequest(
        task=task, inputs=inputs, messages=tuple(render(task, inputs)), schema=schema, prompt_version=PROMPT_VERSION
    )
    return llm.chat(request)
