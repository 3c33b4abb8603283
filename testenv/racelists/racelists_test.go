// Package racelists checks that the race step of .ci/run names every test
// that starts goroutines of its own in the packages it runs by name
// (processors/scheduler, store, cmd/chronos, schedule, and processors with
// processors/faults and processors/heldwrites under one list): the step
// runs only those there, so a new such test left out of its list would never
// run under the race detector. It also checks that the package the step
// leaves out as pure functions (codecs) starts none in its tests.
package racelists

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// lists maps each package directory to the shell variable of .ci/run that
// holds its -run pattern.
var lists = map[string]string{
	"processors/scheduler":  "race_scheduler",
	"store":                 "race_store",
	"cmd/chronos":           "race_cmd",
	"schedule":              "race_schedule",
	"processors":            "race_processors",
	"processors/faults":     "race_processors",
	"processors/heldwrites": "race_processors",
}

func TestRaceListsNameEveryTestThatStartsGoroutines(t *testing.T) {
	root := filepath.Join("..", "..")
	script, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	for dir, name := range lists {
		m := regexp.MustCompile(`(?m)^` + name + `='([^']*)'$`).FindSubmatch(script)
		if m == nil {
			t.Errorf(".ci/run: no line %s='...' (the -run pattern of %s)", name, dir)
			continue
		}
		pattern := regexp.MustCompile(string(m[1]))
		found := goroutineTests(t, filepath.Join(root, dir))
		if len(found) == 0 {
			t.Errorf("%s: no test starts a goroutine: the reader is broken, or the list is not needed", dir)
		}
		for _, test := range found {
			if !pattern.MatchString(test) {
				t.Errorf("%s: %s starts goroutines but .ci/run's %s does not name it: it would never run under -race", dir, test, name)
			}
		}
	}
}

// TestPureDirsStartNoGoroutines: .ci/run leaves codecs out of its race
// step because neither its code nor its tests start a goroutine; a test
// that starts one would need the race detector again.
func TestPureDirsStartNoGoroutines(t *testing.T) {
	for _, dir := range []string{"codecs"} {
		if found := goroutineTests(t, filepath.Join("..", "..", dir)); len(found) > 0 {
			t.Errorf("%s: %v start goroutines: .ci/run's race step leaves %s out (put it back, or name those tests there)", dir, found, dir)
		}
	}
}

// goroutineTests returns the tests of dir whose body has a go statement or
// uses a sync.WaitGroup or an errgroup.
func goroutineTests(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if buildTags(file) != "" {
			continue // behind a build tag: not in the race step's go test
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			if startsGoroutines(fn.Body) {
				out = append(out, fn.Name.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

func startsGoroutines(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			found = true
		case *ast.SelectorExpr:
			if n.Sel.Name == "WaitGroup" {
				found = true
			}
		case *ast.Ident:
			if n.Name == "errgroup" {
				found = true
			}
		}
		return !found
	})
	return found
}

// buildTags returns the //go:build line of file, if any.
func buildTags(file *ast.File) string {
	for _, g := range file.Comments {
		if g.Pos() > file.Package {
			break
		}
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, "//go:build ") {
				return c.Text
			}
		}
	}
	return ""
}
