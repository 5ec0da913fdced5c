"""A unit's rule table, `solutions/<U>/rules.toml`: every requirement its exercises state, the hidden check that
enforces it, and the stored wrong answers that break only that rule.

    [[rule]]
    exercise = "fold"                          # the exercise's grade_id
    says = "Keep a node that defines a graph output"   # words of the exercise's text, verbatim
    check = "ops left after folding"           # words of the failure message of the check that enforces it
    wrong = ["fold__folds_graph_outputs"]      # solutions/<U>/wrong/<file>.py, each breaking this rule only

    [[not_a_rule]]                             # a sentence that reads like a requirement but states none
    exercise = "fold"
    says = "Folding in topological order matters"
    why = "explains the method; the rule itself is the row 'a whole constant subgraph collapses'"

    [[insensitive]]                            # an argument whose frozen value cannot change the answer
    exercise = "fold"                          # (tests/notebooks/sensitivity.py freezes every other one)
    argument = "graph"                         # a parameter, or "parameter.field"
    why = "..."

What the notebook tests check (`rule_problems`):
- every sentence of an exercise's statement that says "must", "raises", "keeps", "without", "never", "only",
  "exactly", "at least", "at most" or "do not" contains the `says` of one of its rows (rule or not_a_rule), and
  every row's `says` is in that exercise's text, so the table cannot drift from the lesson;
- every rule has at least one stored wrong answer, and every stored wrong answer belongs to exactly one rule;
- each wrong answer is rejected, and by its rule's own check: the failure message contains the row's `check`.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

REQUIREMENT = re.compile(r"\b(must|raises?|keeps?|without|never|only|exactly|at least|at most|do not|don't)\b", re.I)
_RULE_KEYS = {"exercise", "says", "check", "wrong"}
_NOT_RULE_KEYS = {"exercise", "says", "why"}
_INSENSITIVE_KEYS = {"exercise", "argument", "why"}


@dataclass(frozen=True)
class Rule:
    exercise: str
    says: str
    check: str
    wrong: tuple[str, ...]


@dataclass(frozen=True)
class NotARule:
    exercise: str
    says: str
    why: str


@dataclass(frozen=True)
class Insensitive:
    exercise: str
    argument: str
    why: str


@dataclass(frozen=True)
class RuleTable:
    rules: tuple[Rule, ...]
    not_rules: tuple[NotARule, ...]
    path: Path
    insensitive: tuple[Insensitive, ...] = ()


def normalize(text: str) -> str:
    """Lowercase, markdown emphasis and code ticks removed, whitespace collapsed: how texts are compared."""
    text = re.sub(r"[*`]", "", text)
    return re.sub(r"\s+", " ", text).strip().lower()


def load_rules(unit_dir: Path) -> RuleTable | None:
    """The unit's rule table, or None when it has none; a malformed table is an error naming the row."""
    path = Path(unit_dir) / "rules.toml"
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{path}: not valid TOML ({err})") from None
    unknown = set(data) - {"rule", "not_a_rule", "insensitive"}
    if unknown:
        raise ValueError(f"{path}: unknown tables {sorted(unknown)}; use [[rule]], [[not_a_rule]] and [[insensitive]]")
    rules, not_rules = [], []
    for i, row in enumerate(data.get("rule", [])):
        if set(row) != _RULE_KEYS:
            raise ValueError(f"{path}: [[rule]] #{i + 1} must have exactly the keys {sorted(_RULE_KEYS)}, has "
                             f"{sorted(row)}")
        if not isinstance(row["wrong"], list) or not all(isinstance(w, str) for w in row["wrong"]):
            raise ValueError(f"{path}: [[rule]] #{i + 1} ({row['says']!r}): wrong must be a list of file stems")
        rules.append(Rule(row["exercise"], row["says"], row["check"], tuple(row["wrong"])))
    for i, row in enumerate(data.get("not_a_rule", [])):
        if set(row) != _NOT_RULE_KEYS:
            raise ValueError(f"{path}: [[not_a_rule]] #{i + 1} must have exactly the keys {sorted(_NOT_RULE_KEYS)}")
        not_rules.append(NotARule(row["exercise"], row["says"], row["why"]))
    insensitive = []
    for i, row in enumerate(data.get("insensitive", [])):
        if set(row) != _INSENSITIVE_KEYS or not str(row.get("why", "")).strip():
            raise ValueError(f"{path}: [[insensitive]] #{i + 1} must have exactly the keys "
                             f"{sorted(_INSENSITIVE_KEYS)}, with a reason in `why`")
        if any((r.exercise, r.argument) == (row["exercise"], row["argument"]) for r in insensitive):
            raise ValueError(f"{path}: [[insensitive]] #{i + 1} repeats {row['exercise']}: {row['argument']!r}")
        insensitive.append(Insensitive(row["exercise"], row["argument"], row["why"]))
    return RuleTable(tuple(rules), tuple(not_rules), path, tuple(insensitive))


def exercise_texts(source_nb) -> dict[str, str]:
    """{exercise: its statement}: the markdown cells after the previous exercise's cells, up to its solution cell."""
    texts: dict[str, str] = {}
    pending: list[str] = []
    for cell in source_nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown":
            pending.append(cell.source)
        elif meta.get("solution"):
            texts[meta["grade_id"]] = "\n".join(pending)
            pending = []
        elif meta.get("grade"):
            pending = []
    return texts


def requirement_sentences(text: str) -> list[str]:
    """The sentences of a statement that state a requirement (by the REQUIREMENT words), normalized."""
    flat = normalize(re.sub(r"^#+ .*$", "", text, flags=re.M))    # headings are titles, not requirements
    pieces = re.split(r"(?<=[.;:!?])\s+(?=[a-z0-9(])|\s+-\s+|\s+\d\.\s+", flat)
    return [p.strip() for p in pieces if REQUIREMENT.search(p)]


def table_problems(table: RuleTable | None, source_nb, wrong_files: dict[str, str], unit: str) -> list[str]:
    """What is wrong with the table itself (coverage of the text, rows without wrong answers, strays)."""
    if table is None:
        return [f"{unit}: no rule table solutions/{unit}/rules.toml (every exercise lists its rules, each with the "
                "hidden check that enforces it and a stored wrong answer that breaks only that rule)"]
    texts = exercise_texts(source_nb)
    out = []
    rows = [*table.rules, *table.not_rules]
    for row in rows:
        if row.exercise not in texts:
            out.append(f"{table.path.name}: a row names exercise {row.exercise!r}; the exercises are {sorted(texts)}")
        elif normalize(row.says) not in normalize(texts[row.exercise]):
            out.append(f"{table.path.name}: {row.exercise}: says {row.says!r}, which is not in the exercise's text")
    for ex, text in texts.items():
        if not any(r.exercise == ex for r in table.rules):
            out.append(f"{table.path.name}: exercise {ex!r} has no [[rule]]")
        mine = [normalize(r.says) for r in rows if r.exercise == ex]
        for sentence in requirement_sentences(text):
            if not any(says in sentence for says in mine):
                out.append(f"{table.path.name}: {ex}: the text states a requirement no row covers: {sentence!r} "
                           "(add a [[rule]] with its check and wrong answer, or a [[not_a_rule]] saying why not)")
    owner: dict[str, list[Rule]] = {}
    for rule in table.rules:
        if not rule.wrong:
            out.append(f"{table.path.name}: rule {rule.exercise}: {rule.says!r} has no stored wrong answer")
        for stem in rule.wrong:
            owner.setdefault(stem, []).append(rule)
            if stem not in wrong_files:
                out.append(f"{table.path.name}: rule {rule.exercise}: {rule.says!r} names wrong answer {stem!r}, "
                           f"which is not in solutions/{unit}/wrong/")
            elif wrong_files[stem] != rule.exercise:
                out.append(f"{table.path.name}: wrong answer {stem!r} is for exercise {wrong_files[stem]!r}, not "
                           f"{rule.exercise!r}")
    for stem in sorted(wrong_files):
        rules = owner.get(stem, [])
        if len(rules) != 1:
            out.append(f"{table.path.name}: wrong answer {stem!r} belongs to {len(rules)} rules; each breaks exactly "
                       "one rule")
    return out


def caught_problems(table: RuleTable | None, messages: dict[str, tuple[float, str]]) -> list[str]:
    """Each rule's wrong answers were rejected by that rule's own check. `messages`: {wrong stem: (score, message)}."""
    if table is None:
        return []
    out = []
    for rule in table.rules:
        for stem in rule.wrong:
            if stem not in messages:
                continue
            score, message = messages[stem]
            if score != 0:
                out.append(f"rule {rule.exercise}: {rule.says!r}: its wrong answer {stem} still earns {score:g}")
            elif normalize(rule.check) not in normalize(message):
                out.append(f"rule {rule.exercise}: {rule.says!r}: {stem} was rejected, but not by the rule's check "
                           f"({rule.check!r} is not in the failure: {message[:400]!r})")
    return out
