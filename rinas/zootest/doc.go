// Package zootest runs the loader (package rinas) at its default settings
// over the writer zoo (internal/zoo): files written by DuckDB, polars,
// arrow-rs, hyparquet-writer, parquetjs and arrow-go, with DuckDB's reading
// of each as the reference. It holds tests only; it is a package of its
// own so that their hundreds of epochs run in a test binary, under a
// timeout, of their own.
package zootest
