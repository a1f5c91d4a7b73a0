"""The ``calculator`` plugin: exact arithmetic the model would otherwise guess at.

The expression is parsed with :mod:`ast` and only numbers, arithmetic operators and a few math
functions are evaluated (no ``eval``: nothing else in Python is reachable). Sizes are bounded,
so ``9**9**9`` is refused instead of freezing the bot.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Annotated

from pydantic import Field

from bot.plugins import Plugin, ToolContext, tool

MAX_LENGTH = 500
MAX_BITS = 4096  # integers up to ~1,233 digits
MAX_DEPTH = 50

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log2": math.log2,
    "log10": math.log10,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "floor": math.floor,
    "ceil": math.ceil,
    "factorial": math.factorial,
}
_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}


class CalculationError(ValueError):
    """An expression that is not arithmetic, or too big to compute."""


def evaluate(expression: str) -> Number:
    if len(expression) > MAX_LENGTH:
        raise CalculationError(f"the expression is longer than {MAX_LENGTH} characters")
    source = expression.replace("^", "**").replace("×", "*").replace("÷", "/").strip()
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError:
        raise CalculationError("that is not an arithmetic expression") from None
    return _check(_eval(tree.body, 0))


def _eval(node: ast.AST, depth: int) -> Number:
    if depth > MAX_DEPTH:
        raise CalculationError("the expression is nested too deeply")
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value: Number = node.value  # type: ignore[assignment]  # checked just above
        return _check(value)
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand, depth + 1))
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, depth + 1), _eval(node.right, depth + 1)
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
        function = _BINARY.get(type(node.op))
        if function is not None:
            if isinstance(node.op, ast.Mult):
                _guard_bits(_bits(left) + _bits(right))
            return _check(function(left, right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        function = _FUNCTIONS.get(node.func.id)
        if function is not None:
            args = [_eval(arg, depth + 1) for arg in node.args]
            _guard_call(node.func.id, args)
            try:
                return _check(function(*args))
            except TypeError as exc:  # abs(), min(1), factorial(2.5)
                raise CalculationError(f"{node.func.id}: {exc}") from None
    raise CalculationError(
        f"{ast.unparse(node)!r} is not allowed (numbers and + - * / // % ** only)"
    )


def _guard_call(name: str, args: list[Number]) -> None:
    if name == "factorial" and args and abs(args[0]) > 1000:
        raise CalculationError("factorial is limited to 1000!")
    if name == "round" and len(args) > 1 and abs(args[1]) > 1000:
        raise CalculationError("round() keeps at most 1000 digits")


def _power(base: Number, exponent: Number) -> Number:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        _guard_bits(_bits(base) * exponent)
    elif abs(exponent) > 10_000:
        raise CalculationError("the exponent is too large")
    return _check(base**exponent)


def _bits(value: Number) -> int:
    return abs(int(value)).bit_length() if isinstance(value, int) else 64


def _guard_bits(bits: int) -> None:
    if bits > MAX_BITS:
        raise CalculationError("the result would be too large to compute")


def _check(value: Number | complex) -> Number:
    if isinstance(value, complex):
        raise CalculationError("the result is a complex number")
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculationError("the result is not a finite number")
    if isinstance(value, int):
        _guard_bits(value.bit_length())
    return value


def format_number(value: Number) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.15g}" if isinstance(value, float) else str(value)


@tool(timeout=5)
async def calculate(
    ctx: ToolContext,
    expression: Annotated[
        str, Field(description="arithmetic like 2**10 * 3, (1+2)/7, sqrt(2), 15 % 4")
    ],
) -> str:
    """Evaluate an arithmetic expression exactly. Use it for any calculation."""
    try:
        value = evaluate(expression)
    except CalculationError as exc:
        return f"Error: {exc}"
    except (ZeroDivisionError, OverflowError, ValueError) as exc:
        return f"Error: {exc}"
    return f"{expression.strip()} = {format_number(value)}"


def setup(plugin: Plugin) -> None:
    plugin.add_tool(calculate)
