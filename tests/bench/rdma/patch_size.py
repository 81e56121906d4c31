#!/usr/bin/python3
"""Size of the rxe patch series, as the paper's "Development effort" table:
lines added/removed per patch and per file, overall and in the fast path
(requester rxe_req.c, responder rxe_resp.c, completer rxe_comp.c, and the
packet receive path rxe_recv.c).

    patch_size.py [rxe-patches dir]     prints a markdown table"""
import os
import re
import sys

FAST_PATH = ("rxe_req.c", "rxe_resp.c", "rxe_comp.c", "rxe_recv.c")


def series(patch_dir):
    path = os.path.join(patch_dir, "series")
    if not os.path.exists(path):
        return []
    names = [l.strip() for l in open(path) if l.strip() and not l.lstrip().startswith("#")]
    return [os.path.join(patch_dir, n) for n in names]


def count(patch):
    """{file: [added, removed]} of one unified diff (headers excluded)."""
    files, current = {}, None
    in_hunk = False
    for line in open(patch, errors="replace"):
        if line.startswith("diff --git "):
            current = line.split()[-1].split("/", 1)[-1]
            files.setdefault(current, [0, 0])
            in_hunk = False
        elif line.startswith("@@"):
            in_hunk = True
        elif line.startswith("-- \n") or line == "--\n":
            in_hunk = False  # git format-patch signature
        elif in_hunk and current:
            if line.startswith("+"):
                files[current][0] += 1
            elif line.startswith("-"):
                files[current][1] += 1
    return files


def table(patch_dir):
    patches = series(patch_dir)
    if not patches:
        return f"(no patch series in {patch_dir})\n"
    out = ["| patch | files | + | - | fast path + | fast path - |",
           "|---|---:|---:|---:|---:|---:|"]
    tot = [0, 0, 0, 0]
    per_file = {}
    for p in patches:
        if not os.path.exists(p):
            out.append(f"| {os.path.basename(p)} (missing) | | | | | |")
            continue
        files = count(p)
        add = sum(a for a, _ in files.values())
        rem = sum(r for _, r in files.values())
        fadd = sum(a for f, (a, _) in files.items() if os.path.basename(f) in FAST_PATH)
        frem = sum(r for f, (_, r) in files.items() if os.path.basename(f) in FAST_PATH)
        for f, (a, r) in files.items():
            acc = per_file.setdefault(f, [0, 0])
            acc[0] += a
            acc[1] += r
        tot = [tot[0] + add, tot[1] + rem, tot[2] + fadd, tot[3] + frem]
        name = re.sub(r"^\d+-", "", os.path.basename(p)).removesuffix(".patch")
        out.append(f"| {name} | {len(files)} | {add} | {rem} | {fadd} | {frem} |")
    out.append(f"| **total** | {len(per_file)} | **{tot[0]}** | **{tot[1]}** | "
               f"**{tot[2]}** | **{tot[3]}** |")
    out += ["", "| file | + | - |", "|---|---:|---:|"]
    for f in sorted(per_file):
        mark = " (fast path)" if os.path.basename(f) in FAST_PATH else ""
        out.append(f"| {f}{mark} | {per_file[f][0]} | {per_file[f][1]} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    print(table(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "../../../rxe-patches")))
