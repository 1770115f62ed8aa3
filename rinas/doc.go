// Package rinas is pagefeed's loader: the control plane that turns a page
// index into batches. It implements RINAS's intra-batch unordered fetching
// (every read of a batch, and of the next Prefetch batches, is in flight at
// once, and a batch is assembled in completion order) over YOUMU's
// page-level shuffle, with Reimu's row-group shuffle, a full row shuffle, a
// sequential stream with a local shuffle buffer, and no shuffle as
// baselines.
//
// # Use
//
// Open builds (or loads) the page index of Config.Paths, sizes the engine
// and its buffers, and starts reading. Next returns batches until io.EOF
// after the last epoch; any other error ends the run:
//
//	for {
//		b, err := l.Next(ctx)
//		if err == io.EOF {
//			break
//		}
//		if err != nil {
//			return err
//		}
//		consume(b)
//		b.Release()
//	}
//
// # Contracts
//
// Exactly once: every row of the projection is delivered once per epoch
// per rank, and the union over the ranks of a world is the dataset, for
// every shuffle. State, taken between two Next calls, is a small JSON
// checkpoint; Config.Resume continues from it exactly, and Reshard turns
// the states of all ranks into states for another world size without
// losing or repeating a row.
//
// Interrupts lose nothing: a Next that returns an error (its context
// cancelled or past its deadline at any point, or a failure) delivers
// nothing, and the rows it had cut go back to the head of the queue with
// their token offsets; the next call cuts the same batch, and a State
// taken in between resumes to the same rows. Loader.Unread gives back the
// batch the last Next returned, for a caller that could not hand it on:
// the next Next returns it again, and State counts it as not delivered.
//
// Memory is fixed at Open: engine slots, the fetch window, token buffers,
// the side cache, rows waiting in the shuffle buffer and row batches held
// by the consumer all count against Config.MemoryLimit, sized from the
// dataset (sizing.go) and shrunk to fit it, the address space left under
// RLIMIT_AS and the open-file budget (half of RLIMIT_NOFILE) before
// anything is refused. ErrMemory names what to raise or lower; ErrConfig
// refuses sizes beyond any plan's arithmetic (a world of more than 2^20
// ranks, batches or rows of more than 2^24, a token matrix of 2^31
// tokens). A consumer that does not Release its batches blocks Next
// (backpressure) in every output mode; ctx still ends it. A batch's memory
// is the loader's until Release and is reused after it: Arrow's Retain
// does not keep it; Batch.Detach copies what must outlive the batch, into
// the caller's own memory. While loaders are open the Go runtime's soft
// memory limit covers what they may hold (unless the program set one), so
// the collector keeps garbage within the limit too.
//
// Files do not change under the loader: after the reads of a fetch batch
// (pages, other columns, dictionaries, continuation pages) have landed and
// before any of its rows goes out, each file it read is stat'ed once
// (statx: size and inode, modification and status-change times to the
// nanosecond) and compared with what the index recorded and Open saw. A
// file written in place since (rsync --inplace, a job rewriting a shard),
// replaced by a rename, grown or shrunk fails the epoch with
// ErrFileChanged naming it, or with Config.SkipBadPages drops its units,
// counted in Stats.SkippedPages; so do a resumed State's pending rows,
// read again at Open. The check cannot see what the kernel is not told or
// does not record: a write within the file system's timestamp
// granularity of the file's previous change (a few milliseconds on file
// systems with coarse timestamps) that keeps its size and inode, a change
// on a network file system that the client's attribute cache has not
// caught up with (NFS actimeo, FUSE attr_timeout), and content changed
// under a file system that does not update ctime.
//
// # Several columns
//
// Config.Columns may name several columns; every batch then carries all
// of them, row-aligned (Batch.Columns). Pages of different columns do not
// share row boundaries, so the epoch's units are row spans of one lead
// column (Config.LeadColumn): each unit also reads the pages of the other
// columns that overlap its span, in the same submission, and slices them
// to the span. Decoded pages of the other columns are held for the next
// spans that need them (Config.SideCacheBytes), and adjacent pages of one
// column chunk that a unit reads go out as one read (Config.CoalesceBytes).
//
// # Mixtures
//
// Config.Sources, instead of Paths, makes the loader a weighted mixture
// of datasets. Each source keeps its own index, epoch plan, permutation
// and epoch counter (a Loader of its own, reading through the mixture's
// one engine); the blend (plan.Blend) decides how many rows of each
// batch each source gives: row by row, the source furthest behind
// weight × rows delivered goes next. Weights are shares of delivered
// rows (tokens output: of rows of the token matrix, each SeqLen tokens).
// The blend is deterministic and the same on every rank, and exact in
// every prefix: after every batch, each source is less than one row
// ahead of its share of all rows delivered (at most 1 − w_i of one), and
// behind it by at most Σ_{j≠i}(1 − w_j) rows (less than one with two
// sources, less than two with three); plan.Blend's doc proves the bound.
// With unordered assembly too: each source assembles its own rows as its
// reads land and gives exactly the rows the blend asks for.
//
// The mixture's epoch is EpochSize rows for the whole world (default:
// each source's rows for Weight and Repeat 1, Repeat × its rows, or
// Choose). A source whose share needs more rows than it holds starts its
// own next epoch, a fresh permutation (upsampling); one that holds more
// gives part of its epoch, without repeats, and the next mixture epoch
// goes on where it stopped (subsampling). Each source's own epochs leave
// out fewer than World rows so that every rank takes the same rows of it;
// the mixture's steps per rank are EpochSize/(World·BatchRows) under
// DropLast, rounded up under PadLast (the sources give the extra rows),
// or the rank's part of EpochSize in batches under KeepUneven.
//
// A mixture's batch holds each source's rows as contiguous chunks of
// Columns, sources in Sources order; Batch.SourceRows counts them. Its
// State holds the blend's counters and every source's own State, by
// name: a State resumed with other weights, or with sources added or
// removed, continues every source where it was (its rows not repeated
// within its epoch) and the new blend counts from the resume on. A
// source whose files changed is refused naming the file. Reshard deals
// every source's rest to the new world. A Next cut short by its context
// keeps the batch it was assembling, and State until it is returned
// counts none of it. Stats.Sources counts rows, tokens, epochs begun,
// bytes read and the files read each way per source. Config.IOMode's auto
// chooses once over all sources' files, at Open and at every mixture
// epoch. Unread gives a mixture's batch back as it does
// one dataset's (the next Next returns the same rows, State counts them
// as not delivered). A mixture delivers row batches (BatchRows, default
// 1024 for Arrow output).
//
// A Loader is used by one goroutine: Next, Unread, State and Close must
// not be called concurrently. Batch.Release may be called from any goroutine.
// Close waits for every goroutine the loader started.
package rinas
