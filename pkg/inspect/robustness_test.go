package inspect

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Bugs found by fuzzing, pinned.

// Decoders walked attributes in Go's random map order, so a message with
// two candidate failure types (a Spring Kafka value and key exception, two
// generic error keys) got a different failure.type — and so a different
// class and group — from run to run.
func TestDecodeIsDeterministicWithCompetingEvidence(t *testing.T) {
	attrs := map[string]record.Attribute{
		"kafka_dlt-exception-fqcn":     {Type: "String", Value: "org.example.ValueException"},
		"kafka_dlt-key-exception-fqcn": {Type: "String", Value: "org.example.KeyException"},
		"kafka_dlt-exception-message":  {Type: "String", Value: "value failed"},
		"x-error":                      {Type: "String", Value: "generic one"},
		"error":                        {Type: "String", Value: "generic two"},
	}
	body := `{"error":"body one","errorMessage":"body two","failure":{"code":"E1","Message":"m1","type":"T1"}}`
	var first string
	for i := 0; i < 50; i++ {
		rec := &record.Record{MessageID: "m", Body: body, Attributes: attrs}
		Decode(rec)
		b, err := MarshalRecord(rec.Failure)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = string(b)
			if rec.Failure.Type != "org.example.ValueException" {
				t.Fatalf("failure.type = %q, want the value exception (kafka_dlt-exception-fqcn sorts first)", rec.Failure.Type)
			}
			continue
		}
		if string(b) != first {
			t.Fatalf("decoding %d gave another failure:\n%s\nfirst:\n%s", i, b, first)
		}
	}
}

// A truncated or corrupt gzip part (a cut-off download) was an internal
// error ("unexpected EOF", exit 1) — sometimes without the file's name.
func TestReadRecordsDamagedGzipIsBadInput(t *testing.T) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	for i := 0; i < 50; i++ {
		gz.Write([]byte(`{"message_id":"m","body":"hello"}` + "\n"))
	}
	gz.Close()
	whole := buf.Bytes()
	corrupt := bytes.Clone(whole)
	corrupt[len(corrupt)-5] ^= 0xff // the CRC
	for name, data := range map[string][]byte{
		"header only": whole[:12],
		"cut short":   whole[:len(whole)-10],
		"bad crc":     corrupt,
	} {
		t.Run(name, func(t *testing.T) {
			err := ReadRecords(bytes.NewReader(data), "part-00001.ndjson.gz", func(*record.Record, any) error { return nil })
			if errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), "part-00001.ndjson.gz: the gzip data is damaged or cut short") {
				t.Fatalf("err = %v (exit %d), want the damaged-gzip sentence, exit 2", err, errs.Code(err))
			}
		})
	}
	n := 0
	if err := ReadRecords(bytes.NewReader(whole), "whole", func(*record.Record, any) error { n++; return nil }); err != nil || n != 50 {
		t.Fatalf("intact part: %d records, %v", n, err)
	}
}

// A filter that never ends (repeat, until, recursion) hung the run that
// held the messages; now each evaluation has a budget.
func TestEndlessExpressionIsStopped(t *testing.T) {
	defer func(b time.Duration) { exprBudget = b }(exprBudget)
	exprBudget = 100 * time.Millisecond
	rec := &record.Record{MessageID: "m", Body: `{"a":1}`}
	parsed := Decode(rec)
	for _, src := range []string{`last(range(1e18))`, `def f: f; f`, `until(false; .)`, `[repeat(1)] | length > 0`} {
		e, err := CompileExpr(src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Eval(Input(rec, parsed))
		if err == nil || !strings.Contains(err.Error(), "did not finish within 100ms") {
			t.Fatalf("%s: err = %v, want the time budget error", src, err)
		}
		if (&Filter{e}).Keep(rec, parsed) {
			t.Fatalf("%s: a stopped filter matched", src)
		}
	}
}

// A line without end (a file with no newlines, a gzip bomb) was read into
// memory whole; now a line over the bound is bad input.
func TestReadRecordsBoundsLineLength(t *testing.T) {
	defer func(n int) { maxRecordLine = n }(maxRecordLine)
	maxRecordLine = 2 << 20 // the same code path as 64 MiB, faster
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	gz.Write([]byte(`{"message_id":"m","body":"`))
	zeros := make([]byte, 1<<20)
	for i := 0; i < maxRecordLine>>20+1; i++ {
		gz.Write(zeros)
	}
	gz.Close()
	err := ReadRecords(bytes.NewReader(buf.Bytes()), "bomb.ndjson.gz", func(*record.Record, any) error { return nil })
	if errs.Code(err) != errs.ExitUsage || !strings.Contains(err.Error(), "bomb.ndjson.gz:1: a line longer than 2 MiB") {
		t.Fatalf("err = %v (exit %d)", err, errs.Code(err))
	}
	line, err := readLine(bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 100)+"\nnext"), 16), 1000)
	if err != nil || len(line) != 101 {
		t.Fatalf("readLine across buffer refills: %d bytes, %v", len(line), err)
	}
}

// Evaluations share one budget context per epoch (no allocation per
// evaluation), and an evaluation started late in an epoch still gets at
// least its budget.
func TestExpressionBudgetIsSharedAndStillHolds(t *testing.T) {
	defer func(b time.Duration) { exprBudget = b }(exprBudget)
	exprBudget = 500 * time.Millisecond
	a, b := evalContext(), evalContext()
	if a != b {
		t.Fatal("two evaluations in one epoch got different contexts")
	}
	dl, ok := a.Deadline()
	if !ok || time.Until(dl) < exprBudget {
		t.Fatalf("deadline %v is less than a budget away", time.Until(dl))
	}
	e, err := CompileExpr(`.a == 1`)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"a": 1}
	if allocs := testing.AllocsPerRun(100, func() { evalContext() }); allocs != 0 {
		t.Errorf("evalContext allocates %.0f times per evaluation", allocs)
	}
	if ok, err := e.Match(in); !ok || err != nil {
		t.Fatalf("match = %v, %v", ok, err)
	}
	<-a.Done()
	if a.Err() == nil {
		t.Fatal("a done budget context has no error")
	}
	if c := evalContext(); c == a || c.Err() != nil {
		t.Fatal("a new evaluation got an expired context")
	}
}
