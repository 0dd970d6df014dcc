//===- fuzz_frontend.cpp - libFuzzer target over the front end and passes -===//
//
// Each input is one .sketch source. It is parsed, verified, printed back to
// sketch syntax (to a null stream), completed by the completion pipeline with
// default options, and printed again. Diagnostics are formatted as sketchc
// formats them (source line and caret) and then dropped: a rejected input is
// fine, a crash, hang, leak or sanitizer report is a bug.
//
// Environment switches (off by default):
//   SKETCH_FUZZ_BACKEND=1    also run the whole compile pipeline (completion
//                            and the backend planning passes).
//   SKETCH_FUZZ_ROUNDTRIP=1  abort when a printed program does not parse back
//                            (the printer's contract), not just on crashes.
//
// Build and run: test/fuzz/run.sh (docs/robustness.md).
//
//===----------------------------------------------------------------------===//
#include "dialect/SketchDialect.h"
#include "lib/Frontend/Parser.h"
#include "lib/Frontend/Printer.h"
#include "lib/Passes/Pipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

/// Inputs one context serves before it is replaced: attributes and names are
/// uniqued in the context and never freed, so a context reused forever grows.
constexpr unsigned kInputsPerContext = 20000;

bool envFlag(const char *name) {
  const char *value = std::getenv(name);
  return value && *value && std::string(value) != "0";
}

const bool runBackend = envFlag("SKETCH_FUZZ_BACKEND");
const bool checkRoundTrip = envFlag("SKETCH_FUZZ_ROUNDTRIP");

mlir::MLIRContext &fuzzContext() {
  static std::unique_ptr<mlir::MLIRContext> context;
  static unsigned served = 0;
  if (!context || ++served % kInputsPerContext == 0) {
    context = std::make_unique<mlir::MLIRContext>(mlir::MLIRContext::Threading::DISABLED);
    context->getOrLoadDialect<sketch::SketchDialect>();
    context->printOpOnDiagnostic(false);
  }
  return *context;
}

std::string printed(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  sketch::printSketch(module, os);
  return text;
}

/// Parses `source` as sketch text named `name`; diagnostics are formatted and dropped.
mlir::OwningOpRef<mlir::ModuleOp> parse(mlir::MLIRContext &context, llvm::StringRef source,
                                        llvm::StringRef name, llvm::SourceMgr &sourceMgr) {
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, name), llvm::SMLoc());
  return sketch::parseSketch(sourceMgr, &context);
}

/// The printer promises text that parses back; abort (a finding) when it does not.
void checkReparses(mlir::MLIRContext &context, mlir::ModuleOp module, const char *stage) {
  std::string text = printed(module);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context, llvm::errs());
  mlir::OwningOpRef<mlir::ModuleOp> again = parse(context, text, "printed.sketch", sourceMgr);
  if (again && mlir::succeeded(mlir::verify(*again)))
    return;
  std::fprintf(stderr, "printed program (%s) does not parse back:\n%s\n", stage, text.c_str());
  std::abort();
}

/// The whole compile pipeline: completion, then the backend planning passes.
void runBackendOn(mlir::MLIRContext &context, mlir::ModuleOp module) {
  mlir::PassManager pm(&context);
  sketch::buildCompilePipeline(pm, sketch::CompileOptions());
  if (mlir::succeeded(pm.run(module)))
    sketch::printSketch(module, llvm::nulls());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext &context = fuzzContext();
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context, llvm::nulls());
  llvm::StringRef source(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module = parse(context, source, "fuzz.sketch", sourceMgr);
  if (!module || mlir::failed(mlir::verify(*module)))
    return 0;
  sketch::printSketch(*module, llvm::nulls());
  if (checkRoundTrip)
    checkReparses(context, *module, "parsed");

  if (runBackend) {
    mlir::OwningOpRef<mlir::ModuleOp> copy = module->clone();
    runBackendOn(context, *copy);
  }

  mlir::PassManager pm(&context);
  sketch::buildCompletionPipeline(pm, sketch::CompileOptions());
  if (mlir::failed(pm.run(*module)))
    return 0;
  sketch::printSketch(*module, llvm::nulls());
  if (checkRoundTrip)
    checkReparses(context, *module, "completed");
  return 0;
}
