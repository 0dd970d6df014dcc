#!/usr/bin/env python3
"""Checks docs/errors.md against the diagnostics in the source.

docs/errors.md lists every diagnostic sketchc can emit as table rows
    | `MESSAGE` | example | [test](../test/DIR/FILE) |
where MESSAGE is the exact text after `error: ` for the example (a message no
input can reach says `unreachable` instead of naming a test). This script
  1. finds every place in lib/, dialect/ and compiler/ that emits an error
     (emitError, emitOpError, the parser's errorAt, the lexer's error, errs(),
     and the parser's `expected ...` helpers called with a description), and
     makes a pattern of the string literals there, in order;
  2. checks that each place's pattern matches the MESSAGE of some row;
  3. checks that each row's test exists and contains its MESSAGE verbatim.
It prints what is missing and exits 1 when anything is. Places in lib/Emit
(the CUDA backends) only fail the check with --strict-emit, which catalog.test
uses; without it they are counted in a note.

  catalog.py [--root DIR] [--strict-emit] [--list]
"""
import argparse
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Calls whose string literals are (part of) an error message.
ERROR_CALL = re.compile(r"\b(emitError|emitOpError|errorAt|errs\(\)\s*<<|error)\s*\(?")
# The parser's helpers that report "expected WHAT[, found TOKEN]" with a description.
EXPECT_CALL = re.compile(
    r"\b(expected|expect|expectWord|expectClosing|parseName|parseInteger|parsePositiveInteger|"
    r"parseSpace|parseDimExpr|parseDimOperand|parseDimList|parseGemmOperand|"
    r"parseGetOrAccumulate|parsePair|parseElementwiseOperand|parseBlockOpening)\(")
# Helpers that build an error around a description given at the call site.
HELPER_CALL = re.compile(r"\b(invalid|expectSame|wholeExtentError|staticWidth|tileShape)\(")
# The parser's own `expected WHAT, found TOKEN` builder: covered by each WHAT.
GENERIC_PIECES = {"expected ", ", found "}
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def statement_at(text, start):
    """The text from `start` to the ';' that ends the statement (strings skipped)."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return text[start:i]
        elif c == ";" and depth <= 0:
            return text[start:i]
        i += 1
    return text[start:]


def unescape(literal):
    return literal.encode().decode("unicode_escape")


def literals(code):
    """The string literals of `code`, in order; the two arms of `c ? "a" : "b"`
    are left out, since a message holds only one of them."""
    code = re.sub(r'\?\s*"(?:[^"\\]|\\.)*"\s*:\s*("(?:[^"\\]|\\.)*"|[\w:()]+)', " ", code)
    code = re.sub(r'\?\s*[\w:()]+\s*:\s*"(?:[^"\\]|\\.)*"', " ", code)
    return [unescape(s) for s in STRING.findall(code)]


def diag_continuation(text, end):
    """The statements after `auto diag = emitError(...)` that stream into `diag`."""
    out = ""
    for _ in range(12):
        nxt = statement_at(text, end + 1)
        if "diag" not in nxt or "return" in nxt:
            break
        out += nxt
        end += len(nxt) + 1
    return out


def pattern_of(pieces):
    """A regex matching a message that holds `pieces` in order."""
    return re.compile(".*".join(re.escape(p) for p in pieces), re.S)


def sites(root):
    """(file, line, kind, pieces) for each error-emitting place."""
    found = []
    paths = sorted(glob.glob(os.path.join(root, "lib", "**", "*.cpp"), recursive=True) +
                   glob.glob(os.path.join(root, "dialect", "*.cpp")) +
                   glob.glob(os.path.join(root, "compiler", "*.cpp")))
    for path in paths:
        rel = os.path.relpath(path, root)
        text = open(path).read()
        # Comments would only add noise.
        text = re.sub(r"//[^\n]*", lambda m: " " * len(m.group(0)), text)
        is_parser = rel.endswith("Frontend/Parser.cpp")
        for m in ERROR_CALL.finditer(text):
            kind = m.group(1)
            if kind == "error" and not rel.endswith("Frontend/Lexer.cpp"):
                continue
            if text[m.start() - 1:m.start()] in ".>:" and kind == "error":
                continue
            stmt = statement_at(text, m.start())
            if re.match(r"(emitError|errorAt)\b[^;]*$", stmt) and "diag" in text[
                    text.rfind("\n", 0, m.start()):m.start()]:
                stmt += diag_continuation(text, m.start() + len(stmt))
            pieces = literals(stmt.split("attachNote")[0])
            # The driver writes its own `sketchc: error: ` prefix; the row holds what follows.
            pieces = [p.replace("sketchc: error: ", "") for p in pieces]
            pieces = [p for p in pieces if p.strip()]
            if not pieces or set(pieces) <= GENERIC_PIECES:
                continue  # the message comes from elsewhere (a lexer error, a `what`)
            line = text.count("\n", 0, m.start()) + 1
            found.append((rel, line, "error", pieces))
        for m in HELPER_CALL.finditer(text):
            line_start = text.rfind("\n", 0, m.start()) + 1
            if re.search(r"(InFlightDiagnostic|LogicalResult|FailureOr<.*>)\s+$",
                         text[line_start:m.start()]):
                continue  # the definition
            stmt = statement_at(text, m.start())
            pieces = [p for p in literals(stmt.split("attachNote")[0]) if p.strip()]
            if pieces:
                line = text.count("\n", 0, m.start()) + 1
                found.append((rel, line, "error", pieces))
        if not is_parser:
            continue
        for m in EXPECT_CALL.finditer(text):
            line_start = text.rfind("\n", 0, m.start()) + 1
            prefix = text[line_start:m.start()]
            if re.search(r"(LogicalResult|FailureOr<[^>]*>+|InFlightDiagnostic|bool)\s+(Parser::)?$",
                         prefix):
                continue  # a declaration or definition
            args = statement_at(text, m.end())
            pieces = literals(args)
            if m.group(1) == "expectWord" and pieces:
                pieces = pieces[1:]  # the first literal is the word itself
            pieces = [p for p in pieces if p.strip()]
            if not pieces:
                continue
            line = text.count("\n", 0, m.start()) + 1
            found.append((rel, line, "expected", ["expected "] + pieces))
    return found


# | `MESSAGE` | example | [name](../test/...) |   or   | `MESSAGE` | why | unreachable |
ROW = re.compile(r"^\|\s*(``\s?(?P<m2>.+?)\s?``|`(?P<m1>[^`]+)`)\s*\|(?P<example>.*)\|\s*"
                 r"(\[[^\]]*\]\((?P<test>[^)]+)\)|(?P<unreachable>unreachable))\s*\|\s*$")


def rows(root):
    """(message, test path relative to root, line number) for each catalog row."""
    doc = os.path.join(root, "docs", "errors.md")
    out = []
    for number, line in enumerate(open(doc), 1):
        m = ROW.match(line.strip())
        if m:
            message = (m.group("m1") or m.group("m2")).replace("\\|", "|")
            test = None
            if m.group("test"):
                test = os.path.normpath(os.path.join("docs", m.group("test")))
            out.append((message, test, number))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(HERE)))
    parser.add_argument("--strict-emit", action="store_true",
                        help="fail on undocumented diagnostics of lib/Emit too")
    parser.add_argument("--list", action="store_true", help="print every place found")
    args = parser.parse_args()
    catalog = rows(args.root)
    failures = 0
    for message, test, number in catalog:
        if test is None:
            continue  # a message no input reaches; the row says why
        path = os.path.join(args.root, test)
        if not os.path.exists(path):
            print(f"docs/errors.md:{number}: test {test} does not exist")
            failures += 1
        elif message not in open(path, errors="replace").read():
            print(f"docs/errors.md:{number}: {test} does not contain the message `{message}`")
            failures += 1
    messages = [message for message, _, _ in catalog]
    missing_emit = 0
    for rel, line, kind, pieces in sites(args.root):
        covered = any(pattern_of(pieces).search(m) for m in messages)
        if args.list:
            print(f"{'ok  ' if covered else 'MISS'} {rel}:{line}: {' ... '.join(pieces)}")
            continue
        if covered:
            continue
        if rel.startswith(os.path.join("lib", "Emit")) and not args.strict_emit:
            missing_emit += 1
            continue
        print(f"{rel}:{line}: no row of docs/errors.md matches: {' ... '.join(pieces)}")
        failures += 1
    if missing_emit:
        print(f"note: {missing_emit} diagnostics of lib/Emit are not in docs/errors.md "
              "(--strict-emit lists them)")
    print(f"{len(catalog)} catalog rows, {failures} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
