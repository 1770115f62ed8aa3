package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/pagefeed/pagefeed/rinas"
)

// jsonConfig is the JSON form of rinas.Config that pf_open takes: the
// fields a training script sets, in snake_case, with enums as their names.
// An unknown key is a config error, so a misspelt option never silently
// takes its default. Fields left out take rinas's defaults; "resume" is a
// state as pf_state returns it.
type jsonConfig struct {
	Paths         []string        `json:"paths"`
	Columns       []string        `json:"columns"`
	Shuffle       string          `json:"shuffle"` // page|row|rowgroup|stream|none
	BatchPages    int             `json:"batch_pages"`
	BatchRows     int             `json:"batch_rows"`
	BufferRows    int             `json:"buffer_rows"`
	Fetch         string          `json:"fetch"` // unordered|ordered
	Prefetch      int             `json:"prefetch"`
	Seed          uint64          `json:"seed"`
	Epoch         uint64          `json:"epoch"`
	Epochs        int             `json:"epochs"`
	Rank          int             `json:"rank"`
	World         int             `json:"world"` // 0: $RANK, $WORLD_SIZE, $LOCAL_RANK
	LocalRank     int             `json:"local_rank"`
	DropLast      bool            `json:"drop_last"`
	PadLast       bool            `json:"pad_last"`
	KeepUneven    bool            `json:"keep_uneven"`
	Deterministic bool            `json:"deterministic"`
	Output        string          `json:"output"`       // arrow|tokens
	TokensDtype   string          `json:"tokens_dtype"` // int32 (default)|int64
	PositionIDs   bool            `json:"position_ids"`
	CuSeqlens     bool            `json:"cu_seqlens"`
	LossMask      bool            `json:"loss_mask"`
	SeqLen        int             `json:"seq_len"`
	EOS           *int32          `json:"eos"` // given: used as is, 0 included
	Pad           *int32          `json:"pad"`
	Truncate      bool            `json:"truncate"`
	MemoryLimit   int64           `json:"memory_limit"`
	IODepth       int             `json:"iodepth"`
	SkipBadPages  bool            `json:"skip_bad_pages"`
	IOMode        rinas.IOMode    `json:"io_mode"` // auto|direct|buffered
	Resume        json.RawMessage `json:"resume"`
}

// extras says which of a tokens batch's per-token arrays the descriptor
// carries. The loader derives all three for every tokens batch; the keys
// only choose what a caller sees, so that one that asks for none gets
// NULL pointers rather than arrays it did not expect.
type extras struct {
	positionIDs, cuSeqlens, lossMask bool
}

// parseConfig turns pf_open's JSON into a rinas.Config and the
// descriptor extras it asks for. Every error wraps rinas.ErrConfig
// (rinas.ErrState for a bad "resume"). tokens_dtype "int64" and the
// extras need output "tokens": asked of arrow output they are config
// errors, not silently ignored.
func parseConfig(b []byte) (rinas.Config, extras, error) {
	var j jsonConfig
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&j); err != nil {
		return rinas.Config{}, extras{}, fmt.Errorf("%w: %v", rinas.ErrConfig, err)
	}
	if d.More() {
		return rinas.Config{}, extras{}, fmt.Errorf("%w: data after the config object", rinas.ErrConfig)
	}
	c, err := toConfig(&j)
	if err != nil {
		return c, extras{}, err
	}
	x := extras{positionIDs: j.PositionIDs, cuSeqlens: j.CuSeqlens, lossMask: j.LossMask}
	switch j.TokensDtype {
	case "", "int32":
	case "int64":
		c.Tokens64 = true
	default:
		return c, x, fmt.Errorf("%w: tokens_dtype %q: want \"int32\" or \"int64\"", rinas.ErrConfig, j.TokensDtype)
	}
	if c.Output != rinas.OutputTokens {
		for _, k := range []struct {
			name string
			set  bool
		}{{"tokens_dtype \"int64\"", c.Tokens64}, {"position_ids", x.positionIDs}, {"cu_seqlens", x.cuSeqlens}, {"loss_mask", x.lossMask}} {
			if k.set {
				return c, x, fmt.Errorf("%w: %s needs output \"tokens\"", rinas.ErrConfig, k.name)
			}
		}
	}
	return c, x, nil
}

// toConfig maps the JSON fields onto a rinas.Config (all but the tokens
// options, which parseConfig adds).
func toConfig(j *jsonConfig) (rinas.Config, error) {
	c := rinas.Config{
		Paths: j.Paths, Columns: j.Columns, BatchPages: j.BatchPages, BatchRows: j.BatchRows,
		BufferRows: j.BufferRows, Prefetch: j.Prefetch, Seed: j.Seed, Epoch: j.Epoch, Epochs: j.Epochs,
		Rank: j.Rank, World: j.World, LocalRank: j.LocalRank, DropLast: j.DropLast, PadLast: j.PadLast,
		KeepUneven: j.KeepUneven, Deterministic: j.Deterministic, SeqLen: j.SeqLen, Truncate: j.Truncate,
		MemoryLimit: j.MemoryLimit, IODepth: j.IODepth, SkipBadPages: j.SkipBadPages, IOMode: j.IOMode,
	}
	if j.EOS != nil {
		c.EOS, c.ExplicitEOS = *j.EOS, true
	}
	if j.Pad != nil {
		c.Pad, c.ExplicitPad = *j.Pad, true
	}
	var err error
	if j.Shuffle != "" {
		if c.Shuffle, err = rinas.ParseShuffle(j.Shuffle); err != nil {
			return c, err
		}
	}
	if j.Fetch != "" {
		if c.Fetch, err = rinas.ParseFetch(j.Fetch); err != nil {
			return c, err
		}
	}
	if j.Output != "" {
		if c.Output, err = rinas.ParseOutput(j.Output); err != nil {
			return c, err
		}
	}
	if len(j.Resume) > 0 && !bytes.Equal(bytes.TrimSpace(j.Resume), []byte("null")) {
		if c.Resume, err = rinas.UnmarshalState(j.Resume); err != nil {
			return c, err
		}
	}
	return c, nil
}
