package memtable

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"
)

// internalOnlyNote is what the package doc says when the exported API
// names types of packages under internal/, which other modules cannot
// import.
const internalOnlyNote = "usable only from inside the module github.com/shale-db/shale"

// TestExportedAPIInternalTypesDocumented finds every exported function,
// method, type and field of the package whose declaration names a type from
// a package under internal/, and requires the package doc to say that the
// package is usable only inside the module. If the API stops naming
// internal types, the note may go; while it does, the note must stay.
func TestExportedAPIInternalTypesDocumented(t *testing.T) {
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var uses []string
	var doc string
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			doc = strings.Join(strings.Fields(f.Doc.Text()), " ")
		}
		uses = append(uses, internalUses(f)...)
	}
	if len(uses) == 0 {
		t.Fatal("the exported API names no internal type: the test no longer checks anything; drop the note and this test")
	}
	if !strings.Contains(doc, internalOnlyNote) {
		t.Errorf("the exported API names internal types, but the package doc does not say %q:\n%s",
			internalOnlyNote, strings.Join(uses, "\n"))
	}
	if !strings.Contains(strings.Join(uses, "\n"), "Add: ikey.Kind") {
		t.Errorf("the scan missed Add's ikey.Kind parameter; found %v", uses)
	}
}

// internalUses lists, as "Name: pkg.Sel", each reference to an internal
// package in the declaration (signature, type, not body) of an exported
// name in f. A method counts when its receiver type is exported.
func internalUses(f *ast.File) []string {
	internal := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if strings.Contains(p, "/internal/") {
			name := path.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			internal[name] = true
		}
	}
	var out []string
	find := func(name string, n ast.Node) {
		if n == nil {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && internal[x.Name] {
					out = append(out, name+": "+x.Name+"."+sel.Sel.Name)
				}
			}
			return true
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && (d.Recv == nil || exportedRecv(d.Recv)) {
				find(d.Name.Name, d.Type)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.IsExported() {
					find(ts.Name.Name, exportedFields(ts.Type))
				}
			}
		}
	}
	return out
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	t := recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}

// exportedFields returns the part of a type declaration other packages
// see: a struct's exported fields, or the whole type expression.
func exportedFields(t ast.Expr) ast.Node {
	st, ok := t.(*ast.StructType)
	if !ok {
		return t
	}
	var fields []*ast.Field
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if n.IsExported() {
				fields = append(fields, f)
				break
			}
		}
	}
	return &ast.FieldList{List: fields}
}
