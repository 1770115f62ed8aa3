package rinas

import (
	"fmt"

	"github.com/pagefeed/pagefeed/pin"
)

// PinOptions places the loader's engine workers on the CPU cores next to
// this rank's GPU (package pin). The group is picked by LocalRank, which
// defaults to $LOCAL_RANK; the number of local ranks is $LOCAL_WORLD_SIZE,
// else one per GPU (or NUMA node).
type PinOptions struct {
	Enable bool
	// Sysfs is the sysfs root to read; default "/sys".
	Sysfs string
	// Ranks overrides the number of local ranks.
	Ranks int
	// ReserveTrainer is pin.Options.ReserveTrainer (default: one core per
	// node stays for the trainer).
	ReserveTrainer int
}

// planCPUs returns the CPU set of this loader's local rank, or nil when
// pinning is off. Every worker of the engine is pinned to the whole set.
func (l *Loader) planCPUs() ([]int, error) {
	p := l.cfg.Pin
	if !p.Enable {
		return nil, nil
	}
	root := p.Sysfs
	if root == "" {
		root = pin.DefaultRoot
	}
	topo, err := pin.Discover(root)
	if err != nil {
		return nil, fmt.Errorf("rinas: pin: %w", err)
	}
	ranks := p.Ranks
	if ranks == 0 {
		if ranks, err = pin.LocalWorldSizeFromEnv(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	plan, err := pin.NewPlan(topo, pin.Options{Ranks: ranks, ReserveTrainer: p.ReserveTrainer})
	if err != nil {
		return nil, fmt.Errorf("rinas: pin: %w", err)
	}
	for _, w := range append(topo.Warnings, plan.Warnings...) {
		l.cfg.Logf("pin: %s", w)
	}
	g, err := plan.ForLocalRank(l.cfg.LocalRank)
	if err != nil {
		return nil, fmt.Errorf("%w: pin: %v", ErrConfig, err)
	}
	return g.CPUs, nil
}

// CPUs returns the CPUs the engine workers are pinned to (nil: not pinned).
func (l *Loader) CPUs() []int { return l.cpus }
