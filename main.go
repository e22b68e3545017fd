// Command dlqctl triages, redrives and archives AWS SQS dead-letter queues.
package main

import (
	"os"

	"github.com/dlqctl/dlqctl/cmd"
)

func main() { os.Exit(cmd.Main()) }
