//===- EmitApi.cpp - the host API as JSON ---------------------------------===//
//
// `sketchc --emit=api` describes the host function of every kernel for
// callers that bind it from another language (python/sketch): each
// parameter in order (tensor dtype, dims, layout, whether the kernel reads
// and writes it, the pointer alignment it needs; scalar type), the size
// symbols the function takes, the sizes bound at compile time or derived
// from others, and the conditions its host function checks. The kernels are
// generated (and their errors reported) exactly as for --emit=cuda. For several
// architectures, what any variant needs: the largest alignment, every condition.
//
//===----------------------------------------------------------------------===//
#include "lib/Emit/CudaEmitter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"

using namespace mlir;

namespace sketch {

namespace {

llvm::StringRef dtypeName(ElementType type) {
  return type == ElementType::f16 ? "f16" : type == ElementType::bf16 ? "bf16" : "f32";
}

int64_t elementBytes(ElementType type) { return type == ElementType::f32 ? 4 : 2; }

llvm::StringRef accessName(const ParamInfo &param) {
  if (param.written)
    return param.read ? "readwrite" : "write";
  return "read";
}

void writeParam(llvm::json::OStream &json, const ParamInfo &param) {
  json.object([&] {
    json.attribute("name", param.name);
    if (!param.isTensor) {
      json.attribute("kind", "scalar");
      json.attribute("dtype", param.scalar == ScalarKind::i32 ? "i32" : "f32");
      return;
    }
    json.attribute("kind", "tensor");
    json.attribute("dtype", dtypeName(param.type));
    json.attributeArray("dims", [&] {
      for (const std::string &dim : param.dims)
        json.value(dim);
    });
    if (param.layout)
      json.attribute("layout", stringifyLayout(*param.layout));
    json.attribute("access", accessName(param));
    json.attribute("alignment", std::max(param.alignment, elementBytes(param.type)));
  });
}

/// Output sizes the kernel derives from others (convolutions): symbol -> expression.
void writeDerived(llvm::json::OStream &json, KernelOp kernel) {
  json.attributeObject("derived", [&] {
    if (auto derived = kernel->getAttrOfType<DictionaryAttr>("sketch.derived"))
      for (NamedAttribute entry : derived)
        if (auto text = dyn_cast<StringAttr>(entry.getValue()))
          json.attribute(entry.getName().getValue(), text.getValue());
  });
}

void writeKernel(llvm::json::OStream &json, const KernelSignature &sig, KernelOp kernel) {
  json.object([&] {
    json.attribute("name", sig.name);
    json.attributeArray("params", [&] {
      for (const ParamInfo &param : sig.params)
        writeParam(json, param);
    });
    json.attributeArray("size_symbols", [&] {
      for (const std::string &symbol : sig.sizeSymbols)
        json.value(symbol);
    });
    json.attributeObject("bound", [&] {
      // StringMap iterates in hash order: sorted keys keep the output deterministic.
      std::vector<std::string> names;
      for (const auto &entry : sig.bound)
        names.push_back(entry.getKey().str());
      llvm::sort(names);
      for (const std::string &name : names)
        json.attribute(name, sig.bound.lookup(name));
    });
    writeDerived(json, kernel);
    json.attributeArray("requires", [&] {
      for (const HostRequirement &requirement : sig.requirements)
        json.object([&] {
          json.attribute("condition", requirement.condition);
          json.attribute("reason", requirement.reason);
        });
    });
  });
}

/// One variant's signatures folded into `merged` (the first variant's): each parameter's
/// alignment the largest any variant needs, each condition any variant checks.
void mergeVariant(std::vector<KernelSignature> &merged, const std::vector<KernelSignature> &sigs) {
  for (auto [into, sig] : llvm::zip(merged, sigs)) {
    for (auto [param, other] : llvm::zip(into.params, sig.params))
      param.alignment = std::max(param.alignment, other.alignment);
    for (const HostRequirement &requirement : sig.requirements)
      if (llvm::none_of(into.requirements, [&](const HostRequirement &known) {
            return known.condition == requirement.condition;
          }))
        into.requirements.push_back(requirement);
  }
}

} // namespace

LogicalResult emitApi(ArrayRef<ModuleOp> modules, ArrayRef<std::string> archs,
                      const CudaEmitOptions &options, llvm::raw_ostream &os) {
  std::vector<KernelSignature> merged;
  for (auto [module, arch] : llvm::zip(modules, archs)) {
    CudaEmitOptions variantOptions = options;
    variantOptions.arch = arch;
    std::string body;
    llvm::raw_string_ostream discarded(body);
    FailureOr<std::vector<KernelSignature>> sigs = emitKernels(module, variantOptions, discarded);
    if (failed(sigs))
      return failure();
    if (merged.empty())
      merged = std::move(*sigs);
    else
      mergeVariant(merged, *sigs);
  }
  llvm::json::OStream json(os, 2);
  json.object([&] {
    json.attribute("arch", llvm::join(archs, ","));
    json.attributeArray("kernels", [&] {
      for (const KernelSignature &sig : merged)
        writeKernel(json, sig, ModuleOp(modules.front()).lookupSymbol<KernelOp>(sig.name));
    });
  });
  os << "\n";
  return success();
}

} // namespace sketch
