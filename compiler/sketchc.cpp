//===- sketchc.cpp - the sketch compiler driver ---------------------------===//
//
// Parses a .sketch file, completes it (dimensions, Allocates, Reshapes,
// defaults), plans it, and prints the completed sketch, the MLIR, or CUDA.
//
//===----------------------------------------------------------------------===//
#include "dialect/SketchDialect.h"
#include "lib/Emit/CudaEmitter.h"
#include "lib/Emit/Variants.h"
#include "lib/Frontend/Parser.h"
#include "lib/Frontend/Printer.h"
#include "lib/Passes/Passes.h"
#include "lib/Passes/Pipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace {

struct DriverOptions {
  std::string input;
  std::string output;
  std::string emit = "cuda";
  bool parseOnly = false;
  bool noPlan = false;
  bool printPipeline = false;
  bool printAfterAll = false;
  std::string archs; // --arch: comma-separated, in any order
  sketch::CompileOptions compile;
};

constexpr const char *kExamples = R"(Examples:
  sketchc gemm.sketch -o gemm.cu            write gemm.cu and gemm.h
  sketchc gemm.sketch --emit=sketch         print the completed sketch
  sketchc gemm.sketch --emit=sketch --parse-only
                                            print the sketch as parsed
  sketchc b2b.sketch -D N0=64 --emit=mlir   bind a size, print the MLIR
  sketchc gemm.sketch --emit=api            the host API as JSON (python/sketch reads it)
  sketchc gemm.sketch --tile 128x256x32 --warps 8 --stages 4 --arch sm_90a -o g.cu
  sketchc gemm.sketch --arch sm_80,sm_90a -o g.cu
                                            one file for Ampere and Hopper (the default)
  cat gemm.sketch | sketchc - --emit=cuda   read stdin, CUDA to stdout)";

void addOptions(CLI::App &app, DriverOptions &opts) {
  app.add_option("input", opts.input, "input .sketch file, or - for stdin")->required();
  app.add_option("-o,--output", opts.output,
                 "output file; with --emit=cuda, X.cu gets a header X.h beside it");
  app.add_option("--emit", opts.emit,
                 "what to print: cuda (default), sketch (the completed sketch), mlir, or api "
                 "(the host functions' parameters as JSON)")
      ->check(CLI::IsMember({"sketch", "mlir", "cuda", "api"}));
  app.add_option("-D", opts.compile.bindings, "bind a size symbol: -D N0=64");
  app.add_option("--arch", opts.archs,
                 "target architectures, comma-separated: sm_80 (Ampere), sm_90 (Hopper without "
                 "wgmma: the mma.sync GEMM path), sm_90a (Hopper, wgmma GEMM path). Several: "
                 "each kernel once per architecture, the host function picks the variant for "
                 "its device. Default: sm_80,sm_90a")
      ->type_name("ARCH[,ARCH...]");
  app.add_option("--tile", opts.compile.tile, "block tile BMxBNxBK, e.g. 128x128x32");
  app.add_option("--warps", opts.compile.warps, "warps per block")->check(CLI::Range(1, 32));
  app.add_option("--stages", opts.compile.stages, "shared-memory pipeline depth")
      ->check(CLI::Range(1, 8));
  app.add_flag("--parse-only", opts.parseOnly, "print what was parsed, without completing it");
  app.add_flag("--no-plan", opts.noPlan,
               "with --emit=sketch: complete the sketch only, without the backend plan comments");
  app.add_flag("--print-pipeline", opts.printPipeline, "print the pass pipeline and exit");
  app.add_flag("--print-after-all", opts.printAfterAll, "print the IR after each pass");
  app.set_version_flag("--version", std::string("sketchc ") + SKETCH_VERSION);
  app.footer(kExamples);
}

/// Opens `path` for writing; reports and returns null on failure.
std::unique_ptr<llvm::ToolOutputFile> openOutput(const std::string &path) {
  std::error_code error;
  auto file = std::make_unique<llvm::ToolOutputFile>(path, error, llvm::sys::fs::OF_None);
  if (error) {
    llvm::errs() << "sketchc: error: cannot write '" << path << "': " << error.message() << "\n";
    return nullptr;
  }
  return file;
}

using CudaWriterFn = llvm::function_ref<mlir::LogicalResult(
    const sketch::CudaEmitOptions &, llvm::raw_ostream &, llvm::raw_ostream &)>;

/// Writes the .cu to the output (stdout without one) and the header beside it.
int emitCudaFiles(const DriverOptions &opts, CudaWriterFn write) {
  sketch::CudaEmitOptions emitOptions;
  emitOptions.arch = opts.compile.arch;
  if (opts.output.empty() || opts.output == "-") {
    std::string header;
    llvm::raw_string_ostream headerStream(header);
    return mlir::failed(write(emitOptions, llvm::outs(), headerStream));
  }
  llvm::SmallString<256> headerPath(opts.output);
  llvm::sys::path::replace_extension(headerPath, "h");
  emitOptions.headerName = llvm::sys::path::filename(headerPath).str();
  auto cu = openOutput(opts.output);
  auto h = openOutput(std::string(headerPath));
  if (!cu || !h)
    return 1;
  if (mlir::failed(write(emitOptions, cu->os(), h->os())))
    return 1;
  cu->keep();
  h->keep();
  return 0;
}

/// --emit=sketch: `module` printed, with the sm_90a kernels' forms where it was planned for
/// `arch` (markBackendForms).
void printPlannedSketch(mlir::ModuleOp module, llvm::StringRef arch, const DriverOptions &opts,
                        llvm::raw_ostream &os) {
  if (!opts.noPlan)
    sketch::markBackendForms(module, arch);
  sketch::printSketch(module, os);
}

int printResult(mlir::ModuleOp module, const DriverOptions &opts) {
  if (opts.emit == "cuda")
    return emitCudaFiles(opts, [&](const sketch::CudaEmitOptions &options, llvm::raw_ostream &cu,
                                   llvm::raw_ostream &h) {
      return sketch::emitCuda(module, options, cu, h);
    });
  std::unique_ptr<llvm::ToolOutputFile> file;
  if (!opts.output.empty() && opts.output != "-" && !(file = openOutput(opts.output)))
    return 1;
  llvm::raw_ostream &os = file ? file->os() : llvm::outs();
  if (opts.emit == "api") {
    if (mlir::failed(sketch::emitApi({module}, {opts.compile.arch}, {}, os)))
      return 1;
  } else if (opts.emit == "sketch")
    printPlannedSketch(module, opts.compile.arch, opts, os);
  else
    module.print(os);
  if (file)
    file->keep();
  return 0;
}

/// A .mlir input holds the sketch dialect in MLIR syntax; anything else is sketch source.
mlir::OwningOpRef<mlir::ModuleOp> parseInput(llvm::SourceMgr &sourceMgr, llvm::StringRef path,
                                             mlir::MLIRContext *context) {
  if (path.ends_with(".mlir"))
    return mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, context);
  return sketch::parseSketch(sourceMgr, context);
}

/// The completed (and, but for --emit=sketch --no-plan, planned) module for `arch`.
bool runPipeline(mlir::ModuleOp module, const DriverOptions &opts, const std::string &arch) {
  sketch::CompileOptions compile = opts.compile;
  compile.arch = arch;
  mlir::PassManager pm(module.getContext());
  if (opts.emit == "sketch" && opts.noPlan)
    sketch::buildCompletionPipeline(pm, compile);
  else
    sketch::buildCompilePipeline(pm, compile);
  if (opts.printAfterAll)
    pm.enableIRPrinting();
  return mlir::succeeded(pm.run(module));
}

/// Several architectures: one completed module each, then one output with every variant.
int compileVariants(mlir::ModuleOp parsed, const DriverOptions &opts,
                    const std::vector<std::string> &archs) {
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
  std::vector<sketch::Variant> variants;
  for (const std::string &arch : archs) {
    modules.push_back(parsed.clone());
    if (!runPipeline(*modules.back(), opts, arch))
      return 1;
    variants.push_back({arch, *modules.back()});
  }
  std::unique_ptr<llvm::ToolOutputFile> file;
  if (opts.emit != "cuda" && !opts.output.empty() && opts.output != "-" &&
      !(file = openOutput(opts.output)))
    return 1;
  llvm::raw_ostream &os = file ? file->os() : llvm::outs();
  if (opts.emit == "cuda") {
    for (const sketch::Variant &v : variants)
      sketch::markVariant(v.module, v.arch);
    return emitCudaFiles(opts, [&](const sketch::CudaEmitOptions &options, llvm::raw_ostream &cu,
                                   llvm::raw_ostream &h) {
      return sketch::emitCudaVariants(variants, options, cu, h);
    });
  }
  if (opts.emit == "api") {
    std::vector<mlir::ModuleOp> modules;
    for (const sketch::Variant &v : variants)
      modules.push_back(v.module);
    if (mlir::failed(sketch::emitApi(modules, archs, {}, os)))
      return 1;
  } else {
    const char *comment = opts.emit == "sketch" ? "#" : "//";
    os << comment << " host functions: " << sketch::dispatchRule(archs) << "\n";
    for (sketch::Variant v : variants) {
      os << comment << " ===== variant " << v.arch << " =====\n";
      if (opts.emit == "sketch")
        printPlannedSketch(v.module, v.arch, opts, os);
      else
        v.module.print(os);
    }
  }
  if (file)
    file->keep();
  return 0;
}

int compile(DriverOptions opts) {
  std::string archError;
  llvm::SmallVector<llvm::StringRef> named;
  llvm::StringRef(opts.archs).split(named, ',');
  std::vector<std::string> archs = sketch::normalizeArchs(
      opts.archs.empty() ? sketch::defaultArchs()
                         : std::vector<std::string>(named.begin(), named.end()),
      archError);
  if (archs.empty()) {
    llvm::errs() << "sketchc: error: " << archError << "\n";
    return 1;
  }
  opts.compile.arch = archs.front();
  mlir::MLIRContext context;
  context.getOrLoadDialect<sketch::SketchDialect>();
  // Errors point at sketch statements; the generic op dump would only add noise.
  context.printOpOnDiagnostic(false);
  context.allowUnregisteredDialects(false);

  mlir::PassManager pm(&context);
  // The sketch printer shows the backend plan (pipelining, shared memory,
  // fused epilogue) as comments, so --emit=sketch runs the planning passes too.
  if (opts.emit == "cuda" || opts.emit == "api" || (opts.emit == "sketch" && !opts.noPlan))
    sketch::buildCompilePipeline(pm, opts.compile);
  else
    sketch::buildCompletionPipeline(pm, opts.compile);
  if (opts.printPipeline) {
    if (archs.size() > 1)
      llvm::outs() << "(once per architecture: " << llvm::join(archs, ", ") << ")\n";
    pm.printAsTextualPipeline(llvm::outs());
    llvm::outs() << "\n";
    return 0;
  }

  std::string errorMessage;
  auto buffer = mlir::openInputFile(opts.input, &errorMessage);
  if (!buffer) {
    llvm::errs() << "sketchc: error: " << errorMessage << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  mlir::OwningOpRef<mlir::ModuleOp> module = parseInput(sourceMgr, opts.input, &context);
  if (!module || mlir::failed(mlir::verify(*module)))
    return 1;
  if (archs.size() > 1 && !opts.parseOnly) {
    if (opts.printAfterAll)
      context.disableMultithreading();
    return compileVariants(*module, opts, archs);
  }
  if (!opts.parseOnly) {
    if (opts.printAfterAll) {
      context.disableMultithreading();
      pm.enableIRPrinting();
    }
    if (mlir::failed(pm.run(*module)))
      return 1;
  }
  return printResult(*module, opts);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"sketchc: compiles thread-block sketches to CUDA"};
  DriverOptions opts;
  addOptions(app, opts);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 1;
  }
  return compile(opts);
}
