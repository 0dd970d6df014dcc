#!/usr/bin/env python3
"""Lab: two edits of the sm_90a attention kernels that run one block an SM (BLOCKS_PER_SM 1),
applied in place to a generated .cu (each can be left out):
  --division  the key split's share by a 32-bit division (`(tiles + splits - 1) / splits`)
              instead of sketch::ceil_div's 64-bit one (a CALL in the SASS);
  --prefetch  in kernels without a causal mask and not split (splits == 1), the producer
              thread, after this block's Q and K_0, asks L2 for the Q, K_0 and V_0 boxes of the
              block one wave later (linear block index + %nsmid), which is about the block this
              SM takes next (every block costs the same without a mask).
    python3 bench/labs/attention_block_start/patch.py .gen/ab/new.cu --division --prefetch
"""
import argparse
import re
import sys

SHARE = "const int share = int(ceil_div(tiles, splits)),"
SHARE_32 = "const int share = (tiles + splits - 1) / splits,  /* lab: 32-bit */"
PREFETCH_FN = '''
// lab (attention_block_start): a tensor-map box into L2, no shared memory, no barrier
__device__ __forceinline__ void lab_prefetch_3d(const CUtensorMap *map, int x, int y, int z) {
  asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];"
               :: "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(z) : "memory");
}
'''


def head_expr(section, name):
    """The right-hand side of `const int NAME = ...;` with i0, i1 as the next block's."""
    m = re.search(r"const int %s = (.*?); //" % name, section)
    return re.sub(r"\bi([01])\b", r"n_i\1", m.group(1))


def prefetch_block(section, indent):
    q, kv = head_expr(section, "Q_head"), head_expr(section, "KV_head")
    lines = [
        "if (splits == 1) {  // lab: the block one wave later: its Q, K_0 and V_0 into L2",
        "  unsigned sms;",
        '  asm("mov.u32 %0, %%nsmid;" : "=r"(sms));',
        "  const unsigned next = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z) + sms;",
        "  if (next < gridDim.x * gridDim.y * gridDim.z) {",
        "    const int n_x = int(next % gridDim.x), n_i1 = int(next / gridDim.x % gridDim.y);",
        "    const int n_i0 = int(next / (gridDim.x * gridDim.y));",
        "    const int n_m0 = (int(gridDim.x) - 1 - n_x) * BM;",
        f"    const int n_q = {q}, n_kv = {kv};",
        "    for (int p = 0; p < QK_PANELS; ++p) {",
        "      lab_prefetch_3d(&Q_map, p * 64, n_m0, n_q);",
        "      lab_prefetch_3d(&K_map, p * 64, 0, n_kv);",
        "    }",
        "    for (int p = 0; p < V_PANELS; ++p)",
        "      lab_prefetch_3d(&V_map, p * 64, 0, n_kv);",
        "  }",
        "}",
    ]
    return "".join(indent + line + "\n" for line in lines)


def patch_section(section, division, prefetch):
    """One kernel's text (from its namespace NAME_tiles on); what was done to it."""
    done = []
    if "constexpr int BLOCKS_PER_SM = 1;" not in section:
        return section, done
    if division and SHARE in section:
        section = section.replace(SHARE, SHARE_32)
        done.append("division")
    plain_grid = ("const int i1 = blockIdx.y;" in section and "const int i0 = blockIdx.z;" in section
                  and "constexpr bool CAUSAL = false;" in section)
    anchor = re.search(r"\n( *)if \(tiles > 0\)\n *load_keys\(0\);\n", section)
    if prefetch and plain_grid and anchor:
        insert = prefetch_block(section, anchor.group(1))
        section = section[:anchor.end()] + insert + section[anchor.end():]
        done.append("prefetch")
    return section, done


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("--division", action="store_true")
    parser.add_argument("--prefetch", action="store_true")
    args = parser.parse_args()
    text = open(args.path).read()
    parts = re.split(r"(?=\nnamespace \w+_tiles \{)", text)
    out, report = [parts[0]], []
    for part in parts[1:]:
        patched, done = patch_section(part, args.division, args.prefetch)
        name = re.match(r"\nnamespace (\w+)_tiles", part).group(1)
        report.append(f"{name}: {', '.join(done) or '-'}")
        out.append(patched)
    text = "".join(out)
    if args.prefetch:  # the helper before the first kernel
        first = text.index("\nnamespace ")
        text = text[:first] + "\n" + PREFETCH_FN + text[first:]
    open(args.path, "w").write(text)
    print("\n".join(report))
    if not any(r.split(": ")[1] != "-" for r in report):
        sys.exit("nothing patched")


if __name__ == "__main__":
    main()
