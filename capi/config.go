package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/pagefeed/pagefeed/rinas"
)

// jsonConfig is the JSON form of rinas.Config that pf_open takes: the
// fields a training script sets, in snake_case, with enums as their names.
// An unknown key is a config error, so a misspelt option never silently
// takes its default. Fields left out take rinas's defaults; "resume" is a
// state as pf_state returns it.
type jsonConfig struct {
	Paths   []string `json:"paths"`
	Columns []string `json:"columns"`
	Shuffle string   `json:"shuffle"` // page|row|rowgroup|stream|none
	// Pointers: keys whose 0 rinas reads as "the default" are refused
	// when given as 0, so that a 0 never silently becomes another value.
	BatchPages    *int            `json:"batch_pages"`
	BatchRows     int             `json:"batch_rows"`
	BufferRows    *int            `json:"buffer_rows"`
	Fetch         string          `json:"fetch"` // unordered|ordered
	Prefetch      int             `json:"prefetch"`
	Seed          uint64          `json:"seed"`
	Epoch         uint64          `json:"epoch"`
	Epochs        *int            `json:"epochs"`
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
	SeqLen        *int            `json:"seq_len"`
	EOS           *int32          `json:"eos"` // given: used as is, 0 included
	Pad           *int32          `json:"pad"`
	Truncate      bool            `json:"truncate"`
	MemoryLimit   *int64          `json:"memory_limit"`
	IODepth       int             `json:"iodepth"`
	SkipBadPages  bool            `json:"skip_bad_pages"`
	IOMode        rinas.IOMode    `json:"io_mode"` // auto|direct|buffered
	Resume        json.RawMessage `json:"resume"`
	// sources (instead of paths): a weighted mixture of datasets, each
	// {"paths", "name", "weight" | "repeat" | "choose", "columns"};
	// epoch_size its epoch in rows (tokens output: tokens).
	Sources   []jsonSource `json:"sources"`
	EpochSize *int64       `json:"epoch_size"`
}

// jsonSource is one source of a mixture. Pointers: a weight given as 0
// is a weight (the source is not read), not a weight left out.
type jsonSource struct {
	Name    string   `json:"name"`
	Paths   []string `json:"paths"`
	Weight  *float64 `json:"weight"`
	Repeat  *float64 `json:"repeat"`
	Choose  *int64   `json:"choose"`
	Columns []string `json:"columns"`
}

// toSources maps the JSON sources onto rinas.Sources. Weights given to
// some sources and not others, or all zero, are config errors naming the
// sources (rinas cannot tell a 0 given from one left out).
func toSources(j *jsonConfig) ([]rinas.Source, error) {
	var out []rinas.Source
	var names []string
	weighted := 0
	nonzero := false
	for i, s := range j.Sources {
		name := s.Name
		if name == "" && len(s.Paths) > 0 {
			name = s.Paths[0]
		}
		names = append(names, name)
		r := rinas.Source{Name: s.Name, Paths: s.Paths, Columns: s.Columns}
		if s.Weight != nil {
			weighted++
			r.Weight = *s.Weight
			if r.Weight != 0 {
				nonzero = true
			}
			if r.Weight == 0 && (s.Repeat != nil || s.Choose != nil) {
				return nil, fmt.Errorf("%w: source %q sets weight with repeat or choose: give one kind", rinas.ErrConfig, name)
			}
		}
		if s.Repeat != nil {
			r.Repeat = *s.Repeat
			if r.Repeat == 0 {
				return nil, fmt.Errorf("%w: source %q: repeat 0 (leave the source out)", rinas.ErrConfig, name)
			}
		}
		if s.Choose != nil {
			r.Choose = *s.Choose
			if r.Choose == 0 {
				return nil, fmt.Errorf("%w: source %q: choose 0 (leave the source out)", rinas.ErrConfig, name)
			}
		}
		if weighted > 0 && weighted != i+1 {
			return nil, fmt.Errorf("%w: source %q has no weight where source %q has one: give every source a weight, or none", rinas.ErrConfig, name, j.Sources[0].Name)
		}
		out = append(out, r)
	}
	if weighted > 0 && weighted != len(j.Sources) {
		return nil, fmt.Errorf("%w: %d of %d sources have a weight: give every source a weight, or none", rinas.ErrConfig, weighted, len(j.Sources))
	}
	if weighted > 0 && !nonzero {
		return nil, fmt.Errorf("%w: the weights of all %d sources are zero (sources %q): give one a weight above 0", rinas.ErrConfig, len(j.Sources), names)
	}
	return out, nil
}

// Ranges of the integer keys, checked before rinas sees them. Where rinas
// reads 0 as its default, a 0 given is refused (leave the key out).
const (
	maxWorld     = 1 << 20 // ranks (times DataLoader workers) of one job
	maxBatchRows = 1 << 24
	maxRows      = 1<<31 - 1 // buffer_rows
	maxSeqLen    = 1 << 24
	maxEpochs    = 1<<31 - 1
)

// checkRange returns a config error naming key unless lo <= v <= hi.
func checkRange(key string, v, lo, hi int64, note string) error {
	if v < lo || v > hi {
		return fmt.Errorf("%w: %s %d: want %d..%d%s", rinas.ErrConfig, key, v, lo, hi, note)
	}
	return nil
}

// checkRanges checks every integer key of j.
func checkRanges(j *jsonConfig) error {
	const dflt = " (leave the key out for the default)"
	type rng struct {
		key    string
		v      *int64
		lo, hi int64
		note   string
	}
	opt := func(p *int) *int64 {
		if p == nil {
			return nil
		}
		v := int64(*p)
		return &v
	}
	val := func(v int) *int64 { x := int64(v); return &x }
	world := int64(j.World)
	rankHi := max(world-1, 0)
	if j.World == 0 {
		rankHi = 0 // world 0 takes rank and world from the environment
	}
	for _, r := range []rng{
		{"batch_pages", opt(j.BatchPages), 1, 1 << 16, dflt},
		{"batch_rows", val(j.BatchRows), 0, maxBatchRows, " (0: one batch per batch_pages pages)"},
		{"buffer_rows", opt(j.BufferRows), 0, maxRows, " (0: no shuffle buffer; leave the key out for the default)"},
		{"prefetch", val(j.Prefetch), 0, 1 << 16, " (0: chosen at open)"},
		{"epochs", opt(j.Epochs), 1, maxEpochs, dflt},
		{"world", &world, 0, maxWorld, " (0: from $WORLD_SIZE)"},
		{"rank", val(j.Rank), 0, rankHi, fmt.Sprintf(" (of world %d)", j.World)},
		{"local_rank", val(j.LocalRank), 0, maxWorld - 1, ""},
		{"seq_len", opt(j.SeqLen), 1, maxSeqLen, dflt},
		{"memory_limit", j.MemoryLimit, 1, 1<<63 - 1, " bytes" + dflt},
		{"iodepth", val(j.IODepth), 0, 1 << 16, " (0: the engine's default)"},
	} {
		if r.v == nil {
			continue
		}
		if err := checkRange(r.key, *r.v, r.lo, r.hi, r.note); err != nil {
			return err
		}
	}
	if j.Epochs != nil && j.Epoch > math.MaxUint64-uint64(*j.Epochs) {
		return fmt.Errorf("%w: epoch %d + epochs %d: past the last epoch number", rinas.ErrConfig, j.Epoch, *j.Epochs)
	}
	if j.BufferRows != nil && *j.BufferRows == 0 && strings.EqualFold(j.Shuffle, "stream") {
		return fmt.Errorf("%w: buffer_rows 0: shuffle \"stream\" needs a buffer (1..%d; leave the key out for 8192)", rinas.ErrConfig, maxRows)
	}
	return nil
}

// jsonErr turns a decoding error into a config error that names the key
// or the offset and says what was expected.
func jsonErr(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		want := te.Type.String()
		switch te.Type.Kind() {
		case reflect.Int, reflect.Int32, reflect.Int64:
			want = fmt.Sprintf("an integer in %d..%d", int64(math.MinInt64)>>(64-te.Type.Bits()), int64(math.MaxInt64)>>(64-te.Type.Bits()))
		case reflect.Uint64:
			want = "an integer in 0..18446744073709551615"
		case reflect.Bool:
			want = "true or false"
		case reflect.Slice:
			want = "a list of strings"
		}
		key := te.Field
		if key == "" {
			key = "config"
		}
		return fmt.Errorf("%w: %s: %s is not %s", rinas.ErrConfig, key, te.Value, want)
	case errors.As(err, &se):
		return fmt.Errorf("%w: config JSON at offset %d: %v", rinas.ErrConfig, se.Offset, err)
	}
	return fmt.Errorf("%w: %v", rinas.ErrConfig, err)
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
		return rinas.Config{}, extras{}, jsonErr(err)
	}
	if d.More() {
		return rinas.Config{}, extras{}, fmt.Errorf("%w: data after the config object", rinas.ErrConfig)
	}
	if err := checkRanges(&j); err != nil {
		return rinas.Config{}, extras{}, err
	}
	if err := checkProjections(&j); err != nil {
		return rinas.Config{}, extras{}, err
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

// checkProjections refuses "columns": [] (of the config or of a source):
// an empty projection is no projection rinas can read, and reading it as
// "left out" would silently deliver another set of columns than asked.
// null, like the key left out, takes the default.
func checkProjections(j *jsonConfig) error {
	if j.Columns != nil && len(j.Columns) == 0 {
		return fmt.Errorf("%w: columns: an empty projection: name at least one column, or leave the key out for the default", rinas.ErrConfig)
	}
	for i, s := range j.Sources {
		if s.Columns != nil && len(s.Columns) == 0 {
			return fmt.Errorf("%w: sources[%d].columns: an empty projection: name at least one column, or leave the key out for the source's default", rinas.ErrConfig, i)
		}
	}
	return nil
}

// toConfig maps the JSON fields onto a rinas.Config (all but the tokens
// options, which parseConfig adds).
func toConfig(j *jsonConfig) (rinas.Config, error) {
	c := rinas.Config{
		Paths: j.Paths, Columns: j.Columns, BatchRows: j.BatchRows,
		Prefetch: j.Prefetch, Seed: j.Seed, Epoch: j.Epoch,
		Rank: j.Rank, World: j.World, LocalRank: j.LocalRank, DropLast: j.DropLast, PadLast: j.PadLast,
		KeepUneven: j.KeepUneven, Deterministic: j.Deterministic, Truncate: j.Truncate,
		IODepth: j.IODepth, SkipBadPages: j.SkipBadPages, IOMode: j.IOMode,
	}
	set := func(dst *int, p *int) {
		if p != nil {
			*dst = *p
		}
	}
	set(&c.BatchPages, j.BatchPages)
	set(&c.BufferRows, j.BufferRows)
	if j.BufferRows != nil && *j.BufferRows == 0 {
		// 0 given means no buffer, which rinas spells -1 (its 0 is the
		// default buffer, what leaving the key out asks for).
		c.BufferRows = -1
	}
	set(&c.Epochs, j.Epochs)
	set(&c.SeqLen, j.SeqLen)
	if j.MemoryLimit != nil {
		c.MemoryLimit = *j.MemoryLimit
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
	if len(j.Sources) > 0 {
		if c.Sources, err = toSources(j); err != nil {
			return c, err
		}
	}
	if j.EpochSize != nil {
		if *j.EpochSize <= 0 {
			return c, fmt.Errorf("%w: epoch_size %d: want a positive count (leave the key out for the default)", rinas.ErrConfig, *j.EpochSize)
		}
		c.EpochSize = *j.EpochSize
	}
	if len(j.Resume) > 0 && !bytes.Equal(bytes.TrimSpace(j.Resume), []byte("null")) {
		if c.Resume, err = rinas.UnmarshalState(j.Resume); err != nil {
			return c, err
		}
	}
	return c, nil
}
