"""Numbers, dates, percentages and quantities are found and normalised so that equal values compare equal."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.numbers import (
    as_written,
    comparable,
    extract_values,
    parse_number,
    present,
    same_value,
)


def kinds(text: str) -> list[tuple[str, float]]:
    return [(v.kind, v.value) for v in extract_values(text)]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3.5 million", 3_500_000.0),
        ("3,500,000", 3_500_000.0),
        ("3.5m", 3_500_000.0),
        ("twelve", 12.0),
        ("two", 2.0),
        ("twenty-five", 25.0),
        ("1.2 billion", 1_200_000_000.0),
        ("0.5", 0.5),
        ("11·9 million", 11_900_000.0),
    ],
)
def test_parse_number_known_values(text, value):
    assert parse_number(text) == pytest.approx(value)


def test_percent_forms_are_one_value():
    forms = ["12%", "12 percent", "12 per cent", "twelve percent"]
    values = [extract_values(f"about {form} of patients")[0] for form in forms]
    assert all(v.kind == "percent" and v.value == 12.0 for v in values)


def test_years_dates_and_quantities():
    assert kinds("It was introduced in 2018 and revised in 2020.") == [("year", 2018.0), ("year", 2020.0)]
    assert kinds("The trial enrolled 2000 patients.") == [("number", 2000.0)]
    assert kinds("Warming peaked in the 1990s.") == [("decade", 1990.0)]
    assert ("month", 3.0) in kinds("on March 3, 2018") and ("year", 2018.0) in kinds("on March 3, 2018")
    assert kinds("the first patient") == [("ordinal", 1.0)]
    assert extract_values("12 patients")[0].unit == "patient"


def test_ranges_give_both_ends_with_their_kind():
    assert kinds("76-85% of people") == [("percent", 76.0), ("percent", 85.0)]
    assert kinds("35.5% to 50.3% of people") == [("percent", 35.5), ("percent", 50.3)]


def test_numbers_inside_names_are_not_values():
    assert kinds("COVID-19 and SARS-CoV-2 and IL-6 and B12 and H2A") == []
    assert kinds("It may rain.") == []


def test_same_value_allows_the_written_precision():
    a = extract_values("3.5 million people")[0]
    assert same_value(a, extract_values("3,500,000 people")[0])
    assert same_value(a, extract_values("3,480,000 people")[0])  # 3.5 million is rounded
    assert not same_value(a, extract_values("3.6 million people")[0])
    assert not same_value(extract_values("in 2018")[0], extract_values("in 2019")[0])


def test_comparable_needs_same_kind_and_unit():
    year = extract_values("in 2018")[0]
    assert comparable(year, extract_values("in 2020")[0])
    assert not comparable(year, extract_values("20% of")[0])
    assert comparable(extract_values("12 patients")[0], extract_values("15 patients")[0])
    assert not comparable(extract_values("12 patients")[0], extract_values("15 hospitals")[0])
    assert present(year, extract_values("from 2016 to 2018"))


@given(st.integers(min_value=1000, max_value=10**12))
def test_grouped_digits_parse_back(n):
    assert parse_number(f"{n:,} units") == n


def test_a_value_is_quoted_as_written_with_its_unit_word():
    text = "Openings are posted for two weeks, over $50 a day, in 2019, limited to 1024*1024 bytes."
    assert [as_written(text, v) for v in extract_values(text)] == [
        "two weeks", "$50", "2019", "1024", "1024 bytes"]


@pytest.mark.parametrize(("text", "unit"), [
    ("a maximum of 240 annual leave hours", "hour"), ("within 10 business days", "day"),
    ("3 attempts per hour", "attempt"), ("12 weeks of leave", "week"), ("5 people in an hour", "people"),
])
def test_a_unit_of_time_behind_modifiers_is_the_unit(text, unit):
    assert extract_values(text)[0].unit == unit


@pytest.mark.parametrize(("text", "written"), [
    ("in pip 22.3 its version was bumped", "22.3"), ("bumped to 1 and the format declared stable", "1"),
    ("exits with 126 or 127 error codes", "126"), ("limited to 5 files and 2 folders", "5 files"),
])
def test_a_function_word_after_a_number_is_not_quoted_with_it(text, written):
    assert as_written(text, extract_values(text)[0]) == written


def test_a_keyword_argument_names_its_numbers_unit():
    values = extract_values("request.form(max_files=1000, max_fields=1000) and timeout = 30")
    assert [(v.value, v.unit) for v in values] == [(1000, "file"), (1000, "field"), (30, "timeout")]
    assert comparable(extract_values("up to 100 files")[0], values[0])
    assert not comparable(extract_values("up to 100 files")[0], values[1])


@pytest.mark.parametrize(("text", "sign", "written"), [
    ("must stay open for at least 48 hours", 1, "at least 48 hours"),
    ("must stay open for at most 48 hours", -1, "at most 48 hours"),
    ("keep it open 48 hours or more", 1, "48 hours or more"),
    ("claim up to $50 a night", -1, "up to $50"),
    ("file it within 30 days", -1, "within 30 days"),
    ("it stays open for 48 hours", 0, ""),
])
def test_a_value_stated_as_a_floor_or_a_ceiling(text, sign, written):
    from pipeline.numbers import bound

    assert bound(text, extract_values(text)[0]) == (sign, written)


def test_a_two_part_number_after_a_name_or_version_is_a_version():
    from pipeline.numbers import extract_values, present

    assert [(v.kind, v.text) for v in extract_values("Git 2.37 added it; see the v2.38 notes.")] == \
        [("version", "2.37"), ("version", "v2.38")]
    assert [v.kind for v in extract_values("Python 3.10 replaced 3.9 (version 3.9 stays a number).")] == \
        ["version", "number", "number"]
    assert extract_values("Python 3.10")[0].value > extract_values("Python 3.9")[0].value  # not 3.1 < 3.9
    assert [v.kind for v in extract_values("About 2.5 million people, within 2.5 days, USD 3.50.")] == \
        ["number", "number", "number"]
    assert extract_values("Currently 7.0 is supported.")[0].kind == "number"  # an adverb, no name
    assert present(extract_values("Git 2.37 added it")[0], extract_values("in 2.37 the"))
