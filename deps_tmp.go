package pagefeed

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/andybalholm/brotli"
	_ "github.com/apache/arrow-go/v18/parquet/file"
	_ "github.com/apache/arrow-go/v18/parquet/metadata"
	_ "github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/apache/thrift/lib/go/thrift"
	_ "github.com/klauspost/compress/snappy"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/pierrec/lz4/v4"
	_ "go.uber.org/goleak"
	_ "golang.org/x/sys/unix"
)
