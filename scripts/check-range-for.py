#!/usr/bin/env python3
"""Range-for over a part of a temporary: `for (x : f()["k"])`, `for (x : f().body["k"])`.

C++20 extends the life of the range expression's result (and of a temporary whose
data member it is), not of a temporary that operator[] returned a reference into:
the loop reads freed memory (silently, most of the time: a test saw an empty list
where the reply had two entries). Name the temporary first:
`const auto reply = f(); for (x : reply["k"])`. C++23 (P2718) fixes it; we build C++20.

A call whose result is a reference into something that outlives the loop may be
marked at the end of the line with `// range-for: lives on`.

Usage: check-range-for.py [root]; exits 1 naming each loop (ctest: range_for, and
range_for_refuses_a_temporarys_part on tests/hazards/range_for_over_temporary).
"""
import pathlib
import re
import sys

FOLDERS = ("broker", "src", "worker", "ojsctl", "bench", "tests", "include", "conformance")
PART_AFTER_CALL = re.compile(r"(\s*\.\s*[A-Za-z_]\w*(?![\w(]))*\s*\[")


def part_of_a_call(expr):
    """Whether `expr` subscripts a call's result: `f(...)[k]` or `f(...).member[k]`.
    A data member alone is safe (`f().member` extends the temporary's life); the
    subscript is a call that returns a reference into it, which does not."""
    for i, c in enumerate(expr):
        if c != "(" or i == 0 or not (expr[i - 1].isalnum() or expr[i - 1] in "_>"):
            continue
        depth = 0
        for j in range(i, len(expr)):
            depth += {"(": 1, ")": -1}.get(expr[j], 0)
            if depth == 0:
                if PART_AFTER_CALL.match(expr, j + 1):
                    return True
                break
    return False


def range_expression(text, start):
    """The range expression of the `for (` at `start`, or None for a classic for."""
    depth, i, colon = 0, start, None
    while i < len(text):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return None if colon is None else text[colon + 1:i]
        elif c == ";" and depth == 1:
            return None
        elif c == ":" and depth == 1 and colon is None and text[i - 1] != ":" and text[i + 1] != ":":
            colon = i
        elif c == '"':  # skip a string literal
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        i += 1
    return None


def check(root):
    found = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            # tests/hazards holds the loops this check must refuse (its own ctest entry).
            if path.suffix not in (".cpp", ".hpp", ".h", ".cc") or "hazards" in path.relative_to(root).parts:
                continue
            text = path.read_text(errors="replace")
            for m in re.finditer(r"\bfor\s*\(", text):
                expr = range_expression(text, m.end() - 1)
                if expr is None or not part_of_a_call(expr):
                    continue
                line_no = text.count("\n", 0, m.start()) + 1
                line = text.splitlines()[line_no - 1]
                if "range-for: lives on" in line:
                    continue
                found.append(f"{path.relative_to(root)}:{line_no}: range-for over a part of a temporary: {expr.strip()}")
    return found


if __name__ == "__main__":
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} range-for loop(s) over a part of a temporary: name the temporary first (see {pathlib.Path(__file__).name})")
        sys.exit(1)
    print("range-for ok: no loop over a part of a temporary")
