#!/usr/bin/env python3
"""Fails when a source file or function outgrows what one concept should take.

- A file over 800 lines must say why in its opening comment ("One file of about N lines ...").
- A function (any brace block that is not a class, struct, enum or namespace) over 120 lines
  must say why in the comment just above it ("Long: ...").

Blocks are found by counting braces outside strings, characters and // comments; namespaces
and extern "C" blocks do not count as a level.
"""
import pathlib
import re
import sys

FILE_LIMIT = 800
FUNCTION_LIMIT = 120
FILE_REASON = re.compile(r"one file of about [\d,]+ lines", re.IGNORECASE)
TYPE_HEAD = re.compile(r"\b(class|struct|enum|union)\b")


def code_of(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//")[0]


def long_blocks(lines):
    """(start, length) of each non-type block over FUNCTION_LIMIT lines."""
    stack = []
    out = []
    for i, line in enumerate(lines):
        s = line.strip()
        if re.match(r'^(namespace\b.*\{|\}\s*//\s*namespace)', s) or s.startswith('extern "C" {'):
            continue
        for c in code_of(line):
            if c == "{":
                stack.append(i)
            elif c == "}" and stack:
                start = stack.pop()
                n = i - start + 1
                # The head of a block may span lines: from the previous statement's end.
                head = lines[start]
                if n > FUNCTION_LIMIT and not TYPE_HEAD.search(head):
                    out.append((start, n))
    return out


def reason_above(lines, start):
    """True when one of the comment lines just above the block's head says "Long:"."""
    i = start - 1
    while i >= 0 and not lines[i].strip().startswith("//") and lines[i].strip():
        i -= 1  # the rest of a multi-line signature
    while i >= 0 and lines[i].strip().startswith("//"):
        if "Long:" in lines[i]:
            return True
        i -= 1
    return False


def main(root):
    bad = []
    files = sorted(p for p in pathlib.Path(root).rglob("*") if p.suffix in (".h", ".cc"))
    for path in files:
        lines = path.read_text().split("\n")
        if len(lines) > FILE_LIMIT and not FILE_REASON.search("\n".join(lines[:60])):
            bad.append(f"{path}: {len(lines)} lines, over {FILE_LIMIT}, and no reason given")
        for start, n in long_blocks(lines):
            if not reason_above(lines, start):
                bad.append(f"{path}:{start + 1}: a function of {n} lines, over {FUNCTION_LIMIT}")
    if bad:
        print("\n".join(bad))
        return 1
    print(f"{len(files)} files checked: none over {FILE_LIMIT} lines and no function over "
          f"{FUNCTION_LIMIT} lines without a reason")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "src"))
