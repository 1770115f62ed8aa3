// The zoo's fixtures: which writer stores which set, with what settings,
// and how many rows. Everything a writer is not told is its default.
//
// Row counts run from a few thousand to 200,000; the one large file is
// DuckDB at its defaults (row groups of 122,880 rows with one page per
// column chunk: pages of 10 MB and more). The images set is kept apart
// and small (about 10 MB a file: 96 rows of 20 to 300 KiB).

export const fixtures = [
  // DuckDB: one page per column chunk, V1 pages unless PARQUET_VERSION V2.
  { writer: 'duckdb', variant: 'defaults', set: 'tokens', rows: 200000 },
  { writer: 'duckdb', variant: 'rowgroup1000', set: 'tokens', rows: 5000, opts: { rowGroupSize: 1000 } },
  { writer: 'duckdb', variant: 'v2-zstd', set: 'tokens', rows: 20000, opts: { version: 'V2', compression: 'zstd' } },
  { writer: 'duckdb', variant: 'gzip', set: 'tokens', rows: 3000, opts: { compression: 'gzip', rowGroupSize: 2048 } },
  { writer: 'duckdb', variant: 'lz4', set: 'tokens', rows: 4000, opts: { compression: 'lz4', rowGroupSize: 1500 } },
  { writer: 'duckdb', variant: 'uncompressed', set: 'tokens', rows: 3000, opts: { compression: 'uncompressed' } },
  { writer: 'duckdb', variant: 'images', set: 'images', rows: 96 },

  // polars: writeParquet at the node binding's defaults, and a sink with
  // polars' own default codec (zstd), small row groups and pages.
  { writer: 'polars', variant: 'defaults', set: 'tokens', rows: 20000 },
  { writer: 'polars', variant: 'zstd-small', set: 'tokens', rows: 8000, opts: { sink: { compression: 'zstd', rowGroupSize: 3000, dataPagesizeLimit: 16384 } } },
  { writer: 'polars', variant: 'images', set: 'images', rows: 96 },

  // arrow-rs (parquet-wasm): page index and dictionary on by default.
  // Statistics per chunk only drop the column index: arrow-rs writes the
  // offset index whatever the statistics, and parquet-wasm has no switch
  // for it.
  { writer: 'arrowrs', variant: 'defaults', set: 'tokens', rows: 8000 },
  { writer: 'arrowrs', variant: 'chunkstats-nodict', set: 'tokens', rows: 8000, opts: { statistics: 'Chunk', dictionary: false, compression: 'SNAPPY', pageSize: 32768 } },
  { writer: 'arrowrs', variant: 'v2-zstd-small', set: 'tokens', rows: 10000, opts: { version: 'V2', compression: 'ZSTD', pageSize: 8192, rowGroupSize: 3000 } },
  { writer: 'arrowrs', variant: 'images', set: 'images', rows: 96 },

  // hyparquet-writer: V2 pages, offset index without column index.
  { writer: 'hyparquet', variant: 'defaults', set: 'tokens', rows: 6000 },
  { writer: 'hyparquet', variant: 'small-pages', set: 'tokens', rows: 6000, opts: { pageSize: 16384, codec: 'UNCOMPRESSED', rowGroupSize: 2500 } },
  { writer: 'hyparquet', variant: 'images', set: 'images', rows: 96 },

  // @dsnp/parquetjs: pages cut every pageSize rows, page index by default.
  { writer: 'parquetjs', variant: 'v1-list', set: 'tokens', rows: 3000, opts: { list: 'list', writer: { useDataPageV2: false, pageSize: 500, rowGroupSize: 2000 } } },
  { writer: 'parquetjs', variant: 'v2-repeated', set: 'tokens', rows: 3000, opts: { list: 'repeated', compression: 'SNAPPY', writer: { pageSize: 700 } } },
  { writer: 'parquetjs', variant: 'images', set: 'images', rows: 96, opts: { writer: { useDataPageV2: false } } },

  // arrow-go at its defaults: written by the Go side from an IPC file.
  { writer: 'arrowgo', variant: 'defaults', set: 'tokens', rows: 12000 },
  { writer: 'arrowgo', variant: 'images', set: 'images', rows: 96 },
];

// ID_STRIDE separates the fixtures' ids: fixture k holds ids from
// k*ID_STRIDE, so ids (and input_ids[0]) are unique over the zoo and fit
// an int32.
export const ID_STRIDE = 1000000;
