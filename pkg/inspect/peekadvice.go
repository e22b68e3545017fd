package inspect

import (
	"io"
	"os"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// PeekAdvice is what reading ep without consuming it changes, in the
// broker's words, to say before reading: a broker.PeekWarner's warnings
// (SQS's receive counts and FIFO group locks), then a broker.PeekChecker's
// warnings and notes (RabbitMQ's quorum delivery counts). When the checker
// refuses the peek, err is its refusal (bad input: exit 2) and the advice
// holds the warnings gathered before it.
func PeekAdvice(ep broker.Endpoint) (broker.PeekAdvice, error) {
	var adv broker.PeekAdvice
	if w, ok := ep.(broker.PeekWarner); ok {
		adv.Warnings = append(adv.Warnings, w.PeekWarnings()...)
	}
	if c, ok := ep.(broker.PeekChecker); ok {
		a, err := c.CheckPeek()
		if err != nil {
			return adv, errs.BadInput(err)
		}
		adv.Warnings = append(adv.Warnings, a.Warnings...)
		adv.Notes = append(adv.Notes, a.Notes...)
	}
	return adv, nil
}

// ReadFile reads the message records of the NDJSON (or JSON) file at path,
// or of stdin when path is "-", through ReadRecordsWith. A file that
// cannot be opened is bad input (exit 2) naming what --from takes.
func ReadFile(path string, stdin io.Reader, opt ReadOptions, fn func(rec *record.Record, parsed, prepared any) error) error {
	if path == "-" {
		return ReadRecordsWith(stdin, "stdin", opt, fn)
	}
	fh, err := os.Open(path)
	if err != nil {
		return errs.BadInputf("cannot read --from %s: %v; pass an NDJSON file of message records or - for stdin", path, err)
	}
	defer fh.Close()
	return ReadRecordsWith(fh, path, opt, fn)
}
