// Command pagebench is a fio-compatible read benchmark over pagefeed's
// engines. It takes fio's flag names and job files and prints fio's text or
// JSON (--output-format=json), so fio tooling reads its results:
//
//	pagebench --name=rr --filename=/data/f --size=2g --rw=randread --bs=4k \
//	    --ioengine=io_uring --iodepth=64 --direct=1 --runtime=5 --time_based
//	pagebench --name=ds --filename=/data/part-0.parquet:/data/part-1.parquet \
//	    --rw=randread --bs=64k --ioengine=io_uring --iodepth=32 --direct=1 --runtime=5 --time_based
//	pagebench --output-format=json job.fio
//	pagebench --compare-fio [--pairs N] [--runtime S] [--dir D] [--size 2g] [--case psync] [--mode defaults|best] [--best-batch N]
//
// Differences from fio, on purpose and small:
//   - Job sections run one after another, each its own group, as if every
//     section had stonewall; numjobs clones of one section run together.
//   - Sizes: k, m, g, t, p are powers of 1024 with or without "b"/"ib"
//     (fio's default kb_base=1024 would read "KiB" as 1000).
//   - Booleans given as separate words need "=": --direct=1, not --direct 1.
//   - usr_cpu and sys_cpu come from getrusage(RUSAGE_SELF) over the measured
//     window (the whole process: engine workers, Go runtime and GC), split
//     evenly between a group's clones; fio measures each job thread.
//   - iodepth_level/submit/complete are derived from the options, not
//     measured; latency_ns/us/ms buckets are measured (clat).
//   - Without --iodepth_batch_submit, io_uring submits at most two reads
//     per io_uring_enter (unplugged, as fio's default of 1) while its
//     worker waits on the device, and larger chunks while the worker is
//     saturated; given, it is a fixed chunk, as in fio.
//   - random_distribution uses fio's generators (zipf, pareto, normal and
//     their hashing) over pagebench's own random numbers: the same
//     shapes, not fio's exact sequence of offsets; randrepeat repeats
//     pagebench's.
//   - Write workloads (rw=write, randwrite, rw, randrw, trim*, verify=)
//     are refused: pagebench only reads.
//
// Raw mode lives in package bench; this command only binds arguments to its
// Config structs. Errors are one line on stderr and exit status 1; a
// live status line is drawn on stderr only when it is a terminal.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/pagefeed/pagefeed/bench"
	"github.com/pagefeed/pagefeed/internal/term"
)

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: pagebench [fio options] [job.fio ...]
       pagebench --parquet=PATH_OR_GLOB [--column --shuffle --fetch --batch --iodepth --runtime|--loops ...]
       pagebench --compare-fio [--pairs N] [--runtime S] [--dir D] [--size SIZE] [--fio PATH] [--case SUBSTR]
                           [--mode defaults|best] [--best-batch N]
       pagebench --in-cgroup=SIZE [--drop-caches] -- COMMAND [ARG...]
fio options: --name --filename --size --rw=randread|read --bs --iodepth
  --iodepth_batch_submit --direct=0|1 --ioengine=io_uring|psync|mmap --numjobs
  --runtime --time_based --ramp_time --fixedbufs --registerfiles
  --iomem=malloc|mmap|shm|mmaphuge|shmhuge (huge: transparent huge pages)
  --group_reporting --readonly --seed|--randseed --randrepeat --norandommap
  --iodepth_batch_complete_min --iodepth_batch_complete_max --iodepth_low
  --offset --offset_increment (bytes or N%) --file_service_type=roundrobin|sequential|random[:N]
  --random_distribution=random|zipf:θ|pareto:h|normal:σ[:center]
  --write_bw_log --write_lat_log --write_iops_log [=PREFIX] --log_avg_msec
  --output=FILE --output-format=normal|json|json+ (or a comma-separated list)
Write workloads (rw=write, randwrite, rw, randrw, trim*, verify=...) are refused.
--filename takes one file or, as in fio, a colon-separated list (a:b:c, \: for
  a colon in a name): reads go to the files as --file_service_type says (by
  default in turn, fio's roundrobin; sequential keeps to a file until its
  share is read; :N chooses again after N reads, but for sequential, as in
  fio), at bs-aligned offsets within each file; --size is divided as fio
  divides it (size/files each, whole bs blocks left over to the first
  files), else each file is read at its own size.
Job files: [global] and [job] sections of key=value; jobs run one after another.
`

// runMain is main without os.Exit, for tests: 0 on success, 1 on any error
// (one line "pagebench: ..." on stderr), 0 after --help.
func runMain(args []string, stdout, stderr io.Writer) int {
	if err := run(args, stdout, stderr); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			return int(code) // --in-cgroup: the command's own status, its own message
		}
		fmt.Fprintf(stderr, "pagebench: %v\n", err)
		return 1
	}
	return 0
}

func run(args []string, stdout, stderr io.Writer) error {
	if isInCgroup(args) {
		return runInCgroup(args, stdout, stderr)
	}
	if isParquet(args) {
		return runParquet(args, stdout, stderr)
	}
	for _, a := range args {
		switch a {
		case "-h", "--help", "-help":
			_, err := io.WriteString(stdout, usage)
			return err
		case "--compare-fio", "-compare-fio":
			return runCompare(args, stdout, stderr)
		}
	}
	if len(args) == 0 {
		return errors.New("no job: give --name and --filename, or a job file (see --help)")
	}
	spec, err := bench.ParseArgs(args)
	if err != nil {
		return err
	}
	cfg := bench.RawConfig{Stderr: stderr}
	for _, js := range spec.Jobs {
		j, err := js.Resolve()
		if err != nil {
			return err
		}
		cfg.Jobs = append(cfg.Jobs, j)
	}
	if f, ok := stderr.(*os.File); ok && isTerminal(f) {
		cfg.Status = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.RunRaw(ctx, cfg)
	if err != nil {
		return err
	}
	if spec.Output == "" {
		return rep.Write(stdout, spec.Formats())
	}
	f, err := os.Create(spec.Output)
	if err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	if err := rep.Write(f, spec.Formats()); err != nil {
		f.Close()
		return fmt.Errorf("--output %s: %w", spec.Output, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--output %s: %w", spec.Output, err)
	}
	return nil
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	return term.IsTerminal(f)
}
