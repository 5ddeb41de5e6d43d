package doccmd

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A cover says what runs one documented command:
//
//   - "make TARGET": the Makefile's rule TARGET runs it: the command is
//     `make TARGET ...` itself, or TARGET's recipe holds it (with $(GO) read
//     as go).
//   - "test PKG TestName": the Go test TestName of package PKG runs it; the
//     test must read the documentation's commands (call doccmd) and name,
//     as a string, the prefix it selects them by: a prefix of the command,
//     or of the first command of its block for a test that runs a block
//     whole.
type cover struct {
	cmd, by, prefix string
}

// covers is the table of every shell command of README.md and docs/*.md.
// A command added to the documentation without a line here fails
// TestEveryDocumentedCommandIsRun; so does a line whose command is gone.
var covers = []cover{
	{"make sim", "make sim", ""},
	{"make test", "make test", ""},
	{"make live-local", "make live-local", ""},
	{"make test-chaos", "make test-chaos", ""},
	{"make chaos", "make chaos", ""},
	{"make test-rules", "make test-rules", ""},

	{"go run ./cmd/simrun -list", "test ./cmd/simrun TestDocCommands", "go run ./cmd/simrun"},
	{"go run ./cmd/simrun -scenario rolling-deploy -seeds 1-20", "test ./cmd/simrun TestDocCommands", "go run ./cmd/simrun"},
	{"go run ./cmd/simrun -seed 20", "test ./cmd/simrun TestDocCommands", "go run ./cmd/simrun"},
	{"go run ./cmd/simrun -seeds 1-20 -json > runs.jsonl", "test ./cmd/simrun TestDocCommands", "go run ./cmd/simrun"},
	{"go run ./cmd/simrun -seed 1 -faults partition,crash -workers 8 -shards 40 -duration 5m", "test ./cmd/simrun TestDocCommands", "go run ./cmd/simrun"},
	{"go run ./cmd/simrun -mutation unfenced-checkpoint -seeds 1-8", "test ./cmd/simrun TestDocCommands", "go run ./cmd/simrun"},
	{"go run -tags shardlease_mutations ./cmd/simrun -mutation engine:steal-acts-at-once -assignment scan -seeds 1-8", "test ./cmd/simrun TestDocCommands", "go run -tags shardlease_mutations ./cmd/simrun"},
	{"go run ./cmd/simrun -driver -seeds 1-4", "test ./cmd/simrun TestDocCommands", "go run ./cmd/simrun"},
	{"go run -tags shardlease_mutations ./cmd/simrun -driver -mutation engine:driver-handoff-unchecked -seeds 1-4", "test ./cmd/simrun TestDocCommands", "go run -tags shardlease_mutations ./cmd/simrun"},

	{"go run ./cmd/simrun -explore -budget 3", "test ./cmd/simrun TestDocCommands", "go run ./cmd/simrun"},
	{"go run ./cmd/simrun -explore -explore-mode swarm -budget 3", "test ./cmd/simrun TestDocCommands", "go run ./cmd/simrun"},
	{"go run -tags shardlease_mutations ./cmd/simrun -explore -explore-first -mutation engine:wait-less-margin", "test ./cmd/simrun TestDocCommands", "go run -tags shardlease_mutations ./cmd/simrun"},
	// docs/soak.md's partitioned soak by hand, run whole by bash
	{"go build -o bin/simrun ./cmd/simrun", "test ./cmd/simrun TestDocSoakByHand", "go build -o bin/simrun"},
	{"for i in 0 1 2; do bin/simrun -soak -seeds 1-12 -partition $i/3 -parallel 1 -soak-dir soak-demo > soak-demo-$i.log & done; wait", "test ./cmd/simrun TestDocSoakByHand", "go build -o bin/simrun"},
	{"bin/simrun -soak-merge soak-demo", "test ./cmd/simrun TestDocSoakByHand", "go build -o bin/simrun"},
	{"make soak-partitioned SEEDS=2000 PARTS=2", "make soak-partitioned", ""},

	{"live create -region eu-west-1 -table orders-leases -stream orders -shards 4", "test ./cmd/live TestDocAWSCommands", "live create -region"},
	{"live run -region eu-west-1 -stream orders -table orders-leases -metrics-addr :9464", "test ./cmd/live TestDocAWSCommands", "live run -region"},
	{"live run -region eu-west-1 -stream orders -table orders-leases -consumer fan-out -consumer-name orders-app", "test ./cmd/live TestDocAWSCommands", "live run -region"},
	{"aws dynamodb create-table --table-name orders-leases --attribute-definitions AttributeName=leaseKey,AttributeType=S --key-schema AttributeName=leaseKey,KeyType=HASH --billing-mode PAY_PER_REQUEST", "test ./cmd/live TestDocAWSCommands", "aws "},
	{"aws kinesis create-stream --stream-name orders --shard-count 4", "test ./cmd/live TestDocAWSCommands", "aws "},

	// docs/etcd.md, against the test cluster (its endpoints for 127.0.0.1:2379)
	{"live create -store etcd -etcd-endpoints http://127.0.0.1:2379 -table orders-leases -region eu-west-1 -stream orders -shards 4", "test ./cmd/live TestDocEtcdCommands", "live create -store etcd"},
	{"live run -store etcd -etcd-endpoints http://127.0.0.1:2379 -table orders-leases -region eu-west-1 -stream orders -metrics-addr :9464", "test ./cmd/live TestDocEtcdCommands", "live run -store etcd"},

	// docs/live.md's block "by hand", run whole by bash
	{`scripts/localaws.sh start && eval "$(scripts/localaws.sh env)"`, "test ./cmd/live TestDocLocalByHand", "scripts/localaws.sh start"},
	{"go build -o bin/live ./cmd/live", "test ./cmd/live TestDocLocalByHand", "scripts/localaws.sh start"},
	{"bin/live create -table demo-leases -stream demo -shards 4", "test ./cmd/live TestDocLocalByHand", "scripts/localaws.sh start"},
	{"bin/live run -stream demo -table demo-leases -owner a -record hist -metrics-addr 127.0.0.1:9464 &", "test ./cmd/live TestDocLocalByHand", "scripts/localaws.sh start"},
	{"bin/live run -stream demo -table demo-leases -owner b -record hist -metrics-addr 127.0.0.1:9465 &", "test ./cmd/live TestDocLocalByHand", "scripts/localaws.sh start"},
	{`until curl -s 127.0.0.1:9464/metrics 127.0.0.1:9465/metrics | awk '/^shardlease_leases_held/ {n++; if ($2 != 2) bad = 1} END {exit bad || n < 2}'; do sleep 1; done`, "test ./cmd/live TestDocLocalByHand", "scripts/localaws.sh start"},
	{"bin/live produce -stream demo -rate 100 -record hist -duration 15s &", "test ./cmd/live TestDocLocalByHand", "scripts/localaws.sh start"},
	{"bin/live reshard -stream demo -record hist split shardId-000000000000", "test ./cmd/live TestDocLocalByHand", "scripts/localaws.sh start"},
	{"bin/live reshard -stream demo -record hist merge shardId-000000000002 shardId-000000000003", "test ./cmd/live TestDocLocalByHand", "scripts/localaws.sh start"},
	{"wait %3; sleep 5; kill -TERM %1 %2; wait", "test ./cmd/live TestDocLocalByHand", "scripts/localaws.sh start"},
	{"bin/live check -table demo-leases -stream demo hist", "test ./cmd/live TestDocLocalByHand", "scripts/localaws.sh start"},
	{"scripts/localaws.sh stop", "test ./cmd/live TestDocLocalByHand", "scripts/localaws.sh start"},
}

// TestEveryDocumentedCommandIsRun checks the table against the
// documentation and against what it claims: every command of README.md
// and docs/*.md has a line, every line a command, every make target exists
// and runs its command, every test exists and reads the documentation.
func TestEveryDocumentedCommandIsRun(t *testing.T) {
	root, cmds, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) < 10 {
		t.Fatalf("only %d commands found in README.md and docs/*.md: the extraction is broken", len(cmds))
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	recipes := makeRecipes(string(makefile))
	if errs := checkCovers(root, cmds, covers, recipes); len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
}

// checkCovers returns what is wrong with table against cmds.
func checkCovers(root string, cmds []Command, table []cover, recipes map[string]string) []string {
	var errs []string
	byText := map[string]cover{}
	for _, c := range table {
		byText[c.cmd] = c
	}
	for _, c := range cmds {
		if _, ok := byText[c.Text]; !ok {
			errs = append(errs, c.String()+": not in the table of internal/doccmd/coverage_test.go: add the make target or test that runs it")
		}
	}
	// blockStart: the first command of each command's block
	blockStart := map[string]string{}
	for i, c := range cmds {
		if i == 0 || cmds[i-1].File != c.File || cmds[i-1].Block != c.Block {
			blockStart[c.File+":"+strconv.Itoa(c.Block)] = c.Text
		}
	}
	for _, cv := range table {
		i := slices.IndexFunc(cmds, func(c Command) bool { return c.Text == cv.cmd })
		if i < 0 {
			errs = append(errs, "table line "+cv.cmd+": no such command in the documentation any more")
			continue
		}
		first := blockStart[cmds[i].File+":"+strconv.Itoa(cmds[i].Block)]
		f := strings.Fields(cv.by)
		switch {
		case len(f) == 2 && f[0] == "make":
			recipe, ok := recipes[f[1]]
			if !ok {
				errs = append(errs, cv.cmd+": the Makefile has no target "+f[1])
				continue
			}
			if w := strings.Fields(cv.cmd); len(w) >= 2 && w[0] == "make" && w[1] == f[1] {
				continue
			}
			if !strings.Contains(normalize(recipe), normalize(cv.cmd)) {
				errs = append(errs, cv.cmd+": target "+f[1]+"'s recipe does not run it")
			}
		case len(f) == 3 && f[0] == "test":
			if cv.prefix == "" || !strings.HasPrefix(cv.cmd, cv.prefix) && !strings.HasPrefix(first, cv.prefix) {
				errs = append(errs, cv.cmd+": its prefix "+cv.prefix+" does not start it")
			}
			if err := testReadsDocs(filepath.Join(root, f[1]), f[2], cv.prefix); err != "" {
				errs = append(errs, cv.cmd+": "+err)
			}
		default:
			errs = append(errs, cv.cmd+": want \"make TARGET\" or \"test PKG TestName\", got "+cv.by)
		}
	}
	return errs
}

// testReadsDocs checks that package dir has func name(t *testing.T) in a
// _test.go file, that it calls doccmd and names prefix as a string.
func testReadsDocs(dir, name, prefix string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	fset := token.NewFileSet()
	for _, p := range files {
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err.Error()
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name != name || fn.Recv != nil {
				continue
			}
			callsDoccmd, namesPrefix := false, false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.SelectorExpr:
					if id, ok := x.X.(*ast.Ident); ok && id.Name == "doccmd" {
						callsDoccmd = true
					}
				case *ast.BasicLit:
					if x.Kind == token.STRING && strings.Trim(x.Value, "`\"") == prefix {
						namesPrefix = true
					}
				}
				return true
			})
			switch {
			case !callsDoccmd:
				return name + " does not read the documentation (no doccmd call)"
			case !namesPrefix:
				return name + " does not select commands by " + prefix
			}
			return ""
		}
	}
	return "no func " + name + " in " + dir
}

var makeRule = regexp.MustCompile(`^([A-Za-z0-9_.-]+):`)

// makeRecipes returns each rule's recipe (its tab-indented lines, joined).
func makeRecipes(makefile string) map[string]string {
	out := map[string]string{}
	cur := ""
	for _, l := range strings.Split(makefile, "\n") {
		if m := makeRule.FindStringSubmatch(l); m != nil && !strings.Contains(l, ":=") && !strings.HasPrefix(l, ".PHONY") {
			cur = m[1]
			out[cur] += ""
			continue
		}
		if strings.HasPrefix(l, "\t") && cur != "" {
			out[cur] += strings.TrimSuffix(strings.TrimSpace(l), `\`) + " "
			continue
		}
		if strings.TrimSpace(l) == "" || !strings.HasPrefix(l, "#") {
			cur = ""
		}
	}
	return out
}

// normalize reads $(GO) as go and collapses whitespace.
func normalize(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "$(GO)", "go")), " ")
}

// TestCheckCoversFails shows the check failing on each kind of bad table.
func TestCheckCoversFails(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	cmds := []Command{{File: "README.md", Line: 1, Text: "make sim"}, {File: "README.md", Line: 2, Text: "go run ./cmd/simrun -seed 20"}}
	recipes := map[string]string{"sim": "$(GO) run ./cmd/simrun ", "report-example": "$(GO) run ./cmd/simrun -seed 20 -out reports/example "}
	good := []cover{{"make sim", "make sim", ""}, {"go run ./cmd/simrun -seed 20", "make report-example", ""}}
	if errs := checkCovers(root, cmds, good, recipes); len(errs) > 0 {
		t.Fatalf("a good table fails: %v", errs)
	}
	for name, table := range map[string][]cover{
		"a command without a line":        good[:1],
		"a line without a command":        append(slices.Clone(good), cover{"make swarm", "make swarm", ""}),
		"a target that is not there":      {good[0], {"go run ./cmd/simrun -seed 20", "make nosuch", ""}},
		"a recipe that does not run it":   {good[0], {"go run ./cmd/simrun -seed 20", "make sim", ""}},
		"a test that is not there":        {good[0], {"go run ./cmd/simrun -seed 20", "test ./cmd/simrun TestNoSuch", "go run ./cmd/simrun"}},
		"a test that reads no docs":       {good[0], {"go run ./cmd/simrun -seed 20", "test ./cmd/simrun TestParseRange", "go run ./cmd/simrun"}},
		"a prefix the test never names":   {good[0], {"go run ./cmd/simrun -seed 20", "test ./cmd/simrun TestDocCommands", "go run ./cmd/simrun -seed"}},
		"a prefix that does not start it": {good[0], {"go run ./cmd/simrun -seed 20", "test ./cmd/simrun TestDocCommands", "make"}},
	} {
		if errs := checkCovers(root, cmds, table, recipes); len(errs) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
}
