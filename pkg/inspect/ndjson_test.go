package inspect

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dlqctl/dlqctl/pkg/record"
)

func numberedNDJSON(n, badAt int) []byte {
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		if i == badAt {
			b.WriteString(`{"message_id":"broken",` + "\n")
			continue
		}
		fmt.Fprintf(&b, `{"message_id":"m-%d","body":"{\"n\":%d,\"error\":\"timeout after %dms\"}","system":{"receive_count":%d}}`+"\n", i, i, i, i%5)
		if i%97 == 0 {
			b.WriteString("\n   \n") // blank lines count as lines
		}
	}
	return b.Bytes()
}

// TestReadRecordsInOrder: however many decoders, fn sees every record once,
// in input order, with what Prepare returned for it; a bad line stops the
// read after every record before it with the line's number; an error from
// fn stops it at once; no goroutine is left behind.
func TestReadRecordsInOrder(t *testing.T) {
	before := runtime.NumGoroutine()
	const n = 2000
	data := numberedNDJSON(n, 0)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	for _, workers := range []int{1, 2, 7} {
		for name, in := range map[string][]byte{"plain": data, "gzip": gz.Bytes()} {
			t.Run(fmt.Sprintf("%s-%d", name, workers), func(t *testing.T) {
				next := 1
				opt := ReadOptions{Workers: workers, Prepare: func(rec *record.Record, parsed any) any {
					return rec.MessageID + fmt.Sprint(parsed.(map[string]any)["n"])
				}}
				err := ReadRecordsWith(bytes.NewReader(in), "in", opt, func(rec *record.Record, parsed, prep any) error {
					want := fmt.Sprintf("m-%d", next)
					if rec.MessageID != want || prep != fmt.Sprintf("%s%d", want, next) || rec.System.ReceiveCount != next%5 {
						return fmt.Errorf("got %s (prepared %v), want %s", rec.MessageID, prep, want)
					}
					next++
					return nil
				})
				if err != nil || next != n+1 {
					t.Fatalf("read up to %d: %v", next-1, err)
				}
			})
		}
	}

	// A bad line at record 1500: line number counts the blank lines.
	bad := numberedNDJSON(n, 1500)
	line := bytes.Count(bad[:bytes.Index(bad, []byte(`"broken"`))], []byte("\n")) + 1
	seen := 0
	err := ReadRecordsWith(bytes.NewReader(bad), "bad.ndjson", ReadOptions{Workers: 3}, func(*record.Record, any, any) error { seen++; return nil })
	if seen != 1499 || err == nil || !strings.Contains(err.Error(), fmt.Sprintf("bad.ndjson:%d: not a message record", line)) {
		t.Fatalf("bad line %d: fn saw %d records, error %v", line, seen, err)
	}

	// fn stops the read.
	stop := errors.New("stop")
	seen = 0
	err = ReadRecordsWith(bytes.NewReader(data), "in", ReadOptions{Workers: 2}, func(*record.Record, any, any) error {
		if seen++; seen == 700 {
			return stop
		}
		return nil
	})
	if err != stop || seen != 700 {
		t.Fatalf("stopped at %d: %v", seen, err)
	}

	// A cut-off gzip stream: the records before the damage, then a
	// bad-input error.
	cut := gz.Bytes()[:gz.Len()/2]
	seen = 0
	err = ReadRecordsWith(bytes.NewReader(cut), "part.gz", ReadOptions{}, func(*record.Record, any, any) error { seen++; return nil })
	if seen == 0 || seen >= n || err == nil || !strings.Contains(err.Error(), "damaged or cut short") {
		t.Fatalf("cut gzip: %d records, %v", seen, err)
	}

	// A pipe with more to come (tail -f … | dlqctl … --from -): stopping
	// after 5 records, or at a bad line, returns at once although the
	// reading goroutine is blocked reading; it ends when the pipe does.
	for _, c := range []struct {
		lines, badAt int
		stopAt       int
	}{{lines: 10, stopAt: 5}, {lines: 10, badAt: 3}} {
		pr, pw := io.Pipe()
		go pw.Write(numberedNDJSON(c.lines, c.badAt))
		errc := make(chan error, 1)
		seen := 0
		go func() {
			errc <- ReadRecordsWith(pr, "stdin", ReadOptions{}, func(*record.Record, any, any) error {
				if seen++; seen == c.stopAt {
					return stop
				}
				return nil
			})
		}()
		select {
		case err := <-errc:
			if c.stopAt > 0 && (err != stop || seen != c.stopAt) || c.badAt > 0 && (seen != c.badAt-1 || err == nil || !strings.Contains(err.Error(), "stdin:3: not a message record")) {
				t.Fatalf("pipe %+v: %d records, %v", c, seen, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("pipe %+v: still reading after %d records: the read waits for input it does not need", c, seen)
		}
		pw.Close()
	}

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Fatalf("%d goroutines left running (%d before)", g, before)
	}
}
