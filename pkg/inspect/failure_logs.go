package inspect

import "github.com/dlqctl/dlqctl/pkg/record"

// FormatLogs is failure.format for failure context that dlqctl found in the
// consumer's CloudWatch Logs (--logs) rather than in the message itself.
const FormatLogs = "logs"

// BuildFailure collects failure evidence with the rules every format
// decoder follows (texts trimmed, capped and de-duplicated; the first type,
// message and class fill failure.type, .reason and .error_class; stack
// traces give their root causes) and returns the failure with format set.
// fill calls d.Evidence and d.StackEvidence only; d has no record.
func BuildFailure(format string, fill func(d *Decoding)) *record.Failure {
	d := &Decoding{}
	fill(d)
	f := d.fail
	f.Format = format
	return &f
}

// SplitTypeMessage splits "pkg.SomeError: message" into the exception type
// and the message ("" for the type when the text does not start with one).
func SplitTypeMessage(s string) (typ, msg string) { return splitTypeMessage(s) }

// keepExternalFailure restores failure context found outside the message
// (failure.source: the consumer's logs, attached by --logs and written to
// NDJSON by `sample -o ndjson`) when decoding the message itself found
// none, so offline input keeps what an earlier --logs run found.
func keepExternalFailure(rec *record.Record, prev *record.Failure) {
	if prev == nil || prev.Source == nil || rec.Failure.HasContext() {
		return
	}
	rec.Failure = prev
}
