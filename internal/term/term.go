// Package term tells the binaries whether an output is a terminal, for
// progress lines that redraw themselves.
package term

import "os"

// IsTerminal reports whether f is a terminal (the terminal-attributes
// ioctl succeeds on it).
func IsTerminal(f *os.File) bool { return isTerminal(int(f.Fd())) }
