package cmd

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestUIPassesGlobalFlagsToChildRuns: the global flags given reach the
// child command lines; -o, --yes, --no-color and -v are the UI's own.
func TestUIPassesGlobalFlagsToChildRuns(t *testing.T) {
	global := pflag.NewFlagSet("g", pflag.ContinueOnError)
	global.String("state-dir", "", "")
	global.String("endpoint-url", "", "")
	global.StringP("output", "o", "table", "")
	global.Bool("yes", false, "")
	given := pflag.NewFlagSet("ui", pflag.ContinueOnError)
	given.AddFlagSet(global)
	given.Bool("read-only", false, "")
	if err := given.Parse([]string{"--state-dir", "/s", "--endpoint-url=http://127.0.0.1:1", "-o", "json", "--yes", "--read-only"}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(passedGlobalFlags(given, global), " ")
	if got != "--endpoint-url=http://127.0.0.1:1 --state-dir=/s" {
		t.Fatalf("passed %q", got)
	}
}
