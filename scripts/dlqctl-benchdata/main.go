// Command dlqctl-benchdata writes an offline NDJSON file of real-format
// dead-letter records (see internal/benchdata) for measuring
// `dlqctl classify --from` and `dlqctl group --from`; no server is needed.
//
//	go run ./scripts/dlqctl-benchdata --records 100000 > /tmp/dlq-100k.ndjson
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/dlqctl/dlqctl/internal/benchdata"
	"github.com/dlqctl/dlqctl/internal/corpus"
)

func main() {
	fs := flag.NewFlagSet("dlqctl-benchdata", flag.ContinueOnError)
	n := fs.Int("records", 100_000, "number of records to write")
	dir := fs.String("corpus", corpus.Dir("."), "triage corpus directory (run from the repository root)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tpl, err := benchdata.Templates(*dir, now)
	if err == nil {
		err = benchdata.Write(os.Stdout, tpl, *n, now)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dlqctl-benchdata: %v\n", err)
		os.Exit(1)
	}
}
