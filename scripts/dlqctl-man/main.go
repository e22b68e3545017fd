// Command dlqctl-man writes dlqctl's man pages into a directory:
//
//	go run ./scripts/dlqctl-man -out man      # make man
//	man -l man/dlqctl-redrive.1
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/dlqctl/dlqctl/internal/mangen"
)

func main() {
	out := flag.String("out", "man", "directory to write the pages to (created if missing)")
	flag.Parse()
	pages, err := mangen.Generate(*out)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dlqctl-man: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d man pages in %s\n", len(pages), *out)
}
