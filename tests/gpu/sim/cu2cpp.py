#!/usr/bin/env python3
"""Rewrites a .cu file as C++ for cudasim (cuda_sim.h): kernel launches `k<<<cfg>>>(args)` become
cudasim::launch calls and __shared__ declarations the block's copies. Line numbers are kept, so
compiler errors and sanitizer reports name the .cu file's lines.

usage: cu2cpp.py IN.cu OUT.cpp SOURCE_ROOT"""
import os
import re
import sys


def matching(text, i, open_ch, close_ch, step):
    """Index of the bracket matching text[i] (open_ch when step is 1, close_ch when -1)."""
    depth = 0
    while 0 <= i < len(text):
        c = text[i]
        if c == (open_ch if step == 1 else close_ch):
            depth += 1
        elif c == (close_ch if step == 1 else open_ch):
            depth -= 1
            if depth == 0:
                return i
        i += step
    raise ValueError("unbalanced " + open_ch + close_ch)


def rewrite_launches(text, path):
    out = []
    pos = 0
    for m in re.finditer(r"<<<", text):
        start = m.start()
        if start < pos:
            continue
        # The kernel: an (optionally qualified) name with an optional template argument list.
        k = start
        while k > 0 and text[k - 1].isspace():
            k -= 1
        kernel_end = k
        if text[k - 1] == ">":
            k = matching(text, k - 1, "<", ">", -1)
        while k > 0 and (text[k - 1].isalnum() or text[k - 1] in "_:"):
            k -= 1
        kernel = text[k:kernel_end]
        if not re.match(r"[A-Za-z_][\w:]*(<.*>)?$", kernel, re.S):
            raise SystemExit(f"{path}: cannot read the kernel of the launch at offset {start}")
        close = text.index(">>>", start)
        config = text[start + 3:close]
        a = close + 3
        while text[a].isspace():
            a += 1
        if text[a] != "(":
            raise SystemExit(f"{path}: no arguments after the launch of {kernel}")
        args_end = matching(text, a, "(", ")", 1)
        args = text[a + 1:args_end]
        skipped = text[kernel_end:start] + text[close + 3:a]  # whitespace: keep its newlines
        name = " ".join(kernel.split())
        call = (f'::cudasim::launch("{name}", ::cudasim::LaunchConfig({config}), '
                f'[](const auto&... a) {{ {kernel}(a...); }}'
                + (f", {args}" if args.strip() else "") + ")")
        out.append(text[pos:k])
        out.append(call + "\n" * skipped.count("\n"))
        pos = args_end + 1
    out.append(text[pos:])
    return "".join(out)


def rewrite_shared(text):
    text = re.sub(r"extern\s+__shared__\s+([\w:]+)\s+(\w+)\s*\[\s*\]\s*;",
                  r"\1* \2 = ::cudasim::dynamic_shared_as<\1>();", text)
    return re.sub(r"__shared__\s+([\w:<>, ]+?)\s+(\w+)\s*((?:\[[^\]]+\])*)\s*;",
                  r"auto& \2 = ::cudasim::shared<\1\3, __LINE__>();", text)


def main():
    src, dst, root = sys.argv[1:4]
    with open(src) as f:
        text = f.read()
    text = rewrite_shared(rewrite_launches(text, src))
    if "__shared__" in text or "<<<" in text:
        raise SystemExit(f"{src}: a __shared__ declaration or launch cudasim cannot rewrite")
    rel = os.path.relpath(src, root)
    header = f'#include "tests/gpu/sim/cuda_sim.h"\n#line 1 "{rel}"\n'
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    tmp = dst + ".tmp"
    with open(tmp, "w") as f:
        f.write(header + text)
    os.replace(tmp, dst)


if __name__ == "__main__":
    main()
