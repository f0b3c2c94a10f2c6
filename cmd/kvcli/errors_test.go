package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestModulePackages: modulePackages names every package of the module,
// so that errorLine drops each one's message prefix.
func TestModulePackages(t *testing.T) {
	root := filepath.Join("..", "..")
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil || d.Name() == "testdata" {
				return filepath.SkipDir // another module
			}
		}
		if d.IsDir() || filepath.Ext(path) != ".go" {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		if name := f.Name.Name; name != "main" && !seen[name] && !isTestPackage(name) {
			seen[name] = true
			if !slices.Contains(modulePackages, name) {
				t.Errorf("package %s (%s) is missing from modulePackages", name, filepath.Dir(path))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 10 {
		t.Fatalf("found only %d packages: %v", len(seen), seen)
	}
}

func isTestPackage(name string) bool {
	return len(name) > 5 && name[len(name)-5:] == "_test"
}
