// Package pin places each local rank's loader threads on the CPU cores
// next to its GPU.
//
// Discover reads the machine's CPUs, NUMA nodes, GPUs and NVMe
// controllers from sysfs (under a configurable root, so tests run on
// fixture trees); NewPlan gives every local rank a disjoint set of cores
// on its GPU's NUMA node, keeping a core per node for the trainer; Apply
// binds the calling, locked OS thread to such a set. Missing or garbled
// sysfs files never fail discovery: they become warnings and a simpler
// plan. See docs/pin.md for the rules.
//
// pin imports nothing else from pagefeed. Its functions are safe for
// concurrent use; Topology and Plan are plain values owned by the caller.
package pin
