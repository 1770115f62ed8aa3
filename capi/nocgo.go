//go:build !cgo

package main

import (
	"fmt"
	"os"
)

// main stands in for the C ABI where cgo is off (CGO_ENABLED=0, or a
// cross build without a C toolchain), so that the module builds: the
// library itself needs cgo, and this says so.
func main() {
	fmt.Fprintln(os.Stderr, "capi: pagefeed's C ABI needs cgo: build with CGO_ENABLED=1 and -buildmode=c-shared (make python)")
	os.Exit(2)
}
