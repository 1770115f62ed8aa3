package main

import (
	"io"
)

func runCompare(args []string, stdout, stderr io.Writer) error { return nil }
