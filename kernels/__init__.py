"""The kernel library: one module per kernel family, each declaring its KernelSpecs."""
