#!/usr/bin/env python3
# ruff: noqa: E501, UP022
# The team's harness (shared/tools/vwsuite.py), kept here so that the repository runs VW's
# suite on its own: python scripts/vw_suite.py VW/test/core.vwtest.json VW/test --sl "sl vw"
"""How much of Vowpal Wabbit's own test suite can `sl` run, and with VW's numbers?

What it measures
----------------
VW's suite (``test/core.vwtest.json``) lists tests, each with a ``vw_command``
(VW's arguments), ``input_files``, ``depends_on`` and ``diff_files`` (reference
stdout/stderr/predictions).  For every test that has a ``vw_command`` (the
``bash_command`` tests are left out and only counted), this harness runs

    <sl> vw <vw_command split as VW's runner splits it (shlex)>

verbatim: no option is translated, dropped or added (``-d``, ``-t``, ``-q`` ...
go to ``sl vw`` exactly as VW's runner gives them to ``vw``).  It then
compares the "average loss = X" and "number of examples" lines of sl's stderr
with those of the test's reference stderr.

Each test gets one status:

  MATCH      |sl - ref| <= 1e-6 absolute or 1e-6 relative (a 1e-12 slack
             absorbs float noise in the 6-decimal figures), and the same
             number of examples (examples per pass and passes used, where
             VW prints those).
  CLOSE      the same number of examples and |sl - ref| <= 1e-3 relative.
  DIFFERENT  anything else once both ran and printed a loss (including a
             different number of examples, or non-numeric losses such as
             "n.a." that are not the same string).
  REFUSED    sl exited 2 (usage error) on the options; ``refused_option`` is
             the option sl named first ("No such option '-k'" -> ``-k``;
             other usage errors -> the option they name, with the reason).
  ERROR      any other non-zero exit, a traceback, a timeout, or exit 0
             without an "average loss" line.
  SKIPPED    not run: no reference stderr, a reference stderr with no
             "average loss" line, an input file missing from the extracted
             tree (or a Git LFS pointer), or a dependency that did not MATCH.

Holdout: VW prints "average loss = X h" when X is a holdout loss (several
passes without --holdout_off).  sl prints its progressive loss as "average
loss" and the holdout figure on a separate "holdout loss = Y (...)" line.  When
the reference has the ``h`` and sl printed a holdout loss line, the harness
compares with sl's holdout loss and writes it with a trailing `` h`` in the
``sl_loss`` column; otherwise it compares sl's "average loss".

How each test is run
--------------------
As VW's own runner (``test/run_tests.py``) does: in a fresh directory
``WORK/test_<id>`` with an empty ``models/``, the test's input files copied in
from the extracted ``test/`` tree or, failing that, from the directories of the
tests it depends on (that is how a model written by one test reaches the next);
stdin is /dev/null; one process at a time, each with a time limit.  Tests are
run in suite order (every dependency precedes its dependents).

Usage
-----
    python3 vwsuite.py SUITE_JSON TEST_DIR [--sl CMD] [--out TSV] [--work DIR]
                       [--timeout S] [--ids 1-50,73] [--extract-from VW_GIT_DIR] [-v]

    e.g. python3 vwsuite.py vw-test/core.vwtest.json vw-test \\
             --extract-from PATH/TO/vowpal_wabbit/.git \\
             --sl .venv/bin/sl --out vwsuite-results.tsv

TEST_DIR is the ``test/`` directory of VW's repository; ``--extract-from``
writes it first from a (bare, possibly partial) git directory's HEAD, blob by
blob (``git archive`` aborts on a partial clone's missing objects).  The whole
suite takes about 80 s on a quiet 2-core machine: most tests are refused in
~0.1 s each.  ``--ids`` runs only those tests (plus, silently, the tests
they depend on).  The TSV has one row per test: id, status, sl_loss, ref_loss,
refused_option, command, then rc, sl_examples, ref_examples, seconds, detail
(sl's first error line, the skip reason, or what differed).  A summary goes to
stdout.  Standard library only.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

STATUSES = ("MATCH", "CLOSE", "DIFFERENT", "REFUSED", "ERROR", "SKIPPED")
MATCH_TOL = 1e-6  # absolute or relative
CLOSE_TOL = 1e-3  # relative
SLACK = 1e-12  # float noise when differencing two 6-decimal figures
TSV_COLUMNS = ("id", "status", "sl_loss", "ref_loss", "refused_option", "command",
               "rc", "sl_examples", "ref_examples", "seconds", "detail")

_AVG = re.compile(r"^average loss = (.*?)\s*$", re.M)
_HOLDOUT = re.compile(r"^holdout loss = (\S+)", re.M)
_N = re.compile(r"^number of examples = (\d+)", re.M)
_PER_PASS = re.compile(r"^number of examples per pass = (\d+)", re.M)
_PASSES = re.compile(r"^passes used = (\d+)", re.M)


# ---------------------------------------------------------------- parsing ---

@dataclass
class Loss:
    """One "average loss" figure: a float (or None if not numeric), its text, holdout flag."""
    text: str
    value: float | None
    holdout: bool

    def __str__(self) -> str:
        return self.text


def parse_loss(text: str) -> Loss | None:
    """VW's last "average loss = X" line: "0.123456", "-1.5", "0.1 h", "n.a.", "undefined (...)"."""
    found = _AVG.findall(text)
    if not found:
        return None
    raw = found[-1].strip()
    holdout = raw.endswith(" h")
    num = raw[:-2].strip() if holdout else raw
    try:
        value = float(num)
    except ValueError:
        value = None
    return Loss(raw, value, holdout)


def parse_examples(text: str) -> tuple[int, int] | None:
    """(examples per pass, passes used); a one-pass "number of examples = N" gives (N, 1).

    VW prints either "number of examples = N" or, after several passes,
    "number of examples per pass = N" and "passes used = K"; sl prints the
    total and, after several passes, the same two lines.
    """
    per_pass, passes = _PER_PASS.search(text), _PASSES.search(text)
    if per_pass and passes:
        return int(per_pass.group(1)), int(passes.group(1))
    n = _N.search(text)
    return (int(n.group(1)), 1) if n else None


def fmt_examples(ex: tuple[int, int] | None) -> str:
    if ex is None:
        return ""
    return str(ex[0]) if ex[1] == 1 else f"{ex[0]}x{ex[1]}passes"


def first_error_line(stderr: str) -> str:
    """The line that says what went wrong: click's "Error: ...", a traceback's last line, ..."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    if not lines:
        return ""
    for ln in lines:
        if ln.startswith("Error:") or ln.startswith("error:"):
            return ln
    if any(ln.startswith("Traceback") for ln in lines):
        return lines[-1]
    for ln in lines:
        if "error" in ln.lower():
            return ln
    return lines[-1]


def refused_option(error_line: str, args: list[str]) -> str:
    """The option a usage error names first, e.g. "Error: No such option '-k'." -> "-k".

    A refused value is labelled with the spelling the command used and the
    value, e.g. "--loss_function poisson (invalid value)".
    """
    m = re.search(r"No such option:?\s*'?([^'\s]+?)'?(?:\.|\s|$)", error_line)
    if m:
        return m.group(1)
    m = re.search(r"Invalid value for ((?:'[^']+'(?:\s*/\s*)?)+):\s*'([^']*)'", error_line)
    if m:
        aliases = re.findall(r"'([^']+)'", m.group(1))
        used = next((a for a in aliases if a in args), aliases[0])
        return f"{used} {m.group(2)} (invalid value)"
    m = re.search(r"Option '([^']+)' (.*)", error_line)
    if m:
        return f"{m.group(1)} ({m.group(2).strip(' .')[:60]})"
    m = re.search(r"unexpected extra argument[s]?\s*\(([^)]*)\)", error_line)
    if m:
        return f"extra argument ({m.group(1)[:40]})"
    m = re.search(r"(--?[A-Za-z][\w-]*)\s+'([^']*)':\s*(.*)", error_line)
    if m:  # sl's own usage errors: "Error: --interactions 'aaaaa': 2 to 4 ... expected"
        return f"{m.group(1)} {m.group(2)} ({m.group(3).strip(' .')[:60]})"
    m = re.search(r"(--?[A-Za-z][\w-]*)", error_line)
    return f"{m.group(1)} ({error_line[:80]})" if m else error_line[:80]


def compare(sl: Loss, ref: Loss, sl_ex, ref_ex) -> tuple[str, str]:
    """(status, detail) for two printed losses and example counts."""
    if sl_ex != ref_ex:
        return "DIFFERENT", f"number of examples differs: sl {fmt_examples(sl_ex)} vs ref {fmt_examples(ref_ex)}"
    if sl.value is None or ref.value is None:
        same = sl.text == ref.text
        return ("MATCH" if same else "DIFFERENT"), ("" if same else "non-numeric loss")
    diff = abs(sl.value - ref.value)
    scale = abs(ref.value)
    if diff <= max(MATCH_TOL, MATCH_TOL * scale) + SLACK:
        return "MATCH", ""
    if diff <= CLOSE_TOL * scale + SLACK:
        return "CLOSE", f"relative difference {diff / scale:.2e}"
    rel = f"{diff / scale:.2e}" if scale else "inf"
    return "DIFFERENT", f"relative difference {rel}"


# ---------------------------------------------------------------- running ---

@dataclass
class Row:
    id: int
    command: str
    status: str = ""
    sl_loss: str = ""
    ref_loss: str = ""
    refused: str = ""
    rc: str = ""
    sl_examples: str = ""
    ref_examples: str = ""
    seconds: str = ""
    detail: str = ""
    blocked_by: int | None = None  # for a SKIPPED dependent: the failed test upstream

    def tsv(self) -> str:
        vals = (self.id, self.status, self.sl_loss, self.ref_loss, self.refused, self.command,
                self.rc, self.sl_examples, self.ref_examples, self.seconds, self.detail)
        return "\t".join(re.sub(r"[\t\r\n]+", " ", str(v)) for v in vals)


def is_lfs_pointer(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(40).startswith(b"version https://git-lfs")


def find_input(name: str, test_dir: Path, dep_dirs: list[Path]) -> tuple[Path | None, str]:
    """Where VW's runner would copy input `name` from: the tree, then the dependencies' outputs."""
    p = test_dir / name
    if p.is_file():
        return (None, f"input {name} is a Git LFS pointer") if is_lfs_pointer(p) else (p, "")
    for d in dep_dirs:
        for cand in (d / name, d / os.path.basename(name)):
            if cand.is_file():
                return cand, ""
    return None, f"input {name} missing"


def run_test(test: dict, row: Row, test_dir: Path, work: Path, sl_cmd: list[str],
             timeout: float, results: dict[int, Row], vw_cmd: list[str] | None = None) -> None:
    """Fill `row` for one suite entry (runs sl at most once; with `vw_cmd`, the installed
    VW too on a CLOSE or DIFFERENT line)."""
    # 1. a reference loss to compare with
    ref_name = (test.get("diff_files") or {}).get("stderr")
    if not ref_name or not (test_dir / ref_name).is_file():
        row.status, row.detail = "SKIPPED", "no reference stderr"
        return
    ref_text = (test_dir / ref_name).read_text(encoding="utf-8", errors="replace")
    ref = parse_loss(ref_text)
    ref_ex = parse_examples(ref_text)
    if ref is None:
        row.status, row.detail = "SKIPPED", f"reference stderr has no average loss ({ref_name})"
        return
    row.ref_loss, row.ref_examples = ref.text, fmt_examples(ref_ex)

    # 2. dependencies must have matched
    for dep in test.get("depends_on", []):
        d = results.get(dep)
        if d is None or d.status != "MATCH":
            row.status = "SKIPPED"
            row.detail = f"depends on test {dep} ({d.status if d else 'not run'})"
            row.blocked_by = (d.blocked_by or dep) if d and d.status == "SKIPPED" else dep
            return

    # 3. inputs, copied into a fresh working directory as VW's runner does
    dep_dirs = [work / f"test_{dep}" for dep in test.get("depends_on", [])]
    sources = []
    for name in test.get("input_files", []):
        src, why = find_input(name, test_dir, dep_dirs)
        if src is None:
            row.status, row.detail = "SKIPPED", why
            return
        sources.append((name, src))
    wd = lay_out(work / f"test_{row.id}", sources)

    # 4. run sl (sl_cmd names the subcommand: `sl vw`, or `sl train`) with VW's arguments, verbatim
    cmd = sl_cmd + shlex.split(test["vw_command"])
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=wd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        row.seconds = f"{time.monotonic() - t0:.1f}"
        row.status, row.rc, row.detail = "ERROR", "timeout", f"timed out after {timeout:g} s"
        return
    row.seconds = f"{time.monotonic() - t0:.1f}"
    row.rc = str(proc.returncode)
    stderr = proc.stderr.decode("utf-8", errors="replace")

    # 5. classify
    if proc.returncode == 2:
        row.detail = first_error_line(stderr)
        row.status, row.refused = "REFUSED", refused_option(row.detail, cmd)
        return
    if proc.returncode != 0 or "Traceback (most recent call last)" in stderr:
        row.status, row.detail = "ERROR", first_error_line(stderr)
        return
    sl = parse_loss(stderr)
    if sl is None:
        row.status, row.detail = "ERROR", "exit 0 but no 'average loss' line: " + first_error_line(stderr)
        return
    if ref.holdout:
        h = _HOLDOUT.search(stderr)
        if h:
            try:
                sl = Loss(h.group(1) + " h", float(h.group(1)), True)
            except ValueError:
                pass
    sl_ex = parse_examples(stderr)
    row.sl_loss, row.sl_examples = sl.text, fmt_examples(sl_ex)
    row.status, row.detail = compare(sl, ref, sl_ex, ref_ex)
    if ref.holdout and not sl.holdout:
        row.detail = (row.detail + "; " if row.detail else "") + "ref is a holdout loss, sl printed none"
    if vw_cmd and row.status in ("CLOSE", "DIFFERENT"):
        row.detail += "; " + against_vw(vw_cmd, test, sources, work, row, sl, sl_ex, timeout)


def lay_out(wd: Path, sources: list) -> Path:
    """A fresh working directory ``wd`` with an empty ``models/`` and the test's inputs."""
    if wd.exists():
        shutil.rmtree(wd)
    (wd / "models").mkdir(parents=True)
    for name, src in sources:
        dst = wd / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    return wd


def against_vw(vw_cmd: list[str], test: dict, sources: list, work: Path, row: Row, sl: Loss,
               sl_ex, timeout: float) -> str:
    """Run the installed VW on the same line and inputs: does sl give *its* numbers?

    The suite's reference files were written by VW builds of their day; a CLOSE line
    whose loss equals the installed VW's (to its six printed decimals) differs from
    the reference file, not from VW.
    """
    wd = lay_out(work / f"test_{row.id}.vw", sources)
    try:
        proc = subprocess.run(vw_cmd + shlex.split(test["vw_command"]), cwd=wd,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "installed vw: timed out"
    vw = parse_loss(proc.stderr.decode("utf-8", errors="replace"))
    if vw is None:
        return f"installed vw: no average loss (exit {proc.returncode})"
    status, _ = compare(sl, vw, sl_ex, parse_examples(proc.stderr.decode("utf-8", "replace")))
    same = "equal to" if status == "MATCH" else "differs from"
    return f"sl {same} the installed vw ({vw.text})"


def extract_tests(git_dir: Path, test_dir: Path) -> None:
    """Write HEAD's test/ tree of VW's git directory to `test_dir`, blob by blob.

    ``git archive`` stops at the first missing object of a partial clone;
    this skips such blobs (and says which), so the tests that need them are
    SKIPPED for a missing input rather than the whole tree being lost.
    """
    ls = subprocess.run(["git", "-C", str(git_dir), "ls-tree", "-r", "HEAD", "test"],
                        check=True, capture_output=True, text=True).stdout
    entries = [(meta.split()[0], meta.split()[2], path)
               for meta, path in (ln.split("\t", 1) for ln in ls.splitlines())
               if meta.split()[1] == "blob"]
    cat = subprocess.Popen(["git", "-C", str(git_dir), "cat-file", "--batch"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    missing = []
    for mode, sha, path in entries:
        cat.stdin.write(sha.encode() + b"\n")
        cat.stdin.flush()
        header = cat.stdout.readline().split()
        if len(header) < 3:  # "<sha> missing"
            missing.append(path)
            continue
        data = cat.stdout.read(int(header[2]))
        cat.stdout.read(1)
        dst = test_dir / Path(path).relative_to("test")
        dst.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            if not dst.is_symlink():
                os.symlink(data.decode(), dst)
            continue
        dst.write_bytes(data)
        if mode == "100755":
            dst.chmod(0o755)
    cat.stdin.close()
    cat.wait()
    print(f"extracted {len(entries) - len(missing)} files of test/ into {test_dir}"
          + (f"; missing from the clone: {', '.join(missing)}" if missing else ""), file=sys.stderr)


def parse_ids(spec: str) -> set[int]:
    out: set[int] = set()
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


# ---------------------------------------------------------------- summary ---

def summary(rows: list[Row], n_shell: int) -> str:
    out = []
    total = len(rows)
    counts = collections.Counter(r.status for r in rows)
    out.append(f"{total} tests with a vw_command run or classified "
               f"(the suite's {n_shell} bash_command tests are left out)")
    for s in STATUSES:
        out.append(f"  {s:<10} {counts.get(s, 0):4d}  ({100 * counts.get(s, 0) / max(total, 1):.1f}%)")

    skip = collections.Counter()
    for r in rows:
        if r.status == "SKIPPED":
            d = r.detail
            key = ("depends on a test that did not MATCH" if d.startswith("depends on")
                   else "reference stderr has no average loss" if d.startswith("reference stderr has no")
                   else "input missing / LFS pointer" if d.startswith("input ") else d)
            skip[key] += 1
    if skip:
        out.append("\nSKIPPED by reason:")
        out += [f"  {n:4d}  {k}" for k, n in skip.most_common()]

    refused = collections.Counter(r.refused for r in rows if r.status == "REFUSED")
    by_id = {r.id: r for r in rows}
    downstream = collections.Counter()
    for r in rows:
        if r.status == "SKIPPED" and r.blocked_by is not None:
            up = by_id.get(r.blocked_by)
            if up is not None and up.status == "REFUSED":
                downstream[up.refused] += 1
    if refused:
        out.append("\nTop 25 refused options (first option sl refuses in each test; "
                   "+N = dependents then SKIPPED):")
        for opt, n in refused.most_common(25):
            extra = f"  +{downstream[opt]}" if downstream[opt] else ""
            out.append(f"  {n:4d}{extra:<6}  {opt}")
        out.append(f"  ({len(refused)} distinct first-refused options over {sum(refused.values())} tests)")

    for status in ("DIFFERENT", "CLOSE"):
        sel = [r for r in rows if r.status == status]
        if sel:
            out.append(f"\n{status} (sl accepted every option): id  sl vs ref  (why)  / command")
            for r in sel:
                note = f"  ({r.detail})" if r.detail else ""
                out.append(f"  {r.id:4d}  {r.sl_loss} vs {r.ref_loss}{note}\n        {r.command}")

    errs = [r for r in rows if r.status == "ERROR"]
    if errs:
        out.append("\nERROR: id  rc  first error line")
        out += [f"  {r.id:4d}  {r.rc:>7}  {r.detail[:150]}" for r in errs]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suite", type=Path, help="core.vwtest.json")
    ap.add_argument("test_dir", type=Path, help="the extracted test/ directory of VW's repository")
    ap.add_argument("--sl", default="sl", help="the sl command and subcommand, split with shlex (default: 'sl vw'; a bare program gets 'vw')")
    ap.add_argument("--out", type=Path, default=Path("vwsuite-results.tsv"), help="TSV to write")
    ap.add_argument("--work", type=Path, default=None,
                    help="scratch directory for the per-test working dirs (default: OUT's dir/vwsuite-work)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per sl process (default 60)")
    ap.add_argument("--ids", default=None, help="only these test ids, e.g. 1-50,73 (dependencies run too)")
    ap.add_argument("--extract-from", type=Path, default=None, metavar="VW_GIT_DIR",
                    help="first write HEAD's test/ tree of this VW git directory into TEST_DIR")
    ap.add_argument("--vw", default=None, metavar="CMD",
                    help="also run this VW (e.g. 'python -m vowpalwabbit') on CLOSE and DIFFERENT "
                         "lines: their detail says whether sl equals the installed VW")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per test as it runs")
    args = ap.parse_args(argv)
    if args.extract_from:
        extract_tests(args.extract_from, args.test_dir)

    suite = json.loads(args.suite.read_text())
    tests = [t for t in suite if t.get("vw_command")]
    n_shell = len(suite) - len(tests)
    if args.ids:
        wanted = parse_ids(args.ids)
        by_id = {t["id"]: t for t in tests}
        stack = list(wanted)
        while stack:  # pull in dependencies, transitively
            for dep in by_id.get(stack.pop(), {}).get("depends_on", []):
                if dep not in wanted:
                    wanted.add(dep)
                    stack.append(dep)
        tests = [t for t in tests if t["id"] in wanted]
    test_dir = args.test_dir.resolve()
    work = (args.work or args.out.resolve().parent / "vwsuite-work").resolve()
    work.mkdir(parents=True, exist_ok=True)
    sl_cmd = shlex.split(args.sl)
    if len(sl_cmd) == 1:  # a bare program: VW's lines go to its VW entry point
        sl_cmd.append("vw")

    results: dict[int, Row] = {}
    t_start = time.monotonic()
    for i, test in enumerate(tests, 1):
        row = Row(test["id"], test["vw_command"])
        run_test(test, row, test_dir, work, sl_cmd, args.timeout, results,
                 shlex.split(args.vw) if args.vw else None)
        results[row.id] = row
        if args.verbose:
            print(f"[{i}/{len(tests)}] {row.id:4d} {row.status:<9} {row.sl_loss or '-'} vs "
                  f"{row.ref_loss or '-'}  {row.refused or row.detail[:80]}", file=sys.stderr, flush=True)

    rows = list(results.values())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write("\t".join(TSV_COLUMNS) + "\n")
        fh.writelines(r.tsv() + "\n" for r in rows)
    print(summary(rows, n_shell))
    print(f"\nTSV: {args.out}   ({time.monotonic() - t_start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
