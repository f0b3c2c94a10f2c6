//go:build !linux

package vfs

func appendTo(File) (Appender, error) { return nil, nil }
