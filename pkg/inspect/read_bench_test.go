package inspect_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/internal/benchdata"
	"github.com/dlqctl/dlqctl/internal/corpus"
	"github.com/dlqctl/dlqctl/pkg/classify"
	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// realFormatLines returns n real-format record lines (internal/benchdata).
func realFormatLines(b *testing.B, n int) [][]byte {
	b.Helper()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tpl, err := benchdata.Templates(corpus.Dir("../.."), now)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := benchdata.Write(&buf, tpl, n, now); err != nil {
		b.Fatal(err)
	}
	return bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
}

func benchLines(b *testing.B, lines [][]byte, unit string, fn func(l []byte) error) {
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			if err := fn(l); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(lines)*b.N)/b.Elapsed().Seconds(), unit)
}

// BenchmarkUnmarshalRecord compares reading a record line with
// encoding/json (what ReadRecords did) and with the lazy record reader, on
// one core. Other JSON libraries were measured the same way (see
// recordjson.go).
func BenchmarkUnmarshalRecord(b *testing.B) {
	lines := realFormatLines(b, 3000)
	b.Run("encoding-json", func(b *testing.B) {
		benchLines(b, lines, "records/s", func(l []byte) error { var r record.Record; return json.Unmarshal(l, &r) })
	})
	b.Run("lazy", func(b *testing.B) {
		benchLines(b, lines, "records/s", func(l []byte) error { var r record.Record; return inspect.UnmarshalRecordForTest(l, &r) })
	})
}

// BenchmarkParseBody compares parsing the JSON bodies of real-format
// records into an any tree with encoding/json and with parseValue.
func BenchmarkParseBody(b *testing.B) {
	var bodies [][]byte
	for _, l := range realFormatLines(b, 3000) {
		var r record.Record
		if err := json.Unmarshal(l, &r); err != nil {
			b.Fatal(err)
		}
		if json.Valid([]byte(r.Body)) {
			bodies = append(bodies, []byte(r.Body))
		}
	}
	b.Run("encoding-json", func(b *testing.B) {
		benchLines(b, bodies, "bodies/s", func(l []byte) error { var v any; return json.Unmarshal(l, &v) })
	})
	b.Run("parseValue", func(b *testing.B) {
		benchLines(b, bodies, "bodies/s", func(l []byte) error {
			if _, ok := inspect.ParseValueForTest(l); !ok {
				b.Fatalf("not parsed: %.100s", l)
			}
			return nil
		})
	})
}

// BenchmarkReadRealFormats: ReadRecords over 100k real-format records,
// classified with the built-in rules on the decoding goroutines (what
// classify --from --summary does), in records/s.
func BenchmarkReadRealFormats(b *testing.B) {
	data := bytes.Join(realFormatLines(b, benchRecords), []byte("\n"))
	sel, err := classify.NewSelector(classify.Builtin(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		opt := inspect.ReadOptions{Prepare: func(rec *record.Record, parsed any) any {
			ok, _ := sel.Select(rec, parsed)
			return ok
		}}
		if err := inspect.ReadRecordsWith(bytes.NewReader(data), "bench", opt, func(rec *record.Record, parsed, matched any) error {
			n++
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if n != benchRecords {
			b.Fatalf("read %d", n)
		}
	}
	b.ReportMetric(float64(benchRecords*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkRealFormatStages splits the per-record work of classify --from
// into its stages, on one goroutine, over 6,000 real-format records: read
// the line (unmarshal), then decode it, then classify it with the built-in
// rules (each sub-benchmark includes the stages before it). It says where
// to look first: profile one with -cpuprofile.
func BenchmarkRealFormatStages(b *testing.B) {
	lines := realFormatLines(b, 6000)
	rules := classify.Builtin()
	read := func(l []byte, r *record.Record) error {
		*r = record.Record{}
		return inspect.UnmarshalRecordForTest(l, r)
	}
	var rec record.Record
	b.Run("unmarshal", func(b *testing.B) {
		benchLines(b, lines, "records/s", func(l []byte) error { return read(l, &rec) })
	})
	b.Run("decode", func(b *testing.B) {
		benchLines(b, lines, "records/s", func(l []byte) error {
			err := read(l, &rec)
			inspect.Decode(&rec)
			return err
		})
	})
	b.Run("classify", func(b *testing.B) {
		benchLines(b, lines, "records/s", func(l []byte) error {
			err := read(l, &rec)
			rules.Classify(&rec, inspect.Decode(&rec))
			return err
		})
	})
}
