package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/pagefeed/pagefeed/pin"
)

func init() {
	register("topo", "show CPUs, NUMA nodes, GPUs, NVMe and the per-rank core plan", runTopo)
}

// runTopo prints the machine's topology as pin discovers it under --sysfs
// and the plan pin makes for --ranks local ranks: as text, or with --json
// as one line holding one object {"cpus_online","numa","gpus","nvme",
// "plan"}. In JSON mode warnings go to stderr so stdout stays one
// parseable document.
func runTopo(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("topo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("sysfs", pin.DefaultRoot, "sysfs `root` to read (a fixture tree for tests)")
	ranks := fs.Int("ranks", 0, "local ranks to plan for; 0: one per GPU, or per NUMA node without GPUs")
	reserve := fs.Int("reserve", 1, "cores per NUMA node kept for the trainer; 0 keeps none")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: pagefeed topo [--sysfs ROOT] [--ranks N] [--reserve N] [--json]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *ranks < 0 || *reserve < 0 {
		return fmt.Errorf("--ranks and --reserve must not be negative")
	}
	opts := pin.Options{Ranks: *ranks, ReserveTrainer: *reserve}
	if *reserve == 0 {
		opts.ReserveTrainer = -1 // pin's zero means its default
	}
	topo, err := pin.Discover(*root)
	if err != nil {
		return err
	}
	plan, err := pin.NewPlan(topo, opts)
	if err != nil {
		return err
	}
	if !*asJSON {
		return pin.WriteText(stdout, topo, plan)
	}
	for _, w := range append(topo.Warnings, plan.Warnings...) {
		fmt.Fprintf(stderr, "pagefeed topo: warning: %s\n", w)
	}
	// One line: a 224-CPU list indented one number per line helps nobody.
	return json.NewEncoder(stdout).Encode(pin.NewReport(topo, plan))
}
