#!/usr/bin/env python3
"""Checks scripts that `mixlab-cli export --to keras|pytorch` wrote, for script_injection_test:
(a) Python parses it; (b) MARKER, a text that every hostile value given to the exporter holds,
appears nowhere but inside plain string literals: not in a name, an attribute, an argument, a
comment, an f-string or any other code; (c) each expected value (hex of its bytes, one a line
in the script's EXPECTED_FILE) is the value of some string constant, so that it reached Python
as text, byte for byte (an undecodable byte as its surrogate escape, as os.fsencode gives it
back).

usage: check_script_ast.py MARKER SCRIPT EXPECTED_FILE [SCRIPT EXPECTED_FILE ...]
Exit 0: all hold for every script; 1: one does not (said on stdout); 2: bad usage."""
import ast
import io
import sys
import tokenize


def string_prefix(token_text):
    return token_text[: len(token_text) - len(token_text.lstrip("rRbBuUfF"))].lower()


def problems_of(script, marker, expected_file):
    """What is wrong with one script, as lines."""
    with open(script, "rb") as f:
        source_bytes = f.read()
    try:
        source = source_bytes.decode("utf-8")
        tree = ast.parse(source, script)
    except (SyntaxError, ValueError, UnicodeDecodeError) as e:
        return [f"does not parse: {e}"]
    problems = []

    # (b) identifiers anywhere in the tree.
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.arg):
            names.append(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            names.append(node.arg)
        elif isinstance(node, ast.alias):
            names += [node.name, node.asname or ""]
        elif isinstance(node, ast.ImportFrom):
            names.append(node.module or "")
        elif isinstance(node, ast.JoinedStr) and marker in ast.dump(node):
            problems.append(f"line {node.lineno}: the marker inside an f-string")
        for name in names:
            if marker in name:
                problems.append(f"line {node.lineno}: the marker in the name {name!r}")

    # (b) every token but a plain (non-f) string literal: code and comments alike.
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    for tok in tokens:
        plain_string = tok.type == tokenize.STRING and "f" not in string_prefix(tok.string)
        if not plain_string and marker in tok.string:
            kind = tokenize.tok_name[tok.type]
            problems.append(f"line {tok.start[0]}: the marker outside a string ({kind}: "
                            f"{tok.string[:80]!r})")

    # (c) each expected value is a string constant's value, byte for byte.
    constants = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                constants.add(node.value.encode("utf-8", "surrogateescape"))
            except UnicodeEncodeError:  # a surrogate that no undecodable byte stands for
                problems.append(f"line {node.lineno}: {node.value!r} is not UTF-8 text")
    with open(expected_file) as f:
        for line in f:
            if not line.strip():
                continue
            value = bytes.fromhex(line.strip())
            if value not in constants:
                problems.append(f"no string constant holds {value!r}")

    return problems


def main():
    if len(sys.argv) < 4 or len(sys.argv) % 2 != 0:
        print(__doc__)
        return 2
    marker = sys.argv[1]
    failed = False
    for script, expected_file in zip(sys.argv[2::2], sys.argv[3::2]):
        for problem in problems_of(script, marker, expected_file):
            print(f"{script}: {problem}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
