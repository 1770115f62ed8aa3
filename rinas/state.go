package rinas

import (
	"encoding/json"
	"fmt"
	"slices"
)

// RowRef names one row: a global page number (of the loaded column) and
// the row's index among the rows that start in that page.
type RowRef struct {
	Page uint64 `json:"p"`
	Row  uint32 `json:"r"`
	// Tok counts the row's tokens already delivered (tokens output: a
	// document split across batches).
	Tok uint32 `json:"t,omitempty"`
}

// State is a loader checkpoint: small, serializable (JSON), and exact.
//
// The epoch's units (pages; rows in row mode; row groups in rowgroup mode)
// are ordered by a seeded permutation; the units of rank Rank of World are
// the positions Start+Rank, Start+Rank+World, ... (index/perm). Done counts
// the units of that shard already taken in; Exclude lists global positions
// at or beyond the shard's Done-th that were taken in too (units of a batch
// that landed first, or of faster ranks after Reshard); Pending lists rows
// taken in but not yet handed to the consumer (the shuffle buffer, in its
// order, or the rest of a page), and RNG is the shuffle buffer's generator.
// Resuming re-reads the Pending rows' pages first, so every row is
// delivered exactly once across the checkpoint.
type State struct {
	Version int    `json:"version"`
	Dataset string `json:"dataset"` // fingerprint of the files and projection
	// Columns is the projection and Lead the column whose pages defined
	// the units (several columns only).
	Columns  []string `json:"columns,omitempty"`
	Lead     string   `json:"lead,omitempty"`
	Shuffle  string   `json:"shuffle"`
	Seed     uint64   `json:"seed"`
	Epoch    uint64   `json:"epoch"`
	Start    uint64   `json:"start"`
	Rank     int      `json:"rank"`
	World    int      `json:"world"`
	Done     uint64   `json:"done"`
	Exclude  []uint64 `json:"exclude,omitempty"`
	Pending  []RowRef `json:"pending,omitempty"`
	RNG      uint64   `json:"rng"`
	EpochEnd bool     `json:"epoch_end,omitempty"` // the epoch is finished
}

const stateVersion = 1

// MarshalState encodes s as JSON.
func MarshalState(s *State) ([]byte, error) { return json.Marshal(s) }

// UnmarshalState decodes a State written by MarshalState.
func UnmarshalState(b []byte) (*State, error) {
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrState, err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrState, s.Version, stateVersion)
	}
	return &s, nil
}

// consumed reports whether global position pos is taken in by the state's
// rank: below its Done-th shard position, or excluded.
func (s *State) consumed(pos uint64) bool {
	if pos < s.Start || (pos-s.Start)%uint64(s.World) != uint64(s.Rank) {
		return false
	}
	if (pos-s.Start)/uint64(s.World) < s.Done {
		return true
	}
	_, found := slices.BinarySearch(s.Exclude, pos)
	return found
}

// Reshard turns the states of every rank of one world (taken at the same
// step or not) into states for a world of world ranks that together deliver
// exactly the rows not yet delivered: the new shards start at the first
// position no rank has taken in, positions beyond it that some rank took in
// are excluded, and the pending rows are dealt out round-robin.
func Reshard(states []*State, world int) ([]*State, error) {
	if len(states) == 0 || world < 1 {
		return nil, fmt.Errorf("%w: reshard %d states to world %d", ErrState, len(states), world)
	}
	s0 := states[0]
	if len(states) != s0.World {
		return nil, fmt.Errorf("%w: %d states for a world of %d", ErrState, len(states), s0.World)
	}
	byRank := make([]*State, s0.World)
	for _, s := range states {
		if s.Dataset != s0.Dataset || s.Seed != s0.Seed || s.Epoch != s0.Epoch || s.Start != s0.Start ||
			s.World != s0.World || s.Shuffle != s0.Shuffle || s.EpochEnd != s0.EpochEnd {
			return nil, fmt.Errorf("%w: states of different runs or epochs", ErrState)
		}
		if s.Rank < 0 || s.Rank >= s.World || byRank[s.Rank] != nil {
			return nil, fmt.Errorf("%w: rank %d missing or twice", ErrState, s.Rank)
		}
		byRank[s.Rank] = s
	}
	// The first position not taken in by its owner.
	start := ^uint64(0)
	for r, s := range byRank {
		start = min(start, s.Start+s.Done*uint64(s.World)+uint64(r))
	}
	var exclude []uint64
	var pending []RowRef
	for _, s := range byRank {
		for _, p := range s.Exclude {
			if p >= start {
				exclude = append(exclude, p)
			}
		}
		pending = append(pending, s.Pending...)
	}
	// Positions below a rank's Done but at or beyond start were taken in.
	for r, s := range byRank {
		for j := uint64(0); j < s.Done; j++ {
			p := s.Start + j*uint64(s.World) + uint64(r)
			if p >= start {
				exclude = append(exclude, p)
			}
		}
	}
	slices.Sort(exclude)
	exclude = slices.Compact(exclude)
	out := make([]*State, world)
	for r := range out {
		ns := &State{Version: stateVersion, Dataset: s0.Dataset, Columns: s0.Columns, Lead: s0.Lead, Shuffle: s0.Shuffle, Seed: s0.Seed,
			Epoch: s0.Epoch, Start: start, Rank: r, World: world, EpochEnd: s0.EpochEnd,
			RNG: s0.RNG ^ (0x9e3779b97f4a7c15 * uint64(r+1))}
		for _, p := range exclude {
			if (p-start)%uint64(world) == uint64(r) {
				ns.Exclude = append(ns.Exclude, p)
			}
		}
		for i := r; i < len(pending); i += world {
			ns.Pending = append(ns.Pending, pending[i])
		}
		out[r] = ns
	}
	return out, nil
}
