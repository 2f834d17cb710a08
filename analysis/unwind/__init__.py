"""DWARF unwinding of `--call-graph dwarf` samples: the stack copies the importer keeps
(`user_stacks`), the unwind tables built from the binaries' call frame information
(`cfi`), the walk over one stack copy (`walker`) and the pass that gives every such
sample its callers (`unwind_pass`)."""
