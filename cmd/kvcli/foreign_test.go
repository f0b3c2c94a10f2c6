package main

import (
	"os"
	"path/filepath"
	"testing"
)

// put does not turn a directory that is not a database into one.
func TestPutRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	want(t, 3, `holds "notes.txt", which no database writes`, "--db", dir, "put", "k", "v")
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("put left %d entries in a foreign directory, want the one", len(ents))
	}
}
