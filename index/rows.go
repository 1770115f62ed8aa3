package index

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/engine"
)

// Row counts. Every page's rows (those that start in it, as an offset
// index counts them) are known once Build returns: from the chunk's offset
// index; from a V2 page header's num_rows; from a V1 page's num_values for
// a column without repetition; otherwise (V1 pages of a repeated column
// without an offset index, which may split rows anywhere) by decoding the
// page's repetition levels once. The header walk counts the pages its
// reads already hold; countRows reads the others, in batches, and the
// sidecar keeps the counts so that this happens once per file version.
// Header counts that do not add up to the row group's rows (a writer that
// fills V2 num_rows with the value count) are not trusted either: the
// chunk's pages are counted from their levels.

const (
	// countBatchBytes bounds the page bytes one countRows batch reads.
	countBatchBytes = 64 << 20
	// countNoticeBytes is the reading that countRows announces.
	countNoticeBytes = 256 << 20
	// countProgressEvery spaces countRows' progress notices.
	countProgressEvery = 10 * time.Second
)

// countStats counts the pages whose rows were counted from their levels.
type countStats struct {
	pages atomic.Int64 // counted from their levels
	read  atomic.Int64 // bytes read again to count them
}

// decoderPool lends codec Decoders to the reader's callbacks, which run on
// several goroutines at once; close releases them all.
type decoderPool struct {
	mu   sync.Mutex
	free []*codec.Decoder
	all  []*codec.Decoder
}

func (p *decoderPool) get() *codec.Decoder {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		d := p.free[n-1]
		p.free = p.free[:n-1]
		return d
	}
	d := codec.NewDecoder(codec.Options{})
	p.all = append(p.all, d)
	return d
}

func (p *decoderPool) put(d *codec.Decoder) {
	p.mu.Lock()
	p.free = append(p.free, d)
	p.mu.Unlock()
}

func (p *decoderPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range p.all {
		d.Close()
	}
	p.free, p.all = nil, nil
}

// countPage counts the rows that start in page pg of flattened chunk ci
// from its bytes data (header and body) with chunk c. A page whose levels
// do not decode is marked bad, not an error: the index does not judge page
// contents, the loader does when it reads the page (and may skip it); an
// unsupported page fails the build, as the loader could not read it.
func (b *builder) countPage(c *codec.Chunk, ci int, pg *tmpPage, data []byte) error {
	d := b.decs.get()
	rows, cont, err := d.RowStarts(c, data, pg.off)
	b.decs.put(d)
	b.counted.pages.Add(1)
	switch {
	case err == nil:
		pg.n, pg.mid, pg.counted = int64(rows), cont, true
	case codec.IsCorruption(err):
		pg.bad = true
		b.noteBad(ci, err.Error())
	default:
		f := b.fileOf(ci)
		col, _, r := b.colOf(ci)
		return &Error{Op: "count_rows", Path: b.files[f].Path, Column: col, Off: pg.off, Err: fmt.Errorf("%w: row group %d: %w", ErrUnsupported, r, err)}
	}
	return nil
}

// noteBad records, for the notice, that a chunk's row counts are not
// sound and why.
func (b *builder) noteBad(ci int, why string) {
	b.badMu.Lock()
	defer b.badMu.Unlock()
	if b.bad == nil {
		b.bad = map[int]string{}
	}
	if _, ok := b.bad[ci]; !ok {
		b.bad[ci] = why
	}
}

// countRows gives every walked page its row count: it checks the counts
// the headers gave against each row group's rows (a chunk whose header
// counts do not add up is counted from its levels instead), reads the
// pages whose rows are not known yet in batches and counts them, and sets
// every page's first row.
func (b *builder) countRows(ctx context.Context) error {
	type job struct{ ci, i int }
	var jobs []job
	var bytes int64
	recount, firstBad := map[int]int{}, map[int]string{}
	for ci := range b.res {
		f := b.fileOf(ci)
		if b.isReused(f) {
			continue
		}
		res := &b.res[ci]
		col, k, r := b.colOf(ci)
		rows := b.metas[f].rgRows[r]
		if res.source == FromOffsetIndex {
			continue // counted from first_row_index
		}
		sum, known, headers := int64(0), true, false
		for _, p := range res.pages {
			if p.n < 0 {
				known = false
				break
			}
			sum += p.n
			headers = headers || !p.counted
		}
		if known && sum != rows && headers && b.metas[f].maxRep[k] > 0 {
			if recount[f] == 0 {
				firstBad[f] = fmt.Sprintf("row group %d column %s: %d rows, the row group %d", r, col, sum, rows)
			}
			recount[f]++
			for i := range res.pages {
				if !res.pages[i].counted {
					res.pages[i].n = -1
				}
			}
		}
		if len(res.pages) == 1 && res.pages[0].n < 0 && !res.pages[0].bad {
			res.pages[0].n = rows // the only page starts every row
			continue
		}
		for i, p := range res.pages {
			if p.n < 0 && !p.bad {
				jobs = append(jobs, job{ci, i})
				bytes += int64(p.size)
			}
		}
	}
	for f, n := range recount {
		b.opts.Logf("%s: the page headers' row counts of %d column chunk(s) do not add up to their row groups' (%s); counting their rows from the pages' levels", b.files[f].Path, n, firstBad[f])
	}
	if len(jobs) > 0 {
		if bytes >= countNoticeBytes {
			b.opts.Logf("counting the rows of %d pages (%d MiB) of repeated columns written without an offset index, once: the sidecar keeps the counts", len(jobs), bytes>>20)
		}
		start, last := time.Now(), time.Now()
		chunks := map[int]*codec.Chunk{}
		var done int64
		for lo := 0; lo < len(jobs); {
			hi, n := lo, int64(0)
			for hi < len(jobs) && (hi == lo || n+int64(b.res[jobs[hi].ci].pages[jobs[hi].i].size) <= countBatchBytes) {
				n += int64(b.res[jobs[hi].ci].pages[jobs[hi].i].size)
				hi++
			}
			rs := make([]engine.Range, hi-lo)
			cs := make([]*codec.Chunk, hi-lo)
			for j, jb := range jobs[lo:hi] {
				f := b.fileOf(jb.ci)
				pg := &b.res[jb.ci].pages[jb.i]
				rs[j] = engine.Range{Path: b.files[f].Path, Off: pg.off, Len: int(pg.size)}
				c := chunks[jb.ci]
				if c == nil {
					_, k, _ := b.colOf(jb.ci)
					c = codec.ChunkOf(b.sets[b.fileSch[f]].descr[k], b.rawOf(jb.ci).codec, b.files[f].Path, nil)
					chunks[jb.ci] = c
				}
				cs[j] = c
			}
			errs := make([]error, len(rs))
			batch := jobs[lo:hi]
			err := b.readBatch(ctx, rs, func(j int, data []byte, err error) {
				jb := batch[j]
				switch {
				case err != nil:
					errs[j] = err
				case len(data) != rs[j].Len:
					errs[j] = corrupt("count_rows", rs[j].Path, "", rs[j].Off, "file shrank while indexing")
				default:
					errs[j] = b.countPage(cs[j], jb.ci, &b.res[jb.ci].pages[jb.i], data)
				}
			})
			if err != nil {
				return err
			}
			if err := firstErr(errs); err != nil {
				return err
			}
			done += n
			b.counted.read.Add(n)
			if time.Since(last) >= countProgressEvery && hi < len(jobs) {
				last = time.Now()
				b.opts.Logf("counted the rows of %d of %d pages (%d of %d MiB, %s)", hi, len(jobs), done>>20, bytes>>20, time.Since(start).Round(time.Second))
			}
			lo = hi
		}
	}
	return b.finishRows()
}

// finishRows sets each walked page's first row. A chunk whose pages do
// not start exactly its row group's rows (a page whose levels do not
// decode, a first page that continues a row no page began, a page lost)
// is corrupt; the index does not refuse it but gives the rows the others
// leave to its first bad page, or its first page, so that the loader's
// check of that page's rows fails there (and SkipBadPages may skip it),
// and says so. Pages that start more rows than the row group has cannot
// be indexed: that fails the build.
func (b *builder) finishRows() error {
	notes := map[int][]string{}
	for ci := range b.res {
		f := b.fileOf(ci)
		if b.isReused(f) {
			continue
		}
		res := &b.res[ci]
		if res.source == FromOffsetIndex || len(res.pages) == 0 {
			continue
		}
		col, _, r := b.colOf(ci)
		rows := b.metas[f].rgRows[r]
		var sum int64
		take := 0 // the page given the rows the others leave
		for i, p := range res.pages {
			if p.n >= 0 {
				sum += p.n
			} else if !res.pages[take].bad {
				take = i
			}
		}
		// No page precedes the first: levels at its head that continue a
		// row belong to none, and the loader refuses them.
		res.pages[0].mid = false
		if left := rows - sum; left != 0 || res.pages[take].n < 0 {
			if left < 0 {
				return corrupt("count_rows", b.files[f].Path, col, b.rawOf(ci).start, "row group %d: its pages start %d rows, the row group has %d", r, sum, rows)
			}
			why := b.bad[ci]
			if why == "" {
				why = fmt.Sprintf("its pages start %d rows, the row group has %d", sum, rows)
			}
			notes[f] = append(notes[f], fmt.Sprintf("row group %d column %s: %s", r, col, why))
			res.pages[take].n = max(res.pages[take].n, 0) + left
		}
		sum = 0
		for i := range res.pages {
			p := &res.pages[i]
			if p.n < 0 {
				p.n = 0 // a bad page after the one that took the rest
			}
			if sum+p.n >= 1<<32-1 {
				return &Error{Op: "count_rows", Path: b.files[f].Path, Column: col, Off: p.off, Err: fmt.Errorf("%w: row group of %d rows", ErrUnsupported, rows)}
			}
			p.row = uint32(sum)
			sum += p.n
		}
	}
	for f, ns := range notes {
		b.opts.Logf("%s: the rows of %d column chunk(s) do not add up (%s): corrupt; reading them will fail (SkipBadPages skips them)", b.files[f].Path, len(ns), ns[0])
	}
	return nil
}
