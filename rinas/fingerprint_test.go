package rinas

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCheckpointSurvivesCopy: a checkpoint taken on a dataset resumes on a
// copy of it in another directory and delivers the same remaining rows.
func TestCheckpointSurvivesCopy(t *testing.T) {
	ds := copyDataset(t, manyPages(t))
	cfg := baseConfig(ds, "id")
	cfg.BatchRows, cfg.BufferRows, cfg.Fetch = 64, 100, Ordered
	full, _, states := drain(t, openT(t, cfg), -1)
	k := len(states) / 3
	moved := copyDataset(t, ds)
	if filepath.Dir(moved.paths[0]) == filepath.Dir(ds.paths[0]) {
		t.Fatal("copy in the same directory")
	}
	mcfg := baseConfig(moved, "id")
	mcfg.BatchRows, mcfg.BufferRows, mcfg.Fetch = 64, 100, Ordered
	mcfg.Resume = states[k]
	rest, _, _ := drain(t, openT(t, mcfg), -1)
	head := full[:len(full)-len(rest)]
	if !slices.Equal(append(slices.Clone(head), rest...), full) || len(rest) == 0 {
		t.Fatalf("resumed on the copy: %d rows, not the rest of the run", len(rest))
	}
}

// TestCheckpointRefusesChangedFile: a file whose content changed with its
// size and mtime kept (touch -r) is named when a checkpoint is resumed.
// With a sidecar, the footer hash comes from the footer read at Build,
// not from the sidecar.
func TestCheckpointRefusesChangedFile(t *testing.T) {
	for _, sidecar := range []bool{false, true} {
		t.Run(fmt.Sprintf("sidecar=%v", sidecar), func(t *testing.T) { testChangedFile(t, sidecar) })
	}
}

func testChangedFile(t *testing.T, sidecar bool) {
	ds := copyDataset(t, manyPages(t))
	cfg := baseConfig(ds, "id")
	cfg.BatchPages = 8
	cfg.Index.NoSidecar = !sidecar
	_, _, states := drain(t, openT(t, cfg), 2)
	victim := ds.paths[1]
	st, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndex(b, []byte("parquet-go"))
	if i < 0 {
		t.Fatal("no created_by in the footer")
	}
	b[i+len("parquet-go")-1] = 'x' // the footer's created_by, same length
	if err := os.WriteFile(victim, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(victim, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	cfg.Resume = states[len(states)-1]
	l, err := Open(t.Context(), cfg)
	if err == nil {
		l.Close()
		t.Fatal("resumed on a changed file")
	}
	if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), victim) {
		t.Fatalf("error %v: want ErrState naming %s", err, victim)
	}
}

// TestReplacedFileBeforeFirstRead: a file replaced after Open, before the
// loader first opens it, by one of the same layout whose values differ
// fails the epoch with an error naming it instead of delivering the new
// file's values through the old index.
func TestReplacedFileBeforeFirstRead(t *testing.T) {
	ds := copyDataset(t, testDataset(t, "v2plain"))
	ix := buildIndex(t, ds)
	cfg := baseConfig(ds, "id")
	cfg.SharedIndex = ix
	cfg.Shuffle, cfg.BatchPages, cfg.Prefetch = ShuffleNone, 1, 1
	last := ix.NumFiles() - 1
	victim := ix.File(last).Path
	ids, err := runWithin(t, cfg, func() {
		b, err := os.ReadFile(victim)
		if err != nil {
			t.Error(err)
			return
		}
		// The last id of the file's first page, plain and uncompressed,
		// becomes another (same size, same layout).
		g := ix.Chunk(0, ix.File(last).FirstChunk).FirstPage
		loc := ix.Locate(0, g)
		end := loc.Offset + int64(loc.Size)
		b[end-8] ^= 0x40
		tmp := victim + ".new"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Error(err)
			return
		}
		if err := os.Rename(tmp, victim); err != nil {
			t.Error(err)
		}
	})
	if err == nil {
		t.Fatalf("%d of %d rows and no error", len(ids), ds.rows)
	}
	if !strings.Contains(err.Error(), victim) {
		t.Fatalf("error %q does not name %s", err, victim)
	}
}
