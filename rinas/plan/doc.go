// Package plan is the loader's epoch plan as a pure layer: what an
// epoch's units are worth, in which order an epoch takes them, which rows
// of them each rank delivers, how many batches each rank takes, how far a
// rank has got, and how the rest of an epoch is dealt out to another
// world. It does no I/O: everything it needs comes in as slices (each
// unit's row count and estimated tokens), and the same inputs give the
// same plan on every rank, so no rank needs to hear from another.
//
// # Units, counts and the row stream
//
// A Space is one dataset's units (pages of the lead column, row groups or
// single rows, as the loader defines them) with each unit's count: its
// rows for row batches (a unit whose rows are unknown counts 1, and a
// count of 1 is never cut), 1 for batches of whole units. An epoch orders
// the units by a seeded permutation (index/perm), or in file order; laid
// end to end in that order their counts form the epoch's stream, and a
// coordinate x in [0, Total) names one row of it: the unit at position p
// covers [X(p), X(p)+count). Coordinates at or beyond Total repeat the
// stream from its start (PadLast's repeats): x names row x mod Total.
//
// # Shares
//
// Rank r of W delivers a contiguous range of the stream, its Share: with
// DropLast every rank gets the same number of full batches, Q rows,
// and the stream's last Total − W·Q rows (fewer than W batches' worth)
// are left out; with PadLast every rank gets as many as the largest needs
// and the shortfall (fewer than W batches' worth) repeats the stream's
// start; KeepUneven deals the stream in ranges that differ by at most one
// count. A unit that straddles a share's boundary is read by both ranks,
// each keeping its own rows of it ({Pos, Lo, Hi}: a Piece): read
// amplification at the boundaries only. Tokens output balances the
// ranks' estimated tokens instead, and cuts the boundary units at the
// row its estimate falls on. Page batches (batches of up to Batch units)
// over units whose rows are all known share rows the same way, and take
// the same number of batches on every rank, the largest number any rank's
// pieces need; a rank with fewer pieces spreads them over as many
// batches, cutting pieces at rows where it has fewer pieces than batches
// (units.go states the rule; Share.Ends says where each batch ends).
// Over units counting 1 (rows unknown, or the row shuffle's single rows)
// page batches deal whole units: every rank the same number, fewer than W
// left out or repeated.
//
// A share is found with one pass over the epoch (Epoch: each position's
// count summed into blocks of positions, items read in order and their
// positions found by the inverse permutation); the steps each rank takes
// need no pass at all, being a function of the stream's total (page
// batches over units of known rows excepted: their steps count every
// rank's pieces, a walk over the epoch's order).
//
// # Progress and the rest of an epoch
//
// A Walker yields a share's pieces in order, skipping pieces already
// taken in; a Cursor records how far a rank has taken its share in: every
// piece below Done, and the pieces beyond it taken in early (Taken). Both
// are in stream coordinates, so Reshard can deal the rest of an epoch to
// another world without the dataset: the rows no rank has taken in (the
// rest of every share, and the rows the original plan left out) and the
// rows taken in but not delivered (Pending), dealt again so that every
// rank of the new world takes the same number of steps.
package plan
