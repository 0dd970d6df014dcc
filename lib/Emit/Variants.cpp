//===- Variants.cpp - one file for several GPU architectures --------------===//
#include "lib/Emit/Variants.h"
#include "lib/Emit/EmitHost.h"

#include "dialect/SketchDialect.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace sketch {

namespace {

/// What sets an architecture's variant apart: which devices run it (the host
/// function's test on the compute capability) and which nvcc passes compile it.
struct ArchRule {
  const char *name;
  const char *hostFits;   // C++ condition on `capability` (10 * major + minor)
  const char *deviceFits; // preprocessor condition in a device pass
  const char *devices;    // the same in words
};

// Least specific first; the host function tries them in the opposite order.
constexpr ArchRule kArchs[] = {
    {"sm_80", "capability >= 80", "__CUDA_ARCH__ >= 800", "compute capability 8.0 and newer"},
    {"sm_90", "capability >= 90", "__CUDA_ARCH__ >= 900", "compute capability 9.0 and newer"},
    {"sm_90a", "capability == 90", "defined(__CUDA_ARCH_FEAT_SM90_ALL)", "compute capability 9.0"},
};

const ArchRule &ruleOf(StringRef arch) {
  for (const ArchRule &rule : kArchs)
    if (arch == rule.name)
      return rule;
  llvm_unreachable("architectures are checked by normalizeArchs");
}

/// `sm_90a` -> `sm90a`: the suffix of a variant's names.
std::string suffixOf(StringRef arch) { return (arch.take_front(2) + arch.drop_front(3)).str(); }

/// The macro that is 1 in an nvcc pass that does not compile the variant's kernels.
std::string skipMacro(StringRef arch) { return "SKETCH_SKIP_" + StringRef(suffixOf(arch)).upper(); }

/// The variant's `__device__ int`: whether the device's code compiled its kernels.
std::string builtFlag(StringRef arch) { return "sketch_built_" + suffixOf(arch); }

/// A device pass compiles the variant the host function picks on its architecture:
/// the most specific listed one that fits it.
void writeSkipMacros(llvm::raw_ostream &os, ArrayRef<Variant> variants) {
  os << "// A variant's kernels are compiled only by the nvcc pass for the architecture the\n"
     << "// host functions pick it on; any other pass compiles them to a trap.\n";
  for (size_t i = 0; i < variants.size(); ++i) {
    std::string picked = ruleOf(variants[i].arch).deviceFits;
    for (size_t j = i + 1; j < variants.size(); ++j)
      picked += std::string(" && !(") + ruleOf(variants[j].arch).deviceFits + ")";
    os << "#if defined(__CUDA_ARCH__) && !(" << picked << ")\n"
       << "#define " << skipMacro(variants[i].arch) << " 1\n#else\n"
       << "#define " << skipMacro(variants[i].arch) << " 0\n#endif\n";
  }
  os << "\n// 1 in the code a device runs when it compiled the variant (a file built without\n"
     << "// the variant's -gencode traps there): the host functions check it before picking.\n";
  for (const Variant &v : variants)
    os << "static __device__ int " << builtFlag(v.arch) << " = !" << skipMacro(v.arch) << ";\n"
       << "static sketch::PerDevice " << builtFlag(v.arch) << "_cache;\n";
  os << "\n";
}

/// Wraps the body of every __global__ function of `code` (written by CudaWriter:
/// the body opens at the end of a line and closes with a `}` at column 0) in the
/// variant's skip macro.
std::string guardKernelBodies(StringRef code, StringRef arch) {
  SmallVector<StringRef> lines;
  code.split(lines, '\n');
  std::string out;
  enum { Outside, Signature, Body } state = Outside;
  for (StringRef line : lines) {
    if (state == Outside && line.starts_with("__global__"))
      state = Signature;
    if (state == Body && line == "}") {
      out += "#endif\n";
      state = Outside;
    }
    out += line.str() + "\n";
    StringRef trimmed = line.rtrim();
    if (state == Signature && trimmed.ends_with(";"))
      state = Outside; // a declaration
    else if (state == Signature && trimmed.ends_with("{")) {
      out += "#if " + skipMacro(arch) + "\n  __trap();\n#else\n";
      state = Body;
    }
  }
  out.pop_back(); // split gave one line after the last '\n'
  return out;
}

/// The public host function: the variant for the device it runs on.
void writeDispatch(CudaWriter &w, const KernelSignature &sig, ArrayRef<Variant> variants) {
  std::vector<std::string> archs;
  for (const Variant &v : variants)
    archs.push_back(v.arch);
  w.comment(sig.name + ": " + dispatchRule(archs));
  CudaWriter::Block fn(w, hostPrototype(sig));
  w.line("const int capability = sketch::compute_capability();  // read once a device");
  std::string args = kernelArgumentList(sig);
  for (const Variant &v : llvm::reverse(variants))
    w.line(std::string("if (") + ruleOf(v.arch).hostFits + " && sketch::variant_built(&" +
           builtFlag(v.arch) + ", " + builtFlag(v.arch) + "_cache)) return " + sig.name + "_" +
           suffixOf(v.arch) + "(" + args + (args.empty() ? "" : ", ") + "stream);");
  w.line("return cudaErrorNoKernelImageForDevice;  // no listed architecture runs here");
}

} // namespace

ArrayRef<const char *> supportedArchs() {
  static const char *names[] = {kArchs[0].name, kArchs[1].name, kArchs[2].name};
  return names;
}

std::vector<std::string> defaultArchs() { return {"sm_80", "sm_90a"}; }

std::vector<std::string> normalizeArchs(ArrayRef<std::string> names, std::string &error) {
  for (const std::string &name : names)
    if (!llvm::is_contained(supportedArchs(), StringRef(name))) {
      error = "unknown architecture '" + name + "' in --arch: expected a comma-separated list of " +
              "sm_80, sm_90, sm_90a";
      return {};
    }
  std::vector<std::string> archs;
  for (const char *arch : supportedArchs())
    if (llvm::is_contained(names, arch))
      archs.push_back(arch);
  return archs;
}

std::string dispatchRule(ArrayRef<std::string> archs) {
  std::string rule = "the most specific variant that runs on the device and that its code compiled: ";
  for (size_t i = archs.size(); i-- > 0;)
    rule += archs[i] + " on " + ruleOf(archs[i]).devices + (i ? "; " : "");
  return rule + "; otherwise cudaErrorNoKernelImageForDevice";
}

void markVariant(ModuleOp module, StringRef arch) {
  MLIRContext *context = module.getContext();
  for (auto kernel : module.getOps<KernelOp>()) {
    kernel->setAttr(kVariantOfAttr, StringAttr::get(context, kernel.getSymName()));
    kernel.setSymName((kernel.getSymName() + "_" + suffixOf(arch)).str());
  }
}

LogicalResult emitCudaVariants(ArrayRef<Variant> variants, const CudaEmitOptions &options,
                               llvm::raw_ostream &cu, llvm::raw_ostream &header) {
  std::string bodies;
  std::vector<KernelSignature> publicSigs;
  // The dispatching host functions take the kernels' own names (NAME), the variants theirs
  // (NAME_sm80, ...): a kernel named like another's variant cannot share the file.
  FileScopeNames names;
  if (!variants.empty())
    for (auto kernel : ModuleOp(variants.front().module).getOps<KernelOp>()) {
      auto variantOf = kernel->getAttrOfType<mlir::StringAttr>(kVariantOfAttr);
      StringRef name = variantOf ? variantOf.getValue() : kernel.getSymName();
      if (failed(names.claim(name, name, kernel)))
        return failure();
    }
  for (const Variant &v : variants) {
    CudaEmitOptions variantOptions = options;
    variantOptions.arch = v.arch;
    std::string body;
    llvm::raw_string_ostream bodyStream(body);
    FailureOr<std::vector<KernelSignature>> sigs =
        emitKernels(v.module, variantOptions, bodyStream, &names);
    if (failed(sigs))
      return failure();
    bodies += "// ===== variant " + v.arch + " =====\n" + guardKernelBodies(body, v.arch) + "\n";
    if (publicSigs.empty())
      for (KernelSignature sig : *sigs) {
        sig.name = sig.variantOf;
        sig.exported = true;
        publicSigs.push_back(std::move(sig));
      }
  }
  std::vector<std::string> archs;
  for (const Variant &v : variants)
    archs.push_back(v.arch);
  writeCudaPrologue(cu, archs, options.headerName, publicSigs);
  writeSkipMacros(cu, variants);
  // A variant's kernel bodies are compiled out in the other architectures' passes, which
  // leaves the plan constants they use unreferenced there (nvcc's unused-variable warning,
  // #177). Each architecture alone compiles with the warning on (check_ptxas.sh).
  cu << "#pragma nv_diag_suppress 177 // unused: the plan constants of compiled-out kernels\n"
     << bodies << "#pragma nv_diag_default 177\n\n";
  CudaWriter w(cu);
  for (const KernelSignature &sig : publicSigs) {
    writeDispatch(w, sig, variants);
    w.line();
  }
  emitHeader(header, publicSigs, llvm::join(archs, ", "));
  return success();
}

} // namespace sketch
