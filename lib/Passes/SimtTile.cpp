//===- SimtTile.cpp - the f32 SIMT block and its rules --------------------===//
#include "lib/Passes/SimtTile.h"
#include "lib/Passes/BackendPlan.h"

#include <algorithm>
#include <tuple>

namespace sketch {
namespace {

constexpr int64_t kPartitionRegisters = 16384; // an SM: 4 partitions of 16384 registers
constexpr int64_t kMaxRegistersPerThread = 255;
constexpr int64_t kMaxThreadsPerSm = 2048;
constexpr int64_t kMaxBlocksPerSm = 32;

/// The registers each thread may have when `warps` warps share an SM: its 4
/// partitions hold a quarter of the warps each (rounded up); ptxas allocates
/// in steps of 8.
int64_t registerCap(int64_t warps) {
  int64_t perPartition = (warps + 3) / 4;
  return std::min(kMaxRegistersPerThread, kPartitionRegisters / (perPartition * 32) / 8 * 8);
}

std::string str(int64_t value) { return std::to_string(value); }

/// The micro-tile of `outputs` accumulators for a rows x cols block: microRows
/// divides rows, microCols divides cols; fewest loads a k step, then squarest.
SimtTile chooseMicroTile(int64_t rows, int64_t cols, int64_t depth, int64_t outputs) {
  SimtTile best{rows, cols, depth, 0, 0};
  auto cost = [](int64_t m, int64_t n) {
    return std::make_tuple(m / simtVectorWidth(m) + n / simtVectorWidth(n), m + n, m);
  };
  for (int64_t m = 1; m <= outputs; ++m) {
    if (outputs % m != 0 || rows % m != 0 || cols % (outputs / m) != 0)
      continue;
    int64_t n = outputs / m;
    if (best.microRows == 0 || cost(m, n) < cost(best.microRows, best.microCols)) {
      best.microRows = m;
      best.microCols = n;
    }
  }
  return best;
}

/// Rule 6 (the nchw convolution's input loader): empty when kept, else the rule broken.
std::string brokenIm2col(const SimtTile &tile) {
  int64_t threads = tile.threads();
  std::string rule = "rule 6, the input loader: the " + str(threads) + " threads (32 x warps) must ";
  if (threads % tile.cols != 0)
    return rule + "be a multiple of the BM = " + str(tile.cols) +
           " pixels (each thread loads one pixel column of the input tile): use more warps or "
           "a smaller BM";
  if (tile.cols * tile.depth % (4 * threads) != 0)
    return rule + "divide the BM x BK = " + str(tile.cols * tile.depth) +
           " input elements in chunks of 4 evenly (each thread loads 4 reduction indices at a "
           "time): use a larger BK or fewer warps";
  return "";
}

} // namespace

int64_t simtVectorWidth(int64_t n) { return n % 4 == 0 ? 4 : n % 2 == 0 ? 2 : 1; }

int64_t SimtTile::copyChunks() const {
  // ChunkDeal's widest chunk whose count the threads divide, for a tile whose
  // rows are `contiguous` floats long; an operand tile is contiguous along BK
  // (A, B^T) or along its BM / BN rows (A^T, B).
  auto chunk = [&](int64_t floats, int64_t contiguous) {
    for (int64_t width : {4, 2})
      if (contiguous % width == 0 && floats / width % threads() == 0)
        return width;
    return int64_t(1);
  };
  int64_t chunks = 0;
  for (int64_t extent : {rows, cols}) {
    int64_t floats = extent * depth;
    chunks += floats / std::min(chunk(floats, depth), chunk(floats, extent)) / threads();
  }
  return chunks;
}

int64_t SimtTile::registers() const {
  int64_t operands = onF64TensorCores() ? 2 * accumulators() + 2 * microRows + microCols
                                        : accumulators() + microRows + microCols;
  int64_t total = operands + stagedFloats() + 3 * copyChunks() + loaderRegisters +
                  kSimtOtherRegisters;
  // ptxas refused m16n8k4.f64 in a 32 x 32 x 8 block held to 56
  return onF64TensorCores() ? std::max<int64_t>(64, total) : total;
}

int64_t SimtTile::storeVector() const {
  return onF64TensorCores() ? 2 : simtVectorWidth(microCols);
}

int64_t SimtTile::scalarRegisters() const { return registers() + stagedFloats() / 2; }

int64_t SimtTile::minBlocksPerSm() const {
  int64_t warps = threads() / 32, most = std::min(kMaxBlocksPerSm, kMaxThreadsPerSm / threads());
  int64_t blocks = 1;
  while (blocks < most && registerCap((blocks + 1) * warps) >= registers())
    ++blocks;
  return blocks;
}

int64_t SimtTile::sharedBytes(int64_t stages) const {
  return stageBytes(simtStages(stages));
}

int64_t SimtTile::stageBytes(int64_t stages) const {
  return stages * depth * (simtPaddedRow(rows) + simtPaddedRow(cols)) * 4;
}

namespace {

std::string threadsText(int64_t threads) { return "the " + str(threads) + " threads (32 x warps)"; }

/// Rules 1, 2 and 4 (the sizes alone); empty when kept.
std::string brokenDivision(int64_t rows, int64_t cols, int64_t depth, int64_t threads) {
  int64_t outputs = rows * cols;
  if (outputs % threads != 0)
    return "rule 1, threads divide the tile: " + threadsText(threads) +
           " must divide the BM x BN = " + str(outputs) +
           " outputs evenly (each thread computes a micro-tile of the same size)";
  if (outputs / threads > kSimtMaxAccumulators)
    return "rule 2, at most " + str(kSimtMaxAccumulators) + " accumulators a thread: " +
           threadsText(threads) + " would hold " + str(outputs / threads) +
           " each (BM x BN / threads): use more warps (at most 32) or a smaller tile";
  for (auto [extent, name] : {std::pair{rows, "BM"}, std::pair{cols, "BN"}})
    if (extent * depth % threads != 0)
      return "rule 4, threads divide the copies: " + threadsText(threads) +
             " must divide the " + name + " x BK = " + str(extent * depth) +
             " elements of an operand tile evenly (each thread copies as many): use fewer "
             "warps or a larger tile";
  return "";
}

/// Rules 3 and 5 (the derived tile); empty when kept.
std::string brokenResources(const SimtTile &tile, int64_t warps, int64_t stages,
                            int64_t smemLimit) {
  if (tile.scalarRegisters() > registerCap(warps))
    return "rule 3, registers: a thread needs about " + str(tile.scalarRegisters()) + " (" +
           str(tile.accumulators()) + " accumulators, " + str(tile.microRows + tile.microCols) +
           " operands, " + str(tile.stagedFloats()) + " staged copy floats, " +
           str(3 * tile.copyChunks()) + " for the copies' addresses and guards, " +
           str(tile.stagedFloats() / 2) + " for the scalar copies' element guards, " +
           str(kSimtOtherRegisters) + " others), more than the " + str(registerCap(warps)) +
           " each of " + str(tile.threads()) +
           " threads can have (65536 an SM, at most 255 a thread): use a smaller tile or BK";
  if (tile.sharedBytes(stages) > smemLimit)
    return "rule 5, shared memory: the tiles need " + str(tile.sharedBytes(stages)) + " bytes (" +
           str(simtStages(stages)) +
           " stages x BK x (BM + 4 + BN + 4) floats), more than the " + str(smemLimit) +
           " a block may use on the target: use a smaller tile or 1 stage";
  return "";
}

} // namespace

std::optional<SimtTile> deriveSimtTile(int64_t rows, int64_t cols, int64_t depth, int64_t warps,
                                       int64_t stages, int64_t smemLimit, std::string &broken,
                                       bool im2col) {
  int64_t threads = 32 * warps;
  broken = brokenDivision(rows, cols, depth, threads);
  if (!broken.empty())
    return std::nullopt;
  // A micro-tile always exists here: microRows = gcd(outputs a thread, rows) leaves
  // a microCols that divides cols.
  SimtTile tile = chooseMicroTile(rows, cols, depth, rows * cols / threads);
  broken = brokenResources(tile, warps, stages, smemLimit);
  if (broken.empty() && im2col)
    broken = brokenIm2col(tile);
  if (!broken.empty())
    return std::nullopt;
  return tile;
}

std::optional<SimtTile> f64TensorCoreTile(const SimtTile &tile) {
  int64_t warps = tile.threads() / 32;
  if (tile.depth % 4 != 0)
    return std::nullopt;
  std::optional<SimtTile> best;
  auto loads = [](const SimtTile &t) { return 2 * (t.microRows / 2) + t.microCols / 2; };
  for (int64_t warpsM = 1; warpsM <= warps; ++warpsM) {
    int64_t warpsN = warps / warpsM;
    if (warps % warpsM != 0 || tile.rows % (16 * warpsM) != 0 || tile.cols % (8 * warpsN) != 0)
      continue;
    SimtTile mma = tile;
    mma.mmaWarpsM = warpsM;
    mma.mmaWarpsN = warpsN;
    mma.microRows = 2 * (tile.rows / warpsM / 16);
    mma.microCols = 2 * (tile.cols / warpsN / 8);
    if (mma.scalarRegisters() > registerCap(warps))
      continue;
    if (!best || loads(mma) < loads(*best)) // ties: the first, with the most rows a warp
      best = mma;
  }
  return best;
}

SimtTile simtTileForTarget(const SimtTile &tile, llvm::StringRef arch) {
  if (!plan::hasF64TensorCoreMma(arch))
    return tile;
  return f64TensorCoreTile(tile).value_or(tile);
}

std::optional<SimtTile> deriveSimtConvTile(int64_t pixels, int64_t channels, int64_t depth,
                                           int64_t warps, int64_t stages,
                                           const SimtConvLoads &loads, llvm::StringRef arch,
                                           std::string &broken) {
  bool nhwc = loads.nhwc;
  auto tile = deriveSimtTile(nhwc ? pixels : channels, nhwc ? channels : pixels, depth, warps,
                             stages, plan::smemLimitBytes(arch), broken, /*im2col=*/!nhwc);
  if (!tile)
    return std::nullopt;
  // The nhwc loader splits each chunk's pixel and (r, s, c) at every k-tile; the 16-bit
  // loaders convert: at the default tile's 128 registers (two blocks an SM) ptxas spilled
  // 12-60 bytes. An f32 input with a 16-bit output: the narrow 64 x 128 kernel spilled 4
  // bytes at 128 registers (four blocks an SM).
  if (nhwc || !loads.f32InputAndOutput)
    tile->loaderRegisters = kConvLoaderRegisters;
  if (loads.gathersFilter)
    tile->loaderRegisters += kGatheredFilterRegisters;
  return simtTileForTarget(*tile, arch);
}

int64_t defaultSimtWarps(int64_t rows, int64_t cols, int64_t depth, int64_t stages,
                         int64_t smemLimit, bool im2col) {
  int64_t most = std::clamp<int64_t>(rows * cols / (32 * 64), 1, 32);
  std::string broken;
  for (int64_t warps = most; warps >= 1; --warps)
    if (deriveSimtTile(rows, cols, depth, warps, stages, smemLimit, broken, im2col))
      return warps;
  return most;
}

std::optional<SimtTile> simtSmallGridTile(const SimtTile &tile, int64_t stages,
                                          int64_t smemLimit) {
  int64_t rows = std::min<int64_t>(tile.rows, 64), cols = std::min<int64_t>(tile.cols, 64);
  if (rows == tile.rows && cols == tile.cols)
    return std::nullopt;
  std::string broken;
  return deriveSimtTile(rows, cols, tile.depth, std::max<int64_t>(rows * cols / 64 / 32, 1),
                        stages, smemLimit, broken);
}

bool simtTilePipelines(const SimtTile &tile, int64_t smemLimit) {
  return tile.depth >= 16 &&
         tile.stageBytes(kSimtPipelinedStages) * tile.minBlocksPerSm() <= smemLimit;
}

} // namespace sketch
