package inspect

import (
	"bufio"
	"bytes"
	"io"
	"runtime"
	"sync"
	"unicode"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// Batches of NDJSON lines: big enough that handing one between goroutines
// costs nothing next to decoding it, small enough that the few in flight
// per worker keep memory flat.
const (
	batchLines = 128
	batchBytes = 512 << 10
)

// lineBatch is a run of consecutive NDJSON lines and, once decoded, their
// records.
type lineBatch struct {
	buf   []byte   // the lines, back to back
	spans [][2]int // each non-blank line (trimmed) in buf
	nums  []int    // its line number
	// readErr ends the input after these lines (a read error, a line too
	// long).
	readErr error

	recs   []record.Record
	parsed []any
	prep   []any
	// bad is the index of the first line that is not a record (-1: none),
	// badErr why.
	bad    int
	badErr error
	done   chan struct{}
}

var batchBufs = sync.Pool{New: func() any { return new([]byte) }}

// readNDJSON is the NDJSON half of ReadRecordsWith: a reader goroutine cuts
// br into batches, opt.Workers goroutines decode them, and the calling
// goroutine passes the records to fn in order. done is called by the
// reader goroutine when it stops reading.
//
// When the read ends early (fn returns an error, a bad line), readNDJSON
// returns once the decoders have stopped, without waiting for the reader:
// it may be blocked reading a pipe that has more to come (`tail -f … |
// dlqctl classify --from - --sample 10`), as the one-line-at-a-time reader
// never was. It stops at its next hand-over; the caller may close r
// meanwhile (files and HTTP bodies allow Close during Read).
func readNDJSON(br *bufio.Reader, name string, readErr func(error) error, opt ReadOptions, done func(), fn func(rec *record.Record, parsed, prepared any) error) error {
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	quit := make(chan struct{})
	order := make(chan *lineBatch, 2*workers)
	work := make(chan *lineBatch, 2*workers)
	go func() {
		defer close(order)
		defer close(work)
		defer done()
		readBatches(br, name, readErr, quit, order, work)
	}()
	var wg sync.WaitGroup
	wg.Add(workers)
	for range workers {
		go func() {
			defer wg.Done()
			for {
				select {
				case b, ok := <-work:
					if !ok {
						return
					}
					decodeBatch(b, name, opt.Prepare)
					close(b.done)
				case <-quit:
					return
				}
			}
		}()
	}
	err := deliver(order, fn)
	close(quit)
	wg.Wait()
	return err
}

// deliver hands the decoded records of each batch to fn in input order.
func deliver(order <-chan *lineBatch, fn func(rec *record.Record, parsed, prepared any) error) error {
	for b := range order {
		<-b.done
		n := len(b.recs)
		if b.bad >= 0 {
			n = b.bad
		}
		for i := range n {
			if err := fn(&b.recs[i], b.parsed[i], b.prep[i]); err != nil {
				return err
			}
		}
		if b.bad >= 0 {
			return b.badErr
		}
		if b.readErr != nil {
			return b.readErr
		}
		buf := b.buf[:0]
		batchBufs.Put(&buf)
	}
	return nil
}

// readBatches reads br to the end (or until quit closes), sending each
// batch to order (for delivery) and work (for decoding).
func readBatches(br *bufio.Reader, name string, readErr func(error) error, quit <-chan struct{}, order, work chan<- *lineBatch) {
	line := 0
	for {
		b := &lineBatch{bad: -1, done: make(chan struct{})}
		b.buf = (*batchBufs.Get().(*[]byte))[:0]
		eof := false
		for len(b.spans) < batchLines && len(b.buf) < batchBytes {
			if len(b.spans) > 0 && br.Buffered() == 0 {
				// Reading on would wait for input (a pipe, a slow
				// download): hand over what is here first.
				break
			}
			start := len(b.buf)
			var err error
			b.buf, err = appendLine(b.buf, br, maxRecordLine)
			if err == errLineTooLong {
				b.buf = b.buf[:start]
				b.readErr = errs.BadInputf("%s:%d: a line longer than %d MiB is not a message record (SQS bodies are at most 1 MiB); pass NDJSON message records", name, line+1, maxRecordLine>>20)
				break
			}
			if err != nil && err != io.EOF {
				// The stream broke inside this line: say why, not that
				// the cut-off line is not a record.
				b.buf = b.buf[:start]
				b.readErr = readErr(err)
				break
			}
			if len(b.buf) > start {
				line++
				raw := b.buf[start:]
				if t := bytes.TrimSpace(raw); len(t) > 0 {
					// t is raw without leading and trailing (Unicode)
					// space, as TrimSpace defines it.
					off := start + len(raw) - len(bytes.TrimLeftFunc(raw, unicode.IsSpace))
					b.spans = append(b.spans, [2]int{off, off + len(t)})
					b.nums = append(b.nums, line)
				}
			}
			if err == io.EOF {
				eof = true
				break
			}
		}
		if len(b.spans) == 0 && b.readErr == nil {
			if eof {
				return
			}
			continue
		}
		select {
		case order <- b:
		case <-quit:
			close(b.done)
			return
		}
		select {
		case work <- b:
		case <-quit:
			close(b.done)
			return
		}
		if eof || b.readErr != nil {
			return
		}
	}
}

// decodeBatch decodes the lines of b into records, stopping at the first
// line that is not a record.
func decodeBatch(b *lineBatch, name string, prepare func(*record.Record, any) any) {
	n := len(b.spans)
	b.recs = make([]record.Record, n)
	b.parsed = make([]any, n)
	b.prep = make([]any, n)
	for i, sp := range b.spans {
		rec := &b.recs[i]
		if err := unmarshalRecord(b.buf[sp[0]:sp[1]], rec); err != nil {
			b.bad, b.badErr = i, errs.BadInputf("%s:%d: not a message record (%v); pass NDJSON as written by `dlqctl sample -o ndjson` or an archive part", name, b.nums[i], err)
			return
		}
		if rec.MessageID == "" && rec.Body == "" {
			b.bad, b.badErr = i, errs.BadInputf("%s:%d: record has neither message_id nor body; pass NDJSON message records", name, b.nums[i])
			return
		}
		fill(rec)
		b.parsed[i] = Decode(rec)
		if prepare != nil {
			b.prep[i] = prepare(rec, b.parsed[i])
		}
	}
}
