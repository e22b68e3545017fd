package cmd

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// brokerPackages are the broker packages only the factory and the flags
// files may import (docs/brokers.md, "Adding a broker"): every other cmd
// file reaches a broker through pkg/broker (Endpoint, Capabilities and
// the optional interfaces the domain asks for).
var brokerPackages = map[string]bool{
	"github.com/dlqctl/dlqctl/pkg/broker/sqs":   true,
	"github.com/dlqctl/dlqctl/pkg/broker/amqp":  true,
	"github.com/dlqctl/dlqctl/pkg/broker/kafka": true,
	// SQS DLQs fed by Lambda, SNS and EventBridge (redrive --to source).
	"github.com/dlqctl/dlqctl/pkg/broker/sqs/origins": true,
}

// brokerImporters may import the broker packages: the factory (factory*.go;
// its table of openers keyed by Ref.Broker, and the completion sources)
// and the flags files (each fills its broker's Config).
var brokerImporters = map[string]bool{
	"factory.go":          true,
	"factory_complete.go": true,
	"factory_health.go":   true,
	"factory_kafka.go":    true,
	"flags_amqp.go":       true,
	"flags_kafka.go":      true,
}

// stillImporting lists command files allowed to import a broker package
// for a while, when a change cannot yet reach it through pkg/broker. It is
// empty: every command goes through the factory. The list only shrinks:
// the test fails when a file here no longer imports a broker package and
// when a file not here (nor a factory or flags file) starts to.
var stillImporting = map[string]bool{}

func TestOnlyTheFactoryAndFlagsFilesImportBrokerPackages(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	importing := map[string][]string{}
	seen := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		seen[name] = true
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if brokerPackages[path] {
				importing[name] = append(importing[name], path)
			}
		}
	}
	if len(seen) < 20 {
		t.Fatalf("found only %d non-test files in cmd: run the test from the cmd directory", len(seen))
	}
	var names []string
	for name := range importing {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !brokerImporters[name] && !stillImporting[name] {
			t.Errorf("cmd/%s imports %s: only the factory and the flags files know the broker packages; reach the broker through broker.Endpoint, its Capabilities or an optional interface in pkg/broker", name, strings.Join(importing[name], ", "))
		}
	}
	for name := range stillImporting {
		switch {
		case !seen[name]:
			t.Errorf("cmd/%s is in stillImporting but does not exist: remove it from the list", name)
		case len(importing[name]) == 0:
			t.Errorf("cmd/%s no longer imports a broker package: remove it from stillImporting (the list only shrinks)", name)
		}
	}
	for name := range brokerImporters {
		if !seen[name] {
			t.Errorf("cmd/%s is an allowed broker importer but does not exist: update brokerImporters", name)
		}
	}
}
