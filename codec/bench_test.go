package codec

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"
)

// benchPages are the data pages of a list<int32> token column written by
// arrow-go with a target page size and codec, PLAIN encoded, V1 pages.
type benchPages struct {
	chunk  *Chunk
	pages  [][]byte
	offs   []int64
	bodies [][]byte // compressed bodies, for the decompress-only baseline
	usize  []int    // uncompressed body sizes
	total  int64    // uncompressed bytes of all pages
	maxNV  int
}

var (
	benchMu    sync.Mutex
	benchCache = map[string]*benchPages{}
	benchRows  = map[int]arrow.Array{}
)

func loadBench(b *testing.B, pageSize int, codec compress.Compression) *benchPages {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	key := fmt.Sprint(pageSize, codec)
	if bp := benchCache[key]; bp != nil {
		return bp
	}
	// enough rows for at least 8 pages of the largest size
	nrows := 8 * pageSize / 4 / 48
	if nrows < 2000 {
		nrows = 2000
	}
	arr := benchRows[nrows]
	if arr == nil {
		arr = tokenRows(42, nrows, 4096, false)
		benchRows[nrows] = arr
	}
	m := openMem(b, writeParquet(b, arr, genOpts{codec: codec, pageSize: int64(pageSize)}))
	cp := m.pages(b, 0, 0)
	bp := &benchPages{chunk: cp.chunk, pages: cp.pages, offs: cp.offs}
	for _, p := range cp.pages {
		h, n, err := ParsePageHeader(p)
		if err != nil {
			b.Fatal(err)
		}
		bp.bodies = append(bp.bodies, p[n:n+int(h.CompressedSize)])
		bp.usize = append(bp.usize, int(h.UncompressedSize))
		bp.total += int64(h.UncompressedSize)
		bp.maxNV = max(bp.maxNV, int(h.NumValues()))
	}
	benchCache[key] = bp
	return bp
}

// BenchmarkListInt32 measures per-core decode throughput of list<int32>
// token pages: decompression alone (klauspost, the floor any decoder pays),
// the general path to Arrow, and the consumer-buffer path. MB/s is of
// uncompressed page bytes; compare the three at each size and codec.
func BenchmarkListInt32(b *testing.B) {
	codecs := []struct {
		name string
		c    compress.Compression
	}{{"zstd", compress.Codecs.Zstd}, {"snappy", compress.Codecs.Snappy}, {"none", compress.Codecs.Uncompressed}}
	for _, size := range []int{8 << 10, 64 << 10, 1 << 20} {
		for _, cc := range codecs {
			name := fmt.Sprintf("%dKiB/%s", size>>10, cc.name)
			b.Run(name+"/decompress", func(b *testing.B) {
				bp := loadBench(b, size, cc.c)
				zd, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
				defer zd.Close()
				buf := make([]byte, 0, 2*size+(1<<20))
				b.SetBytes(bp.total / int64(len(bp.pages)))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					k := i % len(bp.pages)
					var err error
					switch cc.c {
					case compress.Codecs.Zstd:
						_, err = zd.DecodeAll(bp.bodies[k], buf[:0])
					case compress.Codecs.Snappy:
						_, err = snappy.Decode(buf[:cap(buf)], bp.bodies[k])
					default:
						copy(buf[:bp.usize[k]], bp.bodies[k])
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
			})
			b.Run(name+"/general", func(b *testing.B) {
				bp := loadBench(b, size, cc.c)
				d := NewDecoder(Options{})
				defer d.Close()
				b.SetBytes(bp.total / int64(len(bp.pages)))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					k := i % len(bp.pages)
					pg, err := d.DecodePage(bp.chunk, nil, bp.pages[k], bp.offs[k])
					if err != nil {
						b.Fatal(err)
					}
					pg.Release()
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
			})
			b.Run(name+"/into", func(b *testing.B) {
				bp := loadBench(b, size, cc.c)
				d := NewDecoder(Options{})
				defer d.Close()
				values, offsets := make([]int32, bp.maxNV), make([]int32, bp.maxNV+1)
				b.SetBytes(bp.total / int64(len(bp.pages)))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					k := i % len(bp.pages)
					if _, err := d.DecodeListInt32Into(bp.chunk, nil, bp.pages[k], bp.offs[k], values, offsets); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
			})
		}
	}
}

func BenchmarkParsePageHeader(b *testing.B) {
	bp := loadBench(b, 8<<10, compress.Codecs.Zstd)
	b.SetBytes(int64(len(bp.pages[0]) - len(bp.bodies[0])))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := ParsePageHeader(bp.pages[i%len(bp.pages)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListInt32Ratio decodes each page three ways in the same
// iteration (decompression alone, the general path, the consumer-buffer
// path) and reports each one's throughput per core and the ratios to
// decompression alone. Each phase is timed in CPU time of the (locked)
// thread, so that on a shared, loaded machine time spent descheduled is
// not charged to whichever phase it fell in; interleaving makes all three
// see the same cache and frequency conditions.
func BenchmarkListInt32Ratio(b *testing.B) {
	codecs := []struct {
		name string
		c    compress.Compression
	}{{"zstd", compress.Codecs.Zstd}, {"snappy", compress.Codecs.Snappy}, {"none", compress.Codecs.Uncompressed}}
	for _, size := range []int{8 << 10, 64 << 10, 1 << 20} {
		for _, cc := range codecs {
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, cc.name), func(b *testing.B) {
				bp := loadBench(b, size, cc.c)
				zd, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
				defer zd.Close()
				buf := make([]byte, 0, 2*size+(1<<20))
				d := NewDecoder(Options{})
				defer d.Close()
				values, offsets := make([]int32, bp.maxNV), make([]int32, bp.maxNV+1)
				var tDec, tGen, tInto time.Duration
				var bytes int64
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				b.ReportAllocs()
				b.ResetTimer()
				phases := [3]func(k int) error{
					func(k int) error {
						var err error
						switch cc.c {
						case compress.Codecs.Zstd:
							_, err = zd.DecodeAll(bp.bodies[k], buf[:0])
						case compress.Codecs.Snappy:
							_, err = snappy.Decode(buf[:cap(buf)], bp.bodies[k])
						default:
							copy(buf[:bp.usize[k]], bp.bodies[k])
						}
						return err
					},
					func(k int) error {
						pg, err := d.DecodePage(bp.chunk, nil, bp.pages[k], bp.offs[k])
						if err == nil {
							pg.Release()
						}
						return err
					},
					func(k int) error {
						_, err := d.DecodeListInt32Into(bp.chunk, nil, bp.pages[k], bp.offs[k], values, offsets)
						return err
					},
				}
				var spent [3]time.Duration
				for i := 0; i < b.N; i++ {
					k := i % len(bp.pages)
					// rotate the order so no phase always finds the page
					// warm in cache from the one before
					for q := 0; q < 3; q++ {
						ph := (q + i) % 3
						t0 := threadTime()
						if err := phases[ph](k); err != nil {
							b.Fatal(err)
						}
						spent[ph] += threadTime() - t0
					}
					bytes += int64(bp.usize[k])
				}
				tDec, tGen, tInto = spent[0], spent[1], spent[2]
				mbs := func(t time.Duration) float64 { return float64(bytes) / t.Seconds() / 1e6 }
				b.ReportMetric(mbs(tDec), "decompress-MB/s")
				b.ReportMetric(mbs(tGen), "general-MB/s")
				b.ReportMetric(mbs(tInto), "into-MB/s")
				b.ReportMetric(float64(b.N)/tGen.Seconds(), "general-pages/s")
				b.ReportMetric(float64(b.N)/tInto.Seconds(), "into-pages/s")
				b.ReportMetric(tDec.Seconds()/tGen.Seconds(), "general/decompress")
				b.ReportMetric(tDec.Seconds()/tInto.Seconds(), "into/decompress")
			})
		}
	}
}

// threadTime is the CPU time the calling thread has used.
func threadTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return time.Duration(ts.Nano())
}

// BenchmarkListInt32Alias decodes uncompressed 64 KiB list<int32> pages
// through DecodePage with Options.AliasInput off (values copied once) and on
// (values are the page bytes).
func BenchmarkListInt32Alias(b *testing.B) {
	for _, alias := range []bool{false, true} {
		b.Run(fmt.Sprintf("alias=%v", alias), func(b *testing.B) {
			bp := loadBench(b, 64<<10, compress.Codecs.Uncompressed)
			d := NewDecoder(Options{AliasInput: alias})
			defer d.Close()
			var bytes int64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := i % len(bp.pages)
				pg, err := d.DecodePage(bp.chunk, nil, bp.pages[k], bp.offs[k])
				if err != nil {
					b.Fatal(err)
				}
				if pg.Aliased() != alias {
					b.Fatalf("Aliased() = %v", pg.Aliased())
				}
				pg.Release()
				bytes += int64(bp.usize[k])
			}
			b.ReportMetric(float64(bytes)/b.Elapsed().Seconds()/1e6, "MB/s")
		})
	}
}
