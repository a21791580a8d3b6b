#!/usr/bin/env python3
"""results-check.py REF NEW [PREFIX] — compares the generated blocks named
PREFIX* (default "check-") of two copies of docs/RESULTS.md by what their
claims say, not by their last digits, and exits 1 with a readable diff when a
claim moved.  `make check-results` runs it on the document and on the blocks
this build just regenerated.

Why not byte for byte: the simulator's runs are deterministic on one
processor, but OpenBLAS picks a kernel per processor (and the nn kernels a
SIMD width), so sums round differently and the training paths of single
seeds drift the way another seed would.  The claims are medians over seeds
with verdicts; so, line by line:

  * words must match exactly: a verdict ("**short**", "met"), a setting, a
    column, a row or a claim that appears, goes or changes fails;
  * a median printed with its seeds' range, "M [LO, HI]", may move by at
    most max(5% of M, a quarter of the wider of the two ranges HI - LO):
    the standard error of a median of five seeds is about 0.24 x their
    range (for normal samples), so a median moves past that bound only
    when the seeds moved together, further than one standard error, not
    when single seeds took a slightly different path.  LO and HI are
    single seeds and are not compared themselves;
  * "(k of n)", the seeds on which a target was reached, may change by one
    seed (a seed at the edge of the target on one processor);
  * any other number may move by max(10% of its value, 0.01), or by one
    point when it is followed by "points" (accuracies are fractions: 0.01 is
    one point): these are medians over the seeds printed without their range
    (times to a target on the evaluation grid, final accuracies) and totals.
    Measured on one binary's check blocks, a processor change moved them by
    at most 1.7% (AVX2-only nn kernels with OpenBLAS's Zen kernels, as an
    AVX2-only EPYC runs it) and 5.2% (AVX-512 nn kernels with OpenBLAS's
    Haswell kernels); 10% is about twice the larger;
  * the numbers of a verdict cell (a table column headed "verdict ...") are
    derived from its row's median and are not compared again; its words are;
  * a block's heading line (version, processor, command) is compared by its
    command only.

Exit status: 0 every block within tolerance, 1 a claim moved, 2 bad input.
"""
import difflib
import re
import sys

REL = 0.05          # relative bound of a median printed with its range
REL_PLAIN = 0.10    # relative bound of any other figure
ABS = 0.01          # absolute floor: one accuracy point as a fraction
ABS_POINTS = 1.0    # absolute floor of a figure in accuracy points
SPREAD = 0.25       # share of the seeds' range a median may move
SEED_COUNT = 1      # seeds a "(k of n)" count may change by

NUM = r"[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
# A number that stands alone (not part of a name such as S10 or lr0.05),
# optionally with a unit suffix x or %.
TOKEN = re.compile(
    r"(?P<med>(?<![A-Za-z0-9_.])(?P<m>" + NUM + r")x?\s*\[(?P<lo>" + NUM + r")x?,\s*(?P<hi>" + NUM
    + r")x?\])"
    r"|(?P<cnt>\((?P<k>\d+) of (?P<n>\d+)\))"
    r"|(?P<num>(?<![A-Za-z0-9_.])" + NUM + r"(?:x|%)?(?![A-Za-z0-9_])(?P<pts>\s+points)?)")


def blocks(path, prefix):
    """{name: [(line number, text), ...]} of the generated blocks PREFIX*."""
    out, name = {}, None
    try:
        lines = open(path, encoding="utf-8").read().split("\n")
    except OSError as e:
        print(f"results-check: {e}", file=sys.stderr)
        sys.exit(2)
    for i, line in enumerate(lines, 1):
        m = re.fullmatch(r"<!-- generated: (\S+) -->", line)
        if name is None and m and m.group(1).startswith(prefix):
            name = m.group(1)
            out[name] = []
        elif name is not None and line == "<!-- end generated -->":
            name = None
        elif name is not None and line.strip() not in ("",):
            out[name].append((i, line))
    if name is not None:
        print(f"results-check: {path}: block {name} has no end line", file=sys.stderr)
        sys.exit(2)
    return out


def tokens(text):
    """The line as (skeleton, values): the words with each number replaced by
    a placeholder and white space folded; values the numbers, in order."""
    values, parts, pos = [], [], 0
    for m in TOKEN.finditer(text):
        parts.append(text[pos:m.start()])
        pos = m.end()
        if m.group("med"):
            values.append(("median", float(m.group("m")), float(m.group("lo")),
                           float(m.group("hi")), m.group("med")))
            parts.append(" <M> ")
        elif m.group("cnt"):
            values.append(("count", float(m.group("k")), float(m.group("n")), 0.0, m.group("cnt")))
            parts.append(" <K> ")
        else:
            raw = m.group("num")
            v = float(re.match(NUM, raw).group(0))
            kind = "points" if m.group("pts") else "number"
            values.append((kind, v, 0.0, 0.0, raw.split()[0]))
            parts.append(" <N> " + ("points" if m.group("pts") else ""))
    parts.append(text[pos:])
    skel = " ".join("".join(parts).split())
    return skel, values


def word_diff(a, b):
    """The first words where two skeletons part, as 'X' -> 'Y'."""
    aw, bw = a.split(), b.split()
    sm = difflib.SequenceMatcher(a=aw, b=bw, autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op != "equal":
            return f"'{' '.join(aw[i1:i2]) or '(nothing)'}' -> '{' '.join(bw[j1:j2]) or '(nothing)'}'"
    return "the same words, another number of figures"


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def fmt(x):
    return f"{x:.4g}"


def compare_values(a, b):
    """None when b is within a's tolerance, else why not."""
    kind, v, lo, hi, raw = a
    nkind, nv, nlo, nhi, nraw = b
    if kind != nkind:
        return f"{raw} became {nraw}"
    if kind == "count":
        if lo != nlo or abs(v - nv) > SEED_COUNT:
            return f"{raw} -> {nraw}: more than {SEED_COUNT} seed apart"
        return None
    if kind == "median":
        rng = max(hi - lo, nhi - nlo)
        tol = max(REL * abs(v), SPREAD * rng)
        why = f"max(5% of {fmt(v)}, a quarter of the seeds' range {fmt(rng)})"
    elif kind == "points":
        tol = max(REL_PLAIN * abs(v), ABS_POINTS)
        why = f"max(10% of {fmt(v)}, 1 point)"
    else:
        tol = max(REL_PLAIN * abs(v), ABS)
        why = f"max(10% of {fmt(v)}, {ABS})"
    d = abs(nv - v)
    if d > tol + 1e-12:
        return f"{raw} -> {nraw}: moved {fmt(d)}, allowed {fmt(tol)} = {why}"
    return None


def compare_line(ref, new, verdict_col):
    """([problems], [(ref value, new value) moved within tolerance])."""
    if ref.startswith("`scadles ") and new.startswith("`scadles "):
        rc, nc = re.findall(r"`([^`]*)`", ref), re.findall(r"`([^`]*)`", new)
        if rc[-1:] != nc[-1:]:
            return ["the command differs"], []
        return [], []
    if ref.lstrip().startswith("|") and verdict_col is not None:
        rcs, ncs = cells(ref), cells(new)
        if len(rcs) != len(ncs):
            return ["the row has another number of cells"], []
        # A verdict cell: its words only (its figures follow from the median).
        for c in (rcs, ncs):
            if verdict_col < len(c):
                c[verdict_col] = re.sub(TOKEN, "<N>", c[verdict_col])
        ref = "| " + " | ".join(rcs) + " |"
        new = "| " + " | ".join(ncs) + " |"
    rs, rv = tokens(ref)
    ns, nv = tokens(new)
    if rs != ns or len(rv) != len(nv):
        return ["the words differ (a verdict, setting, row or column changed): "
                + word_diff(rs, ns)], []
    problems, moved = [], []
    for a, b in zip(rv, nv):
        p = compare_values(a, b)
        if p:
            problems.append(p)
        elif a[4] != b[4]:
            moved.append((a[4], b[4]))
    return problems, moved


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        sys.exit(2)
    ref_path, new_path = sys.argv[1], sys.argv[2]
    prefix = sys.argv[3] if len(sys.argv) == 4 else "check-"
    ref, new = blocks(ref_path, prefix), blocks(new_path, prefix)
    if not ref:
        print(f"results-check: {ref_path} has no {prefix}* block", file=sys.stderr)
        sys.exit(2)
    failed, compared, moved_all = 0, 0, []
    for name in sorted(set(ref) | set(new)):
        if name not in new or name not in ref:
            where = new_path if name not in new else ref_path
            print(f"{name}: the block is missing from {where}")
            failed += 1
            continue
        rl, nl = ref[name], new[name]
        if len(rl) != len(nl):
            print(f"{name}: {len(rl)} lines in {ref_path}, {len(nl)} regenerated")
            failed += 1
        verdict_col = None
        for (i, r), (_, n) in zip(rl, nl):
            if r.lstrip().startswith("|") and verdict_col is None:
                hdr = [c.lower() for c in cells(r)]
                verdict_col = next((k for k, c in enumerate(hdr) if c.startswith("verdict")), None)
            problems, moved = compare_line(r, n, verdict_col)
            compared += 1
            moved_all += [(name, i, a, b) for a, b in moved]
            if problems:
                failed += 1
                print(f"{name}, {ref_path} line {i}:")
                for p in problems:
                    print(f"    {p}")
                print(f"  - {r}")
                print(f"  + {n}")
    for name, i, a, b in moved_all:
        print(f"  within tolerance: {name} line {i}: {a} -> {b}")
    if failed:
        print(f"results-check: {failed} line(s) of the {prefix}* blocks moved beyond their tolerance "
              f"(scripts/results-check.py states it); full diff: diff -u {ref_path} {new_path}")
        sys.exit(1)
    print(f"results-check: {compared} lines of {len(ref)} blocks hold their claims "
          f"({len(moved_all)} figures moved within tolerance)")


if __name__ == "__main__":
    main()
