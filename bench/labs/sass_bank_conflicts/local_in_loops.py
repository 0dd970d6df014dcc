"""Where the local-memory accesses (STL / LDL: spills) of each kernel in a SASS dump sit:
inside a loop (a backward branch's span) or not.  python3 local_in_loops.py FILE.sass"""
import re, sys
s = open(sys.argv[1]).read()
for f in re.split(r'\n\s*Function : ', s)[1:]:
    name = f.split('\n')[0].strip()
    lines = [l for l in f.split('\n') if re.search(r'/\*[0-9a-f]{4}\*/', l)]
    addr = lambda l: int(re.search(r'/\*([0-9a-f]{4,})\*/', l).group(1), 16)
    local = [(addr(l), l.split('*/')[1].split(';')[0].strip()) for l in lines if re.search(r'\b(STL|LDL)\b', l)]
    if not local:
        continue
    loops = []
    for l in lines:
        m = re.search(r'BRA\s+(?:`\()?0x([0-9a-f]+)', l)
        if m and int(m.group(1), 16) < addr(l):
            loops.append((int(m.group(1), 16), addr(l)))
    inside = [a for a, _ in local if any(lo <= a <= hi for lo, hi in loops)]
    print(f"{name[:70]}: {len(local)} local accesses, {len(inside)} inside loops {[(hex(a), hex(b)) for a, b in loops]}")
    for a, ins in local:
        print("   ", hex(a), ins, "(in loop)" if a in inside else "")
