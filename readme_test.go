package shale_test

import (
	"crypto/sha256"
	"encoding/hex"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
)

// readFile returns the contents of a file of the repository.
func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exampleBodies returns the body of each Example function in the file
// name, as a reader would write it at the top level: the lines between the
// braces, one tab of indentation less.
func exampleBodies(t *testing.T, name string) map[string]string {
	t.Helper()
	src := readFile(t, name)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]string{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || !strings.HasPrefix(fn.Name.Name, "Example") || fn.Body == nil {
			continue
		}
		in := src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset]
		lines := strings.Split(strings.Trim(in, "\n"), "\n")
		for i, line := range lines {
			lines[i] = strings.TrimPrefix(line, "\t")
		}
		bodies[strings.Join(lines, "\n")] = fn.Name.Name
	}
	return bodies
}

// TestReadmeGoBlocks: every ```go block of README.md is the body of an
// Example function of example_test.go with an "// Output:" comment, byte
// for byte, so go test compiles and runs the README's code and checks what
// it prints. Edit the two together.
func TestReadmeGoBlocks(t *testing.T) {
	readme := readFile(t, "README.md")
	bodies := exampleBodies(t, "example_test.go")
	blocks := regexp.MustCompile("(?s)```go\n(.*?)\n```").FindAllStringSubmatch(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```go block: this test checks nothing")
	}
	for _, b := range blocks {
		name, ok := bodies[b[1]]
		if !ok {
			t.Errorf("this ```go block of README.md is not the body of any Example in example_test.go:\n%s", b[1])
			continue
		}
		if !strings.Contains(b[1], "\n// Output:") {
			t.Errorf("README.md shows %s, which has no // Output: comment, so go test does not run it", name)
		}
	}
}

// TestReadmeInstall: the README says how to get the module and kvcli, and
// the minimum Go version that go.mod requires.
func TestReadmeInstall(t *testing.T) {
	readme := readFile(t, "README.md")
	gomod := readFile(t, "go.mod")
	mod := regexp.MustCompile(`(?m)^module (\S+)$`).FindStringSubmatch(gomod)
	gover := regexp.MustCompile(`(?m)^go (\d+\.\d+)(\.\d+)?$`).FindStringSubmatch(gomod)
	if mod == nil || gover == nil {
		t.Fatalf("go.mod lacks a module or go line:\n%s", gomod)
	}
	for _, s := range []string{
		"Go " + gover[1] + " or later",
		"go get " + mod[1] + "\n",
		"go install " + mod[1] + "/cmd/kvcli@latest",
		"The first `go run` compiles",
	} {
		if !strings.Contains(readme, s) {
			t.Errorf("README.md does not say %q", s)
		}
	}
}

// apache2SHA256 is the SHA-256 of the Apache License 2.0 text as Debian
// ships it in /usr/share/common-licenses/Apache-2.0.
const apache2SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

// TestLicense: LICENSE holds the whole Apache License 2.0, and the README
// names it.
func TestLicense(t *testing.T) {
	sum := sha256.Sum256([]byte(readFile(t, "LICENSE")))
	if got := hex.EncodeToString(sum[:]); got != apache2SHA256 {
		t.Errorf("LICENSE has SHA-256 %s, not that of the Apache License 2.0 text (%s)", got, apache2SHA256)
	}
	readme := readFile(t, "README.md")
	if !strings.Contains(readme, "Apache License 2.0") || !strings.Contains(readme, "(LICENSE)") {
		t.Error("README.md does not name the licence and link LICENSE")
	}
}
