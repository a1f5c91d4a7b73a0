"""The calculator plugin: exact arithmetic, and nothing but arithmetic, within bounded cost."""

from __future__ import annotations

import math
import time
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.llm.client import ToolCall
from bot.plugins import ToolContext, ToolRegistry
from bot.plugins.declare import spec_of
from bot.testing.tools import ALICE, tool_context
from plugins.calculator import (
    MAX_LENGTH,
    CalculationError,
    Number,
    calculate,
    evaluate,
    format_number,
)


def make_ctx() -> ToolContext:
    return tool_context("calculator")


# -- evaluate ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2**10 * 3", 3072),
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("10 - 4 - 3", 3),  # left-associative
        ("2 ** 3 ** 2", 512),  # right-associative
        ("-2 ** 2", -4),  # ** binds tighter than unary minus
        ("(-2) ** 2", 4),
        ("-(-3)", 3),
        ("--5", 5),
        ("+5", 5),
        ("2 * -3", -6),
        ("2^10", 1024),  # ^ is power, not xor
        ("2 ^ 3 ^ 2", 512),
        ("3 × 4", 12),
        ("8 ÷ 2", 4.0),
        ("  1 + 1  ", 2),
        ("7 / 2", 3.5),
        ("1.5 * 4", 6.0),
        ("1e3 + 0.5", 1000.5),
        ("7 // 2", 3),
        ("-7 // 2", -4),  # floor, not truncation
        ("7 % 3", 1),
        ("-7 % 3", 2),  # sign of the divisor
        ("7.5 // 2", 3.0),
        ("7.5 % 2", 1.5),
        ("2 ** -1", 0.5),
        ("4 ** 0.5", 2.0),
        ("sqrt(2)", math.sqrt(2)),
        ("sqrt(16)", 4.0),
        ("pi", math.pi),
        ("e", math.e),
        ("tau", math.tau),
        ("2 * pi", 2 * math.pi),
        ("abs(-3)", 3),
        ("round(2.5)", 2),  # banker's rounding, as Python does
        ("round(3.14159, 2)", 3.14),
        ("min(3, 1, 2)", 1),
        ("max(3, 1, 2)", 3),
        ("floor(2.7)", 2),
        ("ceil(2.1)", 3),
        ("floor(-2.5)", -3),
        ("log(e)", 1.0),
        ("log(8, 2)", 3.0),
        ("log2(1024)", 10.0),
        ("log10(1000)", 3.0),
        ("exp(0)", 1.0),
        ("sin(0)", 0.0),
        ("cos(0)", 1.0),
        ("tan(0)", 0.0),
        ("factorial(10)", 3_628_800),
        ("factorial(0)", 1),
        ("10 ** 1000", 10**1000),  # big but within the size bound: exact
        ("2 ** 2048", 2**2048),
    ],
)
def test_evaluate(expression: str, expected: Number) -> None:
    value = evaluate(expression)
    assert value == expected
    assert type(value) is type(expected)


def test_evaluate_float_rounding_is_pythons() -> None:
    assert evaluate("0.1 + 0.2") == pytest.approx(0.3)
    assert evaluate("0.1 + 0.2") == 0.1 + 0.2


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os')", "is not allowed"),
        ("open('/etc/passwd')", "is not allowed"),
        ("x + 1", "is not allowed"),
        ("(2).bit_length()", "is not allowed"),
        ("math.pi", "is not allowed"),
        ("lambda: 1", "is not allowed"),
        ("(lambda x: x)(1)", "is not allowed"),
        ("[x for x in range(3)]", "is not allowed"),
        ("sum(x for x in (1, 2))", "is not allowed"),
        ("'abc'", "is not allowed"),
        ("'1' * 3", "is not allowed"),
        ("True + 1", "is not allowed"),
        ("1j", "is not allowed"),
        ("1 < 2", "is not allowed"),
        ("max([1, 2])", "is not allowed"),
        ("max(*(1, 2))", "is not allowed"),
        ("round(2.5, ndigits=1)", "is not allowed"),
        ("9**9**9", "too large"),
        ("2**100000", "too large"),
        ("2**4096", "too large"),
        ("2 ** -100000", "too large"),
        ("1.5 ** 100000", "too large"),
        ("(2**2048) * (2**2048)", "too large"),
        ("factorial(100000)", "limited to 1000"),
        ("factorial(1000)", "too large"),  # allowed argument, result over the size bound
        ("1" * (MAX_LENGTH + 1), "longer than"),
        ("-" * 100 + "1", "nested too deeply"),
        ("1e308*10", "not a finite number"),
        ("1e999", "not a finite number"),
        ("(-8) ** 0.5", "complex"),
        ("", "not an arithmetic expression"),
        ("import os", "not an arithmetic expression"),
        ("1 +", "not an arithmetic expression"),
        ("1; 2", "not an arithmetic expression"),
    ],
)
def test_evaluate_refuses(expression: str, message: str) -> None:
    with pytest.raises(CalculationError, match=message):
        evaluate(expression)


def test_parentheses_alone_do_not_count_as_nesting() -> None:
    # Parentheses make no AST nodes; only the parser's own limit applies to them.
    assert evaluate("(" * 100 + "1" + ")" * 100) == 1
    with pytest.raises(CalculationError):
        evaluate("(" * 240 + "1" + ")" * 240)  # past Python's nesting limit: a SyntaxError


# -- format_number ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (3072, "3072"),
        (-5, "-5"),
        (10**20, "100000000000000000000"),  # ints stay exact
        (6.0, "6"),  # integral floats lose the .0
        (-2.0, "-2"),
        (-0.0, "0"),
        (123_456_789_012_345.0, "123456789012345"),
        (1e15, "1e+15"),  # too big to print as an int faithfully
        (1e20, "1e+20"),
        (2.5, "2.5"),
        (0.1 + 0.2, "0.3"),  # 15 significant digits hide binary noise
        (1 / 3, "0.333333333333333"),
        (math.pi, "3.14159265358979"),
        (1e-7, "1e-07"),
    ],
)
def test_format_number(value: Number, text: str) -> None:
    assert format_number(value) == text


# -- the calculate tool -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "text"),
    [
        ("2**10 * 3", "2**10 * 3 = 3072"),
        ("  1+1 ", "1+1 = 2"),
        ("2^10", "2^10 = 1024"),
        ("(1+2)/7", "(1+2)/7 = 0.428571428571429"),
        ("8 / 2", "8 / 2 = 4"),
        ("7 / 2", "7 / 2 = 3.5"),
        ("15 % 4", "15 % 4 = 3"),
        ("-7 // 2", "-7 // 2 = -4"),
        ("sqrt(2)", "sqrt(2) = 1.4142135623731"),
        ("pi", "pi = 3.14159265358979"),
        ("0.1 + 0.2", "0.1 + 0.2 = 0.3"),
    ],
)
async def test_calculate_text(expression: str, text: str) -> None:
    assert await calculate(make_ctx(), expression) == text


@pytest.mark.parametrize(
    "expression",
    [
        "1 / 0",
        "1 // 0",
        "5 % 0",
        "1.5 / 0.0",
        "0 ** -1",
        "log(0)",
        "log(1, 1)",
        "sqrt(-1)",
        "factorial(-1)",
        "exp(1000)",
        "2.0 ** 5000",
        "10 ** 1000 / 3",  # an int too big for a float
        "10 ** 1000 * 1.5",
    ],
)
async def test_calculate_math_errors_are_text(expression: str) -> None:
    result = await calculate(make_ctx(), expression)
    assert result.startswith("Error: ")
    assert len(result) > len("Error: ")


async def test_division_by_zero_says_so() -> None:
    assert await calculate(make_ctx(), "1 / 0") == "Error: division by zero"


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os')",
        "__import__('os').system('true')",
        "open('/etc/passwd')",
        "open",
        "().__class__.__bases__[0].__subclasses__()",
        "(1).real",
        "lambda: 1",
        "[x for x in range(10)]",
        "{x: 1 for x in (1, 2)}",
        "'abc'",
        "f'{1}'",
        "b'1'",
        "print(1)",
        "exit()",
        "globals()",
        "9**9**9",
        "2**100000",
        "factorial(100000)",
        "1" * 10_000,
        "(" * 1000 + "1" + ")" * 1000,
        "-" * 200 + "1",
        "+".join(["1"] * 300),  # 599 characters
        "1e308*10",
        "1e308 + 1e308",
        "a = 1",
        "1 if 1 else 2",
        "\x00",
        "",
        "   ",
    ],
)
async def test_calculate_refuses_with_text(expression: str) -> None:
    started = time.perf_counter()
    result = await calculate(make_ctx(), expression)
    assert result.startswith("Error: ")
    assert time.perf_counter() - started < 1.0


async def test_calculate_through_the_registry() -> None:
    registry = ToolRegistry(is_admin=lambda ctx: False)
    registry.add(spec_of(calculate), lambda spec, chat: make_ctx())
    call = ToolCall(id="c1", name="calculate", arguments='{"expression": "2**10 * 3"}')
    assert await registry.run(ALICE, call) == "2**10 * 3 = 3072"
    schema = spec_of(calculate).definition()["function"]
    assert schema["name"] == "calculate"
    assert schema["parameters"]["required"] == ["expression"]


# -- properties -------------------------------------------------------------------------------


def _leaf(n: int) -> str:
    return str(n) if n >= 0 else f"({n})"


def _join(parts: tuple[str, str, str, bool]) -> str:
    left, op, right, parenthesize = parts
    text = f"{left} {op} {right}"
    return f"({text})" if parenthesize else text


integer_expressions = st.recursive(
    st.integers(-1000, 1000).map(_leaf),
    lambda inner: st.tuples(inner, st.sampled_from("+-*"), inner, st.booleans()).map(_join),
    max_leaves=20,  # at most 19 operators: well under the nesting and size bounds
)


@given(integer_expressions)
@settings(max_examples=300, deadline=None)
def test_integer_arithmetic_matches_python(expression: str) -> None:
    expected = eval(expression, {"__builtins__": {}})  # digits, + - * and parentheses only
    assert isinstance(expected, int)
    value = evaluate(expression)
    assert type(value) is int
    assert value == expected


@given(st.text(max_size=MAX_LENGTH + 20))
@settings(max_examples=300, deadline=None)
async def test_calculate_never_raises_on_any_text(expression: str) -> None:
    started = time.perf_counter()
    result = await calculate(make_ctx(), expression)
    assert isinstance(result, str)
    assert time.perf_counter() - started < 1.0


# Things that parse: numbers, every operator, the constants, and names and syntax it must refuse.
# Function names are covered by the table tests and the regressions below.
_TOKENS = st.sampled_from(
    [
        *"0123456789",
        "9999",
        "1e308",
        "0.5",
        ".",
        " ",
        *"+-*/%^()",
        "**",
        "//",
        "×",
        "÷",
        "pi",
        "e",
        "tau",
        "x",
        "open",
        "__import__",
        "'s'",
        "[",
        "]",
        ",",
        "lambda:",
        " for x in ",
        " if ",
        " else ",
        "True",
        "1j",
    ]
)


@given(st.lists(_TOKENS, max_size=40).map("".join))
@settings(max_examples=300, deadline=None)
async def test_calculate_never_raises_on_token_soup(expression: str) -> None:
    started = time.perf_counter()
    result = await calculate(make_ctx(), expression)
    assert isinstance(result, str)
    assert result.startswith("Error: ") or result.startswith(f"{expression.strip()} = ")
    assert time.perf_counter() - started < 1.0


# -- once bugs, now regressions -----------------------------------------------------------------


@pytest.mark.parametrize(
    "expression", ["abs()", "max()", "min(1)", "sqrt(1, 2)", "factorial(2.5)", "factorial(1e10)"]
)
async def test_bad_function_arguments_are_text(expression: str) -> None:
    assert (await calculate(make_ctx(), expression)).startswith("Error: ")


def test_round_with_a_huge_negative_ndigits_is_cheap() -> None:
    # Measured by memory, not time, to stay deterministic: 10**100000 alone is ~40 KB and the
    # cost grows without bound with n; a bounded implementation allocates next to nothing.
    tracemalloc.start()
    try:
        try:
            value: Number | None = evaluate("round(1, -10**5)")
        except CalculationError:
            value = None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert value in (0, None)
    assert peak < 100_000
