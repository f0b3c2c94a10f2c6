//go:build !unix

package memtable

func processCPU() int64 { return 0 }
