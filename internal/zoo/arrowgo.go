package zoo

import (
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// writeArrowGo writes the Parquet file out from the Arrow IPC file
// out+".arrow" (node/writers.mjs arrowgo), which it then removes, with
// arrow-go's pqarrow at its defaults: V1 data pages of 1 MiB, dictionaries
// on, no page index, no compression, one row group per record written.
func writeArrowGo(out string) error {
	if err := writeParquet(out+".arrow", out); err != nil {
		return fmt.Errorf("zoo: arrow-go writing %s: %w", out, err)
	}
	if err := os.Remove(out + ".arrow"); err != nil {
		return fmt.Errorf("zoo: %w", err)
	}
	return nil
}

func writeParquet(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.Create(out)
	if err != nil {
		return err
	}
	defer w.Close()
	fw, err := pqarrow.NewFileWriter(r.Schema(), w, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			fw.Close()
			return err
		}
		if err := fw.Write(rec); err != nil {
			fw.Close()
			return err
		}
	}
	return fw.Close()
}
