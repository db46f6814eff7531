"""JSON from outside is read strictly, and refused where readers would disagree."""

from __future__ import annotations

import json
import re

import pytest

from leaderlog._json import MAX_INPUT_DEPTH, InputTooDeep, JSONDecodeError, loads_input


def test_a_record_reads_as_it_is() -> None:
    text = '{"type": "person.registered", "data": {"person": "zoe", "name": "Zo\u00eb"}}'
    assert loads_input(text) == json.loads(text)
    assert loads_input(text.encode()) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    ['{"a": 1, "a": 2}', '{"x": {"a": 1, "b": 2, "a": 1}}', '[{"a": 1}, {"b": 1, "b": 1}]'],
)
def test_a_name_repeated_in_one_object_is_refused(text: str) -> None:
    with pytest.raises(JSONDecodeError, match=r"the name '[ab]' appears twice in one object"):
        loads_input(text)


def test_a_long_name_or_number_refused_is_repeated_only_in_part() -> None:
    # The error would otherwise be as large as the document (a 500 KB name repeated whole).
    name = "n" * 100_000
    with pytest.raises(JSONDecodeError) as repeated:
        loads_input(f'{{"{name}": 1, "{name}": 2}}')
    assert f"the name '{'n' * 57}...' appears twice" in str(repeated.value)
    assert len(str(repeated.value)) < 200
    number = 10**300
    with pytest.raises(JSONDecodeError) as too_large:
        loads_input(f'{{"n": {number}}}')
    assert f"integer {str(number)[:57]}... is out of range" in str(too_large.value)


def test_the_same_name_in_different_objects_is_fine() -> None:
    assert loads_input('[{"a": 1}, {"a": 2}, {"b": {"a": 3}}]') == [
        {"a": 1},
        {"a": 2},
        {"b": {"a": 3}},
    ]


@pytest.mark.parametrize("number", [2**64, -(2**63) - 1, 10**30])
def test_an_integer_beyond_64_bits_is_refused(number: int) -> None:
    with pytest.raises(JSONDecodeError, match=f"integer {number} is out of range"):
        loads_input(f'{{"n": {number}}}')


@pytest.mark.parametrize(
    ("text", "stored_as"),
    [
        ("12345678901234567890.5", "1.2345678901234567e+19"),
        ("0.1000000000000000055511151231257827", "0.1"),
        ("1e-400", "0.0"),
    ],
)
def test_a_number_with_more_digits_than_a_float_holds_is_refused(text: str, stored_as: str) -> None:
    # orjson alone reads the nearest 64-bit float, silently: it would read back as another
    # number than the one given
    with pytest.raises(
        JSONDecodeError,
        match=re.escape(
            f"number {text} has more digits than a 64-bit float holds: it would be kept "
            f"as {stored_as}"
        ),
    ):
        loads_input(f'{{"n": {text}}}')


@pytest.mark.parametrize("text", ["1.1", "0.1", "1e2", "1.0E2", "-0.0", "2.5e-5", "1e308"])
def test_a_number_a_float_holds_is_read(text: str) -> None:
    assert loads_input(f'{{"n": {text}}}') == {"n": float(text)}


def test_the_limits_of_64_bits_and_long_digit_strings_are_read() -> None:
    text = f'{{"big": {2**64 - 1}, "small": {-(2**63)}, "digits": "{"9" * 40}"}}'
    assert loads_input(text) == {"big": 2**64 - 1, "small": -(2**63), "digits": "9" * 40}


@pytest.mark.parametrize("depth", [MAX_INPUT_DEPTH + 1, 500, 1000])
def test_nesting_past_the_limit_is_refused_before_a_second_reading(depth: int) -> None:
    # A long number makes the second (recursive) reading necessary: it must never run.
    text = "[" * depth + '"1234567890123456789012", 12345678901234567890123' + "]" * depth
    with pytest.raises(InputTooDeep, match=f"nested deeper than {MAX_INPUT_DEPTH} levels"):
        loads_input(text)


def test_nesting_up_to_the_limit_is_read() -> None:
    text = "[" * MAX_INPUT_DEPTH + "1" + "]" * MAX_INPUT_DEPTH
    assert loads_input(text) == json.loads(text)
    # Brackets inside strings are not nesting.
    assert loads_input(json.dumps({"text": "[{" * 100})) == {"text": "[{" * 100}


def test_bytes_that_are_not_utf8_are_named() -> None:
    with pytest.raises(JSONDecodeError, match=r"not UTF-8 text \(byte 0xEB\): .* \(char 12\)"):
        loads_input('{"name": "Zo\u00eb"}'.encode("latin-1"))


@pytest.mark.parametrize("text", ["NaN", '{"n": Infinity}', '"\\ud800"', "{", ""])
def test_what_orjson_refuses_stays_refused(text: str) -> None:
    with pytest.raises(JSONDecodeError):
        loads_input(text)


def test_nesting_beyond_what_orjson_itself_reads_is_refused_as_too_deep() -> None:
    # Given a value nested past orjson's own limit (1024), far past ours
    text = "[" * 5000 + "]" * 5000
    # When it is read as input, then it is refused for its depth, as a shallower one is,
    # not with orjson's "depth limit exceeded" and a column
    with pytest.raises(InputTooDeep, match=f"^nested deeper than {MAX_INPUT_DEPTH} levels$"):
        loads_input(text)


def test_a_value_nested_exactly_to_the_limit_is_read_even_with_brackets_in_its_strings() -> None:
    # Given a value exactly MAX_INPUT_DEPTH deep whose text holds more brackets than that
    text = "[" * MAX_INPUT_DEPTH + '"[{"' + "]" * MAX_INPUT_DEPTH
    # When it is read, then it is read: only nesting past the limit is refused
    assert loads_input(text) == json.loads(text)


def test_a_name_as_long_as_the_echo_limit_is_repeated_whole() -> None:
    # Given a repeated name of exactly 60 characters (the most an error repeats)
    name = "n" * 60
    # When it is refused, then the error names it whole, without "..."
    with pytest.raises(JSONDecodeError) as repeated:
        loads_input(f'{{"{name}": 1, "{name}": 2}}')
    assert f"the name {name!r} appears twice in one object" in str(repeated.value)


def test_a_refusal_of_readable_json_says_why_without_a_position() -> None:
    # Given JSON that parses but is refused (a name given twice)
    # When it is read, then its message is the reason alone: no position is meant
    with pytest.raises(JSONDecodeError) as refused:
        loads_input(b'{"a": 1, "a": 2}')
    assert str(refused.value) == "the name 'a' appears twice in one object"
