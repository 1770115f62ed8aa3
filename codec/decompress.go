package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// decompressors is one Decoder's private decompression state. Each codec's
// state is made on first use and reused; nothing here is shared between
// goroutines (arrow-go's global zstd decoder would cap the process at a few
// concurrent pages).
type decompressors struct {
	zstd *zstd.Decoder
	gz   *gzip.Reader
	br   *brotli.Reader
	lz4f *lz4.Reader
	rd   bytes.Reader
}

var errSizeMismatch = errors.New("decompressed size differs from the page header")

// decompress fills dst, whose length is the page's uncompressed size, from
// src. It never writes beyond len(dst) and fails when src does not
// decompress to exactly len(dst) bytes.
func (d *decompressors) decompress(codec compress.Compression, dst, src []byte) error {
	switch codec {
	case compress.Codecs.Uncompressed:
		if len(src) != len(dst) {
			return errSizeMismatch
		}
		copy(dst, src)
		return nil
	case compress.Codecs.Snappy:
		n, err := snappy.DecodedLen(src)
		if err != nil {
			return err
		}
		if n != len(dst) {
			return errSizeMismatch
		}
		out, err := snappy.Decode(dst, src)
		if err != nil {
			return err
		}
		if len(out) != len(dst) || (len(out) > 0 && &out[0] != &dst[0]) {
			return errSizeMismatch
		}
		return nil
	case compress.Codecs.Zstd:
		if d.zstd == nil {
			z, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
				zstd.WithDecodeAllCapLimit(true), zstd.WithDecoderLowmem(true))
			if err != nil {
				return err
			}
			d.zstd = z
		}
		out, err := d.zstd.DecodeAll(src, dst[:0])
		if err != nil {
			return err
		}
		if len(out) != len(dst) {
			return errSizeMismatch
		}
		return nil
	case compress.Codecs.Gzip:
		d.rd.Reset(src)
		if d.gz == nil {
			gz, err := gzip.NewReader(&d.rd)
			if err != nil {
				return err
			}
			d.gz = gz
		} else if err := d.gz.Reset(&d.rd); err != nil {
			return err
		}
		// Multistream is on by default: concatenated members read as one.
		return readExact(d.gz, dst)
	case compress.Codecs.Brotli:
		d.rd.Reset(src)
		if d.br == nil {
			d.br = brotli.NewReader(&d.rd)
		} else if err := d.br.Reset(&d.rd); err != nil {
			return err
		}
		return readExact(d.br, dst)
	case compress.Codecs.Lz4Raw:
		n, err := lz4Block(src, dst)
		if err != nil {
			return err
		}
		if n != len(dst) {
			return errSizeMismatch
		}
		return nil
	case compress.Codecs.Lz4:
		return d.lz4Hadoop(dst, src)
	case compress.Codecs.Lzo:
		return kindf(ErrUnsupported, "LZO compression")
	}
	return kindf(ErrUnsupported, "compression codec %d", int(codec))
}

// lz4Hadoop decodes the deprecated LZ4 codec. Parquet writers disagree on
// its framing: Hadoop's (blocks of big-endian uncompressed size, compressed
// size, raw LZ4 block), the LZ4 frame format, or one raw block. Try Hadoop
// first, then the others, as other readers do.
func (d *decompressors) lz4Hadoop(dst, src []byte) error {
	if tryHadoopLZ4(dst, src) {
		return nil
	}
	if len(src) >= 4 && binary.LittleEndian.Uint32(src) == 0x184D2204 {
		d.rd.Reset(src)
		if d.lz4f == nil {
			d.lz4f = lz4.NewReader(&d.rd)
		} else {
			d.lz4f.Reset(&d.rd)
		}
		if err := readExact(d.lz4f, dst); err == nil {
			return nil
		}
	}
	n, err := lz4Block(src, dst)
	if err != nil {
		return err
	}
	if n != len(dst) {
		return errSizeMismatch
	}
	return nil
}

// lz4Block decodes one raw LZ4 block. pierrec/lz4's assembly dereferences
// a nil destination (found by FuzzDecodePage), so an empty one is replaced
// by a small scratch buffer.
func lz4Block(src, dst []byte) (int, error) {
	if len(dst) == 0 {
		var tmp [64]byte
		n, err := lz4.UncompressBlock(src, tmp[:])
		if err == nil && n != 0 {
			return n, errSizeMismatch
		}
		return n, err
	}
	return lz4.UncompressBlock(src, dst)
}

func tryHadoopLZ4(dst, src []byte) bool {
	out := 0
	for len(src) > 0 {
		if len(src) < 8 {
			return false
		}
		usize := int(binary.BigEndian.Uint32(src))
		csize := int(binary.BigEndian.Uint32(src[4:]))
		src = src[8:]
		if csize > len(src) || usize > len(dst)-out || usize < 0 || csize < 0 {
			return false
		}
		n, err := lz4Block(src[:csize], dst[out:out+usize])
		if err != nil || n != usize {
			return false
		}
		out += n
		src = src[csize:]
	}
	return out == len(dst)
}

// readExact reads exactly len(dst) bytes from r and checks that r has no
// more.
func readExact(r io.Reader, dst []byte) error {
	if _, err := io.ReadFull(r, dst); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return errSizeMismatch
		}
		return err
	}
	var one [1]byte
	n, err := r.Read(one[:])
	if n > 0 {
		return errSizeMismatch
	}
	if err != nil && err != io.EOF {
		return err
	}
	return nil
}

// stream returns a reader of what src decompresses to under codec, for
// the codecs that can stop early (zstd, gzip, brotli): a caller that needs
// only a page's head does not pay for the rest. It returns nil for the
// others. The reader is valid until the next call on d; endStream drops
// its reference to src.
func (d *decompressors) stream(codec compress.Compression, src []byte) (io.Reader, error) {
	switch codec {
	case compress.Codecs.Zstd:
		if d.zstd == nil {
			z, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
				zstd.WithDecodeAllCapLimit(true), zstd.WithDecoderLowmem(true))
			if err != nil {
				return nil, err
			}
			d.zstd = z
		}
		d.rd.Reset(src)
		// With concurrency 1 the stream decodes on the caller's
		// goroutine, block by block, as it is read.
		if err := d.zstd.Reset(&d.rd); err != nil {
			return nil, err
		}
		return d.zstd, nil
	case compress.Codecs.Gzip:
		d.rd.Reset(src)
		if d.gz == nil {
			gz, err := gzip.NewReader(&d.rd)
			if err != nil {
				return nil, err
			}
			d.gz = gz
		} else if err := d.gz.Reset(&d.rd); err != nil {
			return nil, err
		}
		return d.gz, nil
	case compress.Codecs.Brotli:
		d.rd.Reset(src)
		if d.br == nil {
			d.br = brotli.NewReader(&d.rd)
		} else if err := d.br.Reset(&d.rd); err != nil {
			return nil, err
		}
		return d.br, nil
	}
	return nil, nil
}

// endStream drops the stream's reference to its input.
func (d *decompressors) endStream() {
	if d.zstd != nil {
		_ = d.zstd.Reset(nil)
	}
	d.rd.Reset(nil)
}

func (d *decompressors) close() {
	if d.zstd != nil {
		d.zstd.Close()
		d.zstd = nil
	}
	if d.gz != nil {
		_ = d.gz.Close()
		d.gz = nil
	}
	d.br, d.lz4f = nil, nil
}
