"""Makes the ss_nt_async* kernels of a generated stash.sketch (.gen/ab/new.cu) copy X's (a), W's
(b) or both operands' tiles by 4-byte cp.async: their loaders' Vec flag set to false.
  python3 bench/labs/sgemm_stash/patch.py .gen/ab/new.cu"""
import re
import sys

path = sys.argv[1]
parts = re.split(r"(?=^// Kernel )", open(path).read(), flags=re.M)
for i, part in enumerate(parts):
    m = re.match(r"// Kernel ss_nt_async(a?b?):", part)
    if not m:
        continue
    which = m.group(1)
    if "a" in which:
        part = part.replace("KContiguousLoader<ROWS, DEPTH, THREADS, kVecA>",
                            "KContiguousLoader<ROWS, DEPTH, THREADS, false>")
    if "b" in which:
        part = part.replace("KContiguousLoader<COLS, DEPTH, THREADS, kVec>",
                            "KContiguousLoader<COLS, DEPTH, THREADS, false>")
    parts[i] = part
open(path, "w").write("".join(parts))
