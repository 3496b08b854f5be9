// Package archtest holds no code: its tests hold the module's structure to the design. The
// decision core (config, fleet, plan, sim) links no package that talks to the outside, the
// exporter links nothing of the scaler, and no package imports one above it in the layering
// of ARCHITECTURE: config and fleet at the bottom, then the planner, then the executor and
// the adapters, then the loop and the API, then the binaries. They also hold make mutate's list
// (scripts/mutants.txt) to the tree: each mutant's line and test are still there.
package archtest
