"""Time expressions resolved against an anchor date; expectations computed by hand.

The anchor is Wednesday 10 May 2023, 14:00 (ISO week: Monday 8 May to Monday 15 May).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.temporal import TimeMention, resolve_time_expressions

ANCHOR = datetime(2023, 5, 10, 14, 0)


def _one(text: str, anchor: datetime = ANCHOR) -> tuple[str, str, str, str]:
    mentions = resolve_time_expressions(text, anchor)
    assert len(mentions) == 1, mentions
    m = mentions[0]
    return m.text, m.start.date().isoformat(), m.end.date().isoformat(), m.granularity


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went there yesterday.", ("yesterday", "2023-05-09", "2023-05-10", "day")),
        ("Today was long", ("Today", "2023-05-10", "2023-05-11", "day")),
        ("see you tomorrow", ("tomorrow", "2023-05-11", "2023-05-12", "day")),
        ("last night we danced", ("last night", "2023-05-09", "2023-05-10", "day")),
        ("the day before yesterday", ("the day before yesterday", "2023-05-08", "2023-05-09", "day")),
        ("the day after tomorrow", ("the day after tomorrow", "2023-05-12", "2023-05-13", "day")),
    ],
)
def test_days_around_the_anchor(text: str, expected: tuple[str, str, str, str]) -> None:
    assert _one(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("last week", ("last week", "2023-05-01", "2023-05-08", "week")),
        ("this week", ("this week", "2023-05-08", "2023-05-15", "week")),
        ("next week", ("next week", "2023-05-15", "2023-05-22", "week")),
        ("last month", ("last month", "2023-04-01", "2023-05-01", "month")),
        ("this month", ("this month", "2023-05-01", "2023-06-01", "month")),
        ("next month", ("next month", "2023-06-01", "2023-07-01", "month")),
        ("last year", ("last year", "2022-01-01", "2023-01-01", "year")),
        ("this year", ("this year", "2023-01-01", "2024-01-01", "year")),
        ("next year", ("next year", "2024-01-01", "2025-01-01", "year")),
        ("last weekend", ("last weekend", "2023-05-06", "2023-05-08", "week")),
        ("next weekend", ("next weekend", "2023-05-20", "2023-05-22", "week")),
    ],
)
def test_last_this_next_units(text: str, expected: tuple[str, str, str, str]) -> None:
    assert _one(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3 days ago", ("3 days ago", "2023-05-07", "2023-05-08", "day")),
        ("two weeks ago", ("two weeks ago", "2023-04-24", "2023-05-01", "week")),
        ("a week ago", ("a week ago", "2023-05-01", "2023-05-08", "week")),
        ("five months ago", ("five months ago", "2022-12-01", "2023-01-01", "month")),
        ("2 years ago", ("2 years ago", "2021-01-01", "2022-01-01", "year")),
        ("a couple of months ago", ("a couple of months ago", "2023-03-01", "2023-04-01", "month")),
        # a few = 2 to 4: from 4 days ago (6 May) to 2 days ago (8 May) inclusive
        ("a few days ago", ("a few days ago", "2023-05-06", "2023-05-09", "day")),
        ("several weeks ago", ("several weeks ago", "2023-03-20", "2023-04-24", "week")),  # 3 to 7 weeks
        ("in 3 days", ("in 3 days", "2023-05-13", "2023-05-14", "day")),
        ("in two weeks", ("in two weeks", "2023-05-22", "2023-05-29", "week")),
        ("in eight months", ("in eight months", "2024-01-01", "2024-02-01", "month")),
        ("in a year", ("in a year", "2024-01-01", "2025-01-01", "year")),
    ],
)
def test_quantities_ago_and_ahead(text: str, expected: tuple[str, str, str, str]) -> None:
    assert _one(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the week before", ("the week before", "2023-05-01", "2023-05-08", "week")),
        ("the week before last", ("the week before last", "2023-04-24", "2023-05-01", "week")),
        ("the month after", ("the month after", "2023-06-01", "2023-07-01", "month")),
        ("the year before", ("the year before", "2022-01-01", "2023-01-01", "year")),
    ],
)
def test_before_and_after(text: str, expected: tuple[str, str, str, str]) -> None:
    assert _one(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("last Tuesday", ("last Tuesday", "2023-05-09", "2023-05-10", "day")),
        ("last Wednesday", ("last Wednesday", "2023-05-03", "2023-05-04", "day")),
        ("last Friday", ("last Friday", "2023-05-05", "2023-05-06", "day")),
        ("next Friday", ("next Friday", "2023-05-12", "2023-05-13", "day")),
        ("next Wednesday", ("next Wednesday", "2023-05-17", "2023-05-18", "day")),
        ("this Monday", ("this Monday", "2023-05-08", "2023-05-09", "day")),
        ("this past Sunday", ("this past Sunday", "2023-05-07", "2023-05-08", "day")),
        # bare weekday: the sentence's tense decides
        ("We met on Friday.", ("on Friday", "2023-05-05", "2023-05-06", "day")),
        ("I will see her on Friday.", ("on Friday", "2023-05-12", "2023-05-13", "day")),
        ("I'm going to call on Monday", ("on Monday", "2023-05-15", "2023-05-16", "day")),
        ("Wednesday was fun", ("Wednesday", "2023-05-03", "2023-05-04", "day")),
    ],
)
def test_weekdays(text: str, expected: tuple[str, str, str, str]) -> None:
    assert _one(text) == expected


def test_tense_is_read_per_sentence() -> None:
    mentions = resolve_time_expressions("I will go out. We met on Friday.", ANCHOR)
    assert [(m.text, m.start.date().isoformat()) for m in mentions] == [("on Friday", "2023-05-05")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("on March 16, 2022", ("March 16, 2022", "2022-03-16", "2022-03-17", "day")),
        ("March 16th 2022", ("March 16th 2022", "2022-03-16", "2022-03-17", "day")),
        ("16 March 2022", ("16 March 2022", "2022-03-16", "2022-03-17", "day")),
        ("the 16th of March, 2022", ("16th of March, 2022", "2022-03-16", "2022-03-17", "day")),
        ("2022-03-16", ("2022-03-16", "2022-03-16", "2022-03-17", "day")),
        ("2023/05/20 (Sat) 02:21", ("2023/05/20", "2023-05-20", "2023-05-21", "day")),
        ("Jan. 5, 2020", ("Jan. 5, 2020", "2020-01-05", "2020-01-06", "day")),
        ("May 2023", ("May 2023", "2023-05-01", "2023-06-01", "month")),
        ("May of 2021", ("May of 2021", "2021-05-01", "2021-06-01", "month")),
        ("in March 2022", ("March 2022", "2022-03-01", "2022-04-01", "month")),
        ("in 2021", ("in 2021", "2021-01-01", "2022-01-01", "year")),
        ("since 2019", ("since 2019", "2019-01-01", "2020-01-01", "year")),
        # without a year: the most recent one, or the next one when the sentence is future
        ("on March 16", ("March 16", "2023-03-16", "2023-03-17", "day")),
        ("on June 2", ("June 2", "2022-06-02", "2022-06-03", "day")),
        ("I'll fly on June 2", ("June 2", "2023-06-02", "2023-06-03", "day")),
        ("in March", ("in March", "2023-03-01", "2023-04-01", "month")),
        ("in August", ("in August", "2022-08-01", "2022-09-01", "month")),
        ("we will travel in August", ("in August", "2023-08-01", "2023-09-01", "month")),
        ("last May", ("last May", "2022-05-01", "2022-06-01", "month")),
        ("next May", ("next May", "2024-05-01", "2024-06-01", "month")),
        ("last March", ("last March", "2023-03-01", "2023-04-01", "month")),
        ("mid-March", ("mid-March", "2023-03-01", "2023-04-01", "month")),
    ],
)
def test_explicit_dates(text: str, expected: tuple[str, str, str, str]) -> None:
    assert _one(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "you may 5 times",  # modal verb, not the month
        "in may",
        "they march on",
        "a budget of 2000 dollars",
        "Fridays are quiet",  # habitual, no one date
        "2022-02-30",  # impossible date
        "February 30, 2021",
        "nothing here at all",
    ],
)
def test_not_dates(text: str) -> None:
    assert resolve_time_expressions(text, ANCHOR) == []


def test_offsets_order_and_no_overlap() -> None:
    text = "Yesterday I said that two weeks ago, on May 1, 2023, we met; the day before yesterday too."
    mentions = resolve_time_expressions(text, ANCHOR)
    assert [m.text for m in mentions] == ["Yesterday", "two weeks ago", "May 1, 2023", "the day before yesterday"]
    for m in mentions:
        assert text[m.start_char : m.end_char] == m.text
    starts = [m.start_char for m in mentions]
    assert starts == sorted(starts)
    assert all(a.end_char <= b.start_char for a, b in zip(mentions, mentions[1:], strict=False))


def test_time_zone_of_the_anchor_is_kept() -> None:
    tz = timezone(timedelta(hours=-5))
    anchor = datetime(2023, 5, 10, 23, 30, tzinfo=tz)
    (m,) = resolve_time_expressions("yesterday", anchor)
    assert m.start == datetime(2023, 5, 9, tzinfo=tz)
    assert m.end == datetime(2023, 5, 10, tzinfo=tz)
    (u,) = resolve_time_expressions("yesterday", anchor.astimezone(UTC))  # 11 May 04:30 UTC
    assert u.start == datetime(2023, 5, 10, tzinfo=UTC)


def test_year_boundaries() -> None:
    anchor = datetime(2023, 1, 2, 9, 0)  # Monday
    assert _one("last month", anchor)[1:] == ("2022-12-01", "2023-01-01", "month")
    assert _one("yesterday", anchor)[1:] == ("2023-01-01", "2023-01-02", "day")
    assert _one("last week", anchor)[1:] == ("2022-12-26", "2023-01-02", "week")
    assert _one("in December", anchor)[1:] == ("2022-12-01", "2023-01-01", "month")
    assert _one("14 months ago", anchor)[1:] == ("2021-11-01", "2021-12-01", "month")


def test_mention_is_frozen() -> None:
    (m,) = resolve_time_expressions("today", ANCHOR)
    assert isinstance(m, TimeMention)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.text = "x"  # type: ignore[misc]


def test_keyword_ranges_find_what_a_full_scan_finds() -> None:
    """The rules run only near their keywords; on a long mixed text that finds exactly the full scan's mentions."""
    import random

    from memory import temporal

    pieces = [
        "yesterday", "last week", "two years ago", "in 3 days", "the week before last", "on Friday",
        "March 16, 2022", "16th of March 2022", "2022-03-16", "May 2023", "in 2021", "mid-March", "next May",
        "a few days ago", "this past weekend", "I will call on Monday.", "you may 5 times", "a budget of 2000",
        "Fridays are quiet", "the weather", "coding in Python", "week after week", "yearly", "Mayday",
        "last  night", "midMarch", "mid2021", "in mid-2019", "1999/12/31", "this\nmorning", "16 Sept. 2021",
        "the day before yesterday", "in two weeks' time", "weekends", "Tuesday's", "a March 3 meeting",
    ]  # fmt: skip
    rng = random.Random(7)
    filler = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "days", "month", "in", "before"]
    words = []
    for _ in range(3000):
        words.append(rng.choice(pieces) if rng.random() < 0.08 else rng.choice(filler))
    text = " ".join(words)
    fast = resolve_time_expressions(text, ANCHOR)
    everywhere = tuple(temporal._Finder(()) for _ in temporal._FINDERS)
    original, required = temporal._FINDERS, temporal._REQUIRED
    try:
        temporal._FINDERS = everywhere  # no keyword: every rule scans the whole text
        temporal._REQUIRED = tuple(None for _ in required)  # and no range is skipped
        slow = resolve_time_expressions(text, ANCHOR)
    finally:
        temporal._FINDERS, temporal._REQUIRED = original, required
    assert len(fast) > 100
    assert fast == slow


def test_finders_find_what_their_regular_expressions_find() -> None:
    """Needles found by str.find (and grown around digits) give the spans re.finditer gives, overlaps and all."""
    import random
    import re

    from memory import temporal

    reference = {
        temporal._grow_numeric_date: re.compile(r"\d{4}[-/]"),
        temporal._grow_century_year: re.compile(r"(?:19|20)\d\d"),
    }
    rng = random.Random(11)
    alphabet = ["to", "night", "day", "yester", "week", "end", "mar", "may", "sep", "t", "ember", "ago", " ", "-", "/"]
    alphabet += ["1", "9", "2", "0", "19", "20", "2019", "12345", "٣", "²", "mid", "before", "after", "monday"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30)))
        for finder in {f for f in temporal._FINDERS if f.needles and f.within is None}:
            pattern = reference.get(finder.grow) or re.compile("|".join(re.escape(n) for n in finder.needles))  # type: ignore[arg-type]
            assert finder.hits(text, {}) == [m.span() for m in pattern.finditer(text)], (finder.needles, text)


def test_a_long_s_reads_as_s() -> None:
    """The rules match ſ as s (IGNORECASE); the words they found are then looked up as with s, not raised on."""
    for text, plain in (("laſt week", "last week"), ("Auguſt 5", "August 5"), ("ſeveral days ago", "several days ago")):
        found = resolve_time_expressions(text, ANCHOR)
        assert [(m.text, m.start, m.end) for m in found] == [
            (text, m.start, m.end) for m in resolve_time_expressions(plain, ANCHOR)
        ]
