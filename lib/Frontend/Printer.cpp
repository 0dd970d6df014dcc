// TEMPORARY STUB
#include "lib/Frontend/Printer.h"
void sketch::printSketch(mlir::ModuleOp, llvm::raw_ostream &) {}
