package codec

import (
	"encoding/binary"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// TestCheckThrift: a real footer checks whole; a list claiming more
// elements than bytes left, or a truncated footer, fails.
func TestCheckThrift(t *testing.T) {
	b := writeParquet(t, tokenRows(1, 500, 64, true), genOpts{codec: compress.Codecs.Snappy, pageSize: 4096, index: true})
	flen := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	footer := b[len(b)-8-flen : len(b)-8]
	if n, err := CheckThrift(footer); err != nil || n != len(footer) {
		t.Fatalf("real footer: %d of %d bytes, %v", n, len(footer), err)
	}
	if _, err := CheckThrift(footer[:len(footer)/2]); err == nil {
		t.Fatal("half a footer passed")
	}
	forged := binary.AppendUvarint([]byte{0x15, 0x02, 0x19, 0xfc}, 1_000_000)
	forged = append(forged, make([]byte, 1000)...)
	if _, err := CheckThrift(forged); err == nil {
		t.Fatal("a list of 10^6 structs in 1 KB passed")
	}
}
