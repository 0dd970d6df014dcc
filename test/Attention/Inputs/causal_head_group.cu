// The causal block order's head groups (sketch::causal_head_group_for, host.h) over a sweep
// of L2 sizes, K/V bytes a head and head counts: every group between 1 and the heads, at
// most 65535 groups, no larger than what half the L2 holds unless 65535 groups force it,
// and the last group missing fewer heads than there are groups. Prints the violations, the
// count and a few cases.
#include "sketch/host.h"
#include <cstdio>

int main() {
  long checked = 0, broken = 0;
  const int64_t l2s[] = {0, 4 << 20, 40 << 20, 50 << 20, 60 << 20};
  for (int64_t l2 : l2s)
    for (int64_t kv = 1; kv <= (int64_t(64) << 20); kv = kv * 3 + 7)
      for (int64_t heads = 1; heads <= 5000; heads += heads < 200 ? 1 : 97) {
        const int64_t group = sketch::causal_head_group_for(l2, kv, heads);
        const int64_t groups = (heads + group - 1) / group;
        const int64_t fit = l2 / 2 / kv, fewest = (heads + 65534) / 65535;
        const bool ok = group >= 1 && group <= heads && groups <= 65535 &&
                        (group <= fit || group == fewest || fit < 1) &&
                        groups * group - heads < groups;
        ++checked;
        if (!ok && ++broken <= 5)
          std::printf("broken: l2 %lld kv %lld heads %lld -> %lld\n", (long long)l2,
                      (long long)kv, (long long)heads, (long long)group);
      }
  // head counts about multiples of 65535 (grid z), with room for a few heads a group or none
  const int64_t large[] = {65535, 65536, 131070, 131071, 196605, 196606, 1 << 20, (1 << 30) - 1};
  for (int64_t heads : large)
    for (int64_t kv : {int64_t(1) << 40, int64_t(1) << 24, int64_t(1) << 20}) {
      const int64_t group = sketch::causal_head_group_for(50 << 20, kv, heads);
      const int64_t groups = (heads + group - 1) / group;
      ++checked;
      if ((group < 1 || group > heads || groups > 65535 || groups * group - heads >= groups) &&
          ++broken <= 5)
        std::printf("broken: heads %lld kv %lld -> %lld\n", (long long)heads, (long long)kv,
                    (long long)group);
    }
  // groups forced by grid z: 65535 * 3 + 1 heads with room for one head a group
  const int64_t many = int64_t(65535) * 3 + 1;
  const int64_t forced = sketch::causal_head_group_for(1, 1, many);
  if ((many + forced - 1) / forced > 65535)
    ++broken;
  std::printf("checked %ld, broken %ld\n", checked, broken);
  const int64_t mb = 1 << 20;
  std::printf("D64 L4096 64 heads: %d\n", sketch::causal_head_group_for(50 * mb, 1 * mb, 64));
  std::printf("D128 L4096 64 heads: %d\n", sketch::causal_head_group_for(50 * mb, 2 * mb, 64));
  std::printf("101 heads at 50: %d\n", sketch::causal_head_group_for(50 * mb, mb / 2, 101));
  std::printf("no L2 read: %d\n", sketch::causal_head_group_for(0, mb, 64));
  std::printf("forced by grid z: %lld\n", (long long)forced);
  return 0;
}
