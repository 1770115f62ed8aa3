//go:build linux

package rinas

import "golang.org/x/sys/unix"

const oDirect = unix.O_DIRECT
