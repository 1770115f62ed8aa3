package rinas

import "unsafe"

func uintptrOf(s []int32) uintptr { return uintptr(unsafe.Pointer(&s[0])) }
