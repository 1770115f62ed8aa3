package ring

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

const unsafeSizeofIovec = unsafe.Sizeof(unix.Iovec{})

func iovecAt(mem []byte, i int) *unix.Iovec {
	return (*unix.Iovec)(unsafe.Pointer(&mem[uintptr(i)*unsafeSizeofIovec]))
}

func unsafeIovecs(mem []byte, i int) []unix.Iovec {
	return unsafe.Slice(iovecAt(mem, i), 1)
}
