"""The PATTERN of a MATCH_RECOGNIZE clause: read from tokens, and turned into the automaton the Helper runs.

``read_pattern`` builds the pattern's tree (variables, concatenation, alternation ``|``, groups, the
quantifiers ``* + ? {n} {n,} {n,m} {,m}`` and their reluctant forms) and refuses, at their position,
what a stream cannot maintain: the anchors ``^`` and ``$``, exclusion ``{- -}`` and PERMUTE.

``automaton`` derives the states by continuations (no unrolling, no empty moves left): a state is a
variable about to take a row together with what remains of the pattern after it (loop counters
included), and from every state, and from the start, the states reachable next and ACCEPT are listed
in the standard's preference order (greedy quantifiers prefer another iteration, reluctant ones
stopping, alternation its left branch). An iteration that takes no row ends its loop once the loop
has its minimum, as the standard says. A run of the pattern over rows is then a priority-ordered list
of threads, each at a state (Pike's VM), which is what the Helper folds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from sqlglot.tokens import Token, TokenType

from ..errors import ViewDFError
from ..language.source import Fragment

MAX_BOUND = 100         # the largest n in {n}, {n,}, {n,m}
MAX_STATES = 400        # the most automaton states a pattern may have
ACCEPT = 0              # the successor code of a completed match; states are numbered from 1


@dataclass(frozen=True)
class Variable:
    """A pattern variable, taking one row; its name upper-cased (the standard folds unquoted names), and
    where it is written."""

    name: str
    start: int
    end: int


@dataclass(frozen=True)
class Concat:
    """Pieces matched one after the other."""

    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Alternation:
    """Branches tried left to right."""

    branches: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    """``body`` repeated from ``low`` to ``high`` times (``high`` None: no upper bound), preferring more
    repetitions unless ``reluctant``; ``start``/``end`` span the quantifier."""

    body: Node
    low: int
    high: int | None
    reluctant: bool
    start: int
    end: int


Node = Variable | Concat | Alternation | Repeat


def variables(node: Node) -> list[Variable]:
    """The pattern's variable occurrences, left to right."""
    if isinstance(node, Variable):
        return [node]
    if isinstance(node, Repeat):
        return variables(node.body)
    children = node.parts if isinstance(node, Concat) else node.branches
    return [v for child in children for v in variables(child)]


def can_be_empty(node: Node) -> bool:
    """Whether the pattern can match no row at all."""
    if isinstance(node, Variable):
        return False
    if isinstance(node, Repeat):
        return node.low == 0 or can_be_empty(node.body)
    if isinstance(node, Concat):
        return all(can_be_empty(item) for item in node.parts)
    return any(can_be_empty(option) for option in node.branches)


def pattern_text(node: Node) -> str:
    """The pattern written back, e.g. ``A (B | C)+? D{2,}``."""
    if isinstance(node, Variable):
        return node.name
    if isinstance(node, Concat):
        return " ".join(pattern_text(item) for item in node.parts)
    if isinstance(node, Alternation):
        return " | ".join(pattern_text(option) for option in node.branches)
    inner = pattern_text(node.body)
    inner = inner if isinstance(node.body, Variable) else f"({inner})"
    bounds = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((node.low, node.high))
    if bounds is None:
        bounds = "{" + (str(node.low) if node.low == node.high else
                        f"{node.low},{'' if node.high is None else node.high}") + "}"
    return inner + bounds + ("?" if node.reluctant else "")


_QUANTIFIERS = (TokenType.STAR, TokenType.PLUS, TokenType.PLACEHOLDER, TokenType.DQMARK)

# -- reading ------------------------------------------------------------------------------------------------


class _Reader:
    """Recursive descent over the tokens between PATTERN's parentheses."""

    def __init__(self, fragment: Fragment, tokens: list[Token], end: int) -> None:
        self.fragment, self.tokens, self.at, self.end = fragment, tokens, 0, end

    def peek(self, ahead: int = 0) -> Token | None:
        index = self.at + ahead
        return self.tokens[index] if index < len(self.tokens) else None

    def error(self, message: str, token: Token | None) -> ViewDFError:
        if token is None:
            return self.fragment.error(message, self.end, self.end + 1)
        return self.fragment.error(message, token.start, token.end + 1)

    def alternation(self) -> Node:
        options = [self.sequence()]
        while (token := self.peek()) is not None and token.token_type == TokenType.PIPE:
            self.at += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else Alternation(tuple(options))

    def sequence(self) -> Node:
        items: list[Node] = []
        while (token := self.peek()) is not None and token.token_type not in (TokenType.PIPE, TokenType.R_PAREN):
            items.append(self.quantified(self.primary()))
        if not items:
            raise self.error("expected a pattern variable or '(' here; an empty pattern or alternative is not "
                             "supported", self.peek())
        return items[0] if len(items) == 1 else Concat(tuple(items))

    def primary(self) -> Node:
        token = self.peek()
        assert token is not None            # sequence() stops at the end
        self._refuse(token)
        if token.token_type == TokenType.L_PAREN:
            self.at += 1
            node = self.alternation()
            closing = self.peek()
            if closing is None or closing.token_type != TokenType.R_PAREN:
                raise self.error("expected ')' closing this group", closing)
            self.at += 1
            return node
        if token.token_type == TokenType.STRING or not token.text.isidentifier():
            raise self.error(f"expected a pattern variable, found '{token.text}'", token)
        self.at += 1
        return Variable(token.text.upper(), token.start, token.end + 1)

    def _refuse(self, token: Token) -> None:
        text = token.text.upper()
        if token.token_type == TokenType.CARET or text == "^":
            raise self.error("the anchor ^ (start of the partition) is not supported: a maintained view has no "
                             "fixed start of a stream's partition", token)
        if text.startswith("$"):
            raise self.error("the anchor $ (end of the partition) is not supported: a stream's partition never "
                             "ends, so no match could ever be final", token)
        following = self.peek(1)
        if token.token_type == TokenType.L_BRACE and following is not None and following.token_type == TokenType.DASH:
            raise self.error("exclusion {- ... -} is not supported: excluded rows are left out of ALL ROWS PER "
                             "MATCH output, which the view does not implement for them", token)
        if text == "PERMUTE" and following is not None and following.token_type == TokenType.L_PAREN:
            raise self.error("PERMUTE is not supported: write the permutations as alternatives, "
                             "e.g. (A B | B A)", token)

    def quantified(self, node: Node) -> Node:
        token = self.peek()
        if token is None:
            return node
        start = token.start
        if token.token_type == TokenType.DQMARK:          # ?? is one token: a reluctant ?
            self.at += 1
            return self._again(Repeat(node, 0, 1, True, start, token.end + 1))
        if token.token_type in (TokenType.STAR, TokenType.PLUS, TokenType.PLACEHOLDER):
            low, high = {TokenType.STAR: (0, None), TokenType.PLUS: (1, None), TokenType.PLACEHOLDER: (0, 1)}[
                token.token_type]
            self.at += 1
        elif token.token_type == TokenType.L_BRACE and not self._dash_follows():
            low, high = self._bounds()
        else:
            return node
        last = self.tokens[self.at - 1]
        reluctant = (after := self.peek()) is not None and after.token_type == TokenType.PLACEHOLDER
        if reluctant:
            self.at += 1
            last = self.tokens[self.at - 1]
        return self._again(Repeat(node, low, high, reluctant, start, last.end + 1))

    def _again(self, quant: Repeat) -> Repeat:
        """``quant``, refusing a second quantifier right after it."""
        again = self.peek()
        if again is not None and (again.token_type in _QUANTIFIERS or
                                  (again.token_type == TokenType.L_BRACE and not self._dash_follows())):
            raise self.error("a quantifier cannot follow another; put the quantified part in parentheses", again)
        return quant

    def _dash_follows(self) -> bool:
        following = self.peek(1)
        return following is not None and following.token_type == TokenType.DASH

    def _bounds(self) -> tuple[int, int | None]:
        """``{n}``, ``{n,}``, ``{n,m}`` or ``{,m}``."""
        opening = self.peek()
        self.at += 1
        numbers: list[int | None] = [None]
        while (token := self.peek()) is not None and token.token_type != TokenType.R_BRACE:
            if token.token_type == TokenType.COMMA and len(numbers) == 1:
                numbers.append(None)
            elif token.token_type == TokenType.NUMBER and token.text.isdigit() and numbers[-1] is None:
                numbers[-1] = int(token.text)
                if numbers[-1] > MAX_BOUND:  # type: ignore[operator]
                    raise self.error(f"a quantifier's bound may be at most {MAX_BOUND}", token)
            else:
                raise self.error("expected a quantifier such as {2}, {2,}, {2,4} or {,4}", token)
            self.at += 1
        if token is None:
            raise self.error("expected '}' closing this quantifier", opening)
        self.at += 1
        low, high = numbers[0] or 0, numbers[-1]
        if len(numbers) == 1 and high is None:
            raise self.error("expected a number in this quantifier, e.g. {2}", opening)
        if high is not None and (high < low or high == 0):
            raise self.error(f"the quantifier {{{low},{high}}} allows no row; its upper bound must be at least 1 and "
                             f"at least its lower bound", opening)
        return low, high


def read_pattern(fragment: Fragment, tokens: list[Token], end: int) -> Node:
    """The pattern of the tokens between PATTERN's parentheses (``end``: where the closing one is)."""
    reader = _Reader(fragment, tokens, end)
    node = reader.alternation()
    extra = reader.peek()
    if extra is not None:
        raise reader.error(f"unexpected '{extra.text}' in PATTERN", extra)
    return node


# -- the automaton -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rest:
    """Continuation frame: the items of a sequence still to match."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class _Loop:
    """Continuation frame: iteration ``count`` (from 0) of a quantifier is under way; ``took`` says whether
    it has taken a row."""

    quant: Repeat
    count: int
    took: bool


Frames = tuple["_Rest | _Loop", ...]
Outcome = tuple[str, Frames] | None      # (variable, what remains after it takes a row); None: ACCEPT


def _match(node: Node, rest: Frames) -> Iterator[Outcome]:
    """What may happen next when ``node`` is matched and then ``rest``, most preferred first."""
    if isinstance(node, Variable):
        yield node.name, tuple(replace(f, took=True) if isinstance(f, _Loop) else f for f in rest)
    elif isinstance(node, Concat):
        yield from _match(node.parts[0], (_Rest(node.parts[1:]), *rest))
    elif isinstance(node, Alternation):
        for option in node.branches:
            yield from _match(option, rest)
    else:
        yield from _repeat(node, 0, rest)


def _repeat(quant: Repeat, count: int, rest: Frames) -> Iterator[Outcome]:
    """``quant`` has ``count`` iterations behind it: iterate again, or stop, in its order of preference."""
    def again() -> Iterator[Outcome]:
        if quant.high is None or count < quant.high:
            # an unbounded loop behaves the same for every count past its minimum
            counted = min(count, quant.low) if quant.high is None else count
            yield from _match(quant.body, (_Loop(quant, counted, False), *rest))

    def stop() -> Iterator[Outcome]:
        if count >= quant.low:
            yield from _resume(rest)

    for attempt in (stop, again) if quant.reluctant else (again, stop):
        yield from attempt()


def _resume(rest: Frames) -> Iterator[Outcome]:
    """What may happen once the piece before ``rest`` is matched."""
    if not rest:
        yield None
        return
    head, tail = rest[0], rest[1:]
    if isinstance(head, _Rest):
        if head.items:
            yield from _match(head.items[0], (_Rest(head.items[1:]), *tail))
        else:
            yield from _resume(tail)
    elif head.took or head.count < head.quant.low:      # an iteration without a row ends the loop
        yield from _repeat(head.quant, head.count + 1, tail)


@dataclass(frozen=True)
class Automaton:
    """States 1..n, each a variable about to take a row; ``start`` and ``after[state - 1]`` list what may
    come next (state numbers, ACCEPT = 0), most preferred first, without repeats."""

    names: tuple[str, ...]               # the pattern's variables, in order of first appearance
    state_variables: tuple[str, ...]     # the variable of each state
    start: tuple[int, ...]
    after: tuple[tuple[int, ...], ...]

    def variable_index(self, state: int) -> int:
        """The 1-based index (in ``names``) of a state's variable."""
        return self.names.index(self.state_variables[state - 1]) + 1

    @property
    def accepting(self) -> tuple[int, ...]:
        """The states after which the match may be complete."""
        return tuple(i + 1 for i, nexts in enumerate(self.after) if ACCEPT in nexts)


def automaton(pattern: Node, fragment: Fragment) -> Automaton:
    """The pattern's automaton; an error (at the pattern) when it has more than MAX_STATES states."""
    numbers: dict[tuple[str, Frames], int] = {}
    pending: list[tuple[str, Frames]] = []

    def listed(outcomes: Iterator[Outcome]) -> tuple[int, ...]:
        """The codes of ``outcomes``, up to ACCEPT: what comes after it is never preferred to it."""
        found: list[int] = []
        for outcome in outcomes:
            if outcome is None:
                found.append(ACCEPT)
                break
            if outcome not in numbers:
                numbers[outcome] = len(numbers) + 1
                pending.append(outcome)
                if len(numbers) > MAX_STATES:
                    raise fragment.error(f"this pattern needs more than {MAX_STATES} automaton states; use "
                                         f"smaller bounds in its quantifiers", variables(pattern)[0].start)
            if numbers[outcome] not in found:
                found.append(numbers[outcome])
        return tuple(found)

    start = listed(_match(pattern, ()))
    after: dict[int, tuple[int, ...]] = {}
    while pending:
        state = pending.pop(0)
        after[numbers[state]] = listed(_resume(state[1]))
    names = tuple(dict.fromkeys(v.name for v in variables(pattern)))
    ordered = sorted(numbers.items(), key=lambda item: item[1])
    return Automaton(names, tuple(name for (name, _), _ in ordered), start,
                     tuple(after[number] for _, number in ordered))
