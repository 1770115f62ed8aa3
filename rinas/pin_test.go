package rinas

import (
	"context"
	"runtime"
	"slices"
	"testing"

	"github.com/pagefeed/pagefeed/pin"
)

func TestPinPlacesWorkersOnTheRankGroup(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	topo, err := pin.Discover(pin.DefaultRoot)
	if err != nil {
		t.Skipf("no sysfs topology here: %v", err)
	}
	plan, err := pin.NewPlan(topo, pin.Options{Ranks: 1})
	if err != nil {
		t.Skipf("no plan on this machine: %v", err)
	}
	want := plan.Groups[0].CPUs
	ds := testDataset(t, "v2")
	cfg := baseConfig(ds, "id")
	cfg.Pin = PinOptions{Enable: true, Ranks: 1}
	l := openT(t, cfg)
	if !slices.Equal(l.CPUs(), want) {
		t.Fatalf("workers pinned to %v, plan says %v", l.CPUs(), want)
	}
	ids, _, _ := drain(t, l, -1)
	checkExactlyOnce(t, ids, ds.rows)

	bad := baseConfig(ds, "id")
	bad.Pin = PinOptions{Enable: true, Ranks: 1}
	bad.World, bad.LocalRank = 1, 3
	if l, err := Open(context.Background(), bad); err == nil {
		l.Close()
		t.Fatal("local rank 3 of a 1-rank plan accepted")
	}
}
