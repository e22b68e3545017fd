package inspect

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// ReadRecords streams message records from r: NDJSON (one record a line),
// or a JSON array as printed by `sample -o json`, optionally gzip-compressed.
// Each record is decoded (envelope, failure) before fn sees it. name is used
// in error messages. Unreadable input is a bad-input error with the line.
//
// fn sees the records one at a time, in input order, on the calling
// goroutine; NDJSON lines are read and decoded ahead on other goroutines
// (see ReadRecordsWith). rec is valid only during the call.
func ReadRecords(r io.Reader, name string, fn func(rec *record.Record, parsed any) error) error {
	return ReadRecordsWith(r, name, ReadOptions{}, func(rec *record.Record, parsed, _ any) error { return fn(rec, parsed) })
}

// ReadOptions tune ReadRecordsWith.
type ReadOptions struct {
	// Workers is how many goroutines decode NDJSON lines in parallel
	// (default GOMAXPROCS).
	Workers int
	// Prepare, when set, runs on the decoding goroutines right after a
	// record is decoded, concurrently for different records (it must be
	// safe for that), and what it returns is passed to fn with the record:
	// the per-record work of a command (classification, group keys) then
	// runs in parallel too. Prepare may change the record.
	Prepare func(rec *record.Record, parsed any) any
	// Reference reads NDJSON the way ReadRecords did before it read in
	// parallel: one line at a time on the calling goroutine, each record
	// and body with encoding/json. It is slower and gives the same
	// results; tests compare the two.
	Reference bool
}

// ReadRecordsWith is ReadRecords with options; fn also gets what
// opt.Prepare returned for the record (nil without Prepare).
//
// NDJSON is read as an ordered fan-out and fan-in: one goroutine reads
// (and gunzips) the input and cuts it into batches of whole lines, the
// workers decode batches in parallel, and the calling goroutine hands the
// records to fn in input order. At most a few batches per worker are in
// flight, so memory stays flat however long the input is. A bad line
// stops the read after fn has seen every record before it, as a
// sequential read would.
func ReadRecordsWith(r io.Reader, name string, opt ReadOptions, fn func(rec *record.Record, parsed, prepared any) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	zipped := false
	// closeGzip releases the gzip reader; the parallel NDJSON reader's
	// reading goroutine calls it (it may outlive this call, see
	// readNDJSON).
	closeGzip := func() {}
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return errs.BadInputf("%s: not a readable gzip file (%v); pass an NDJSON file of message records", name, err)
		}
		closeGzip = func() { gz.Close() }
		br = bufio.NewReaderSize(gz, 1<<20)
		zipped = true
	}
	handedOver := false
	defer func() {
		if !handedOver {
			closeGzip()
		}
	}()
	// readErr names the input; damaged compressed data is bad input (a
	// truncated download, a cut-off part), not an internal error.
	readErr := func(err error) error {
		if zipped && isDamagedGzip(err) {
			return errs.BadInputf("%s: the gzip data is damaged or cut short (%v); download the file again or pass an intact part", name, err)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	// Skip leading whitespace to see whether this is an array.
	for {
		b, err := br.Peek(1)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return readErr(err)
		}
		if b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t' {
			_, _ = br.ReadByte()
			continue
		}
		if b[0] == '[' {
			return readArray(br, name, zipped, opt.Prepare, fn)
		}
		break
	}
	if opt.Reference {
		return readNDJSONReference(br, name, readErr, opt.Prepare, fn)
	}
	handedOver = true
	return readNDJSON(br, name, readErr, opt, closeGzip, fn)
}

// readNDJSONReference is the sequential encoding/json reader (see
// ReadOptions.Reference).
func readNDJSONReference(br *bufio.Reader, name string, readErr func(error) error, prepare func(*record.Record, any) any, fn func(rec *record.Record, parsed, prepared any) error) error {
	line := 0
	for {
		raw, err := readLine(br, maxRecordLine)
		if err == errLineTooLong {
			return errs.BadInputf("%s:%d: a line longer than %d MiB is not a message record (SQS bodies are at most 1 MiB); pass NDJSON message records", name, line+1, maxRecordLine>>20)
		}
		if err != nil && err != io.EOF {
			return readErr(err)
		}
		if len(raw) > 0 {
			line++
			if raw = bytes.TrimSpace(raw); len(raw) > 0 {
				var rec record.Record
				if jerr := json.Unmarshal(raw, &rec); jerr != nil {
					return errs.BadInputf("%s:%d: not a message record (%v); pass NDJSON as written by `dlqctl sample -o ndjson` or an archive part", name, line, jerr)
				}
				if rec.MessageID == "" && rec.Body == "" {
					return errs.BadInputf("%s:%d: record has neither message_id nor body; pass NDJSON message records", name, line)
				}
				fill(&rec)
				parsed := decodeReference(&rec)
				var prep any
				if prepare != nil {
					prep = prepare(&rec, parsed)
				}
				if ferr := fn(&rec, parsed, prep); ferr != nil {
					return ferr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// decodeReference is Decode with the body parsed by encoding/json (and
// handed to Decode's formats as that tree).
func decodeReference(rec *record.Record) any {
	var parsed any
	if t := strings.TrimSpace(rec.Body); t != "" && (t[0] == '{' || t[0] == '[') {
		if json.Unmarshal([]byte(t), &parsed) != nil {
			parsed = nil
		}
	}
	return decodeParsed(rec, parsed)
}

// maxRecordLine bounds one NDJSON line: a record holds at most a 1 MiB body
// (up to 6 MiB JSON-escaped) plus its decoded payload and attributes, far
// below this. Without a bound a file without newlines (or a gzip bomb)
// would be read into memory whole.
var maxRecordLine = 64 << 20

var errLineTooLong = errors.New("line too long")

// readLine is br.ReadBytes('\n') that gives up with errLineTooLong after
// max bytes.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	return appendLine(nil, br, max)
}

// appendLine appends the next line of br (with its '\n') to dst; it gives
// up with errLineTooLong when the line is longer than max bytes.
func appendLine(dst []byte, br *bufio.Reader, max int) ([]byte, error) {
	n := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if n+len(chunk) > max {
			return dst, errLineTooLong
		}
		n += len(chunk)
		dst = append(dst, chunk...)
		if err != bufio.ErrBufferFull {
			return dst, err
		}
	}
}

// isDamagedGzip reports whether err comes from corrupt or truncated gzip
// data.
func isDamagedGzip(err error) bool {
	var corrupt flate.CorruptInputError
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.As(err, &corrupt)
}

func readArray(r io.Reader, name string, zipped bool, prepare func(*record.Record, any) any, fn func(rec *record.Record, parsed, prepared any) error) error {
	dec := json.NewDecoder(r)
	if _, err := dec.Token(); err != nil {
		return errs.BadInputf("%s: not a JSON array of message records (%v)", name, err)
	}
	i := 0
	for dec.More() {
		i++
		var rec record.Record
		if err := dec.Decode(&rec); err != nil {
			if zipped && isDamagedGzip(err) && !errors.Is(err, io.ErrUnexpectedEOF) {
				return errs.BadInputf("%s: the gzip data is damaged or cut short (%v); download the file again or pass an intact part", name, err)
			}
			return errs.BadInputf("%s: element %d is not a message record (%v)", name, i, err)
		}
		fill(&rec)
		parsed := Decode(&rec)
		var prep any
		if prepare != nil {
			prep = prepare(&rec, parsed)
		}
		if err := fn(&rec, parsed, prep); err != nil {
			return err
		}
	}
	return nil
}

// fill recomputes derived fields a hand-written record may lack.
func fill(rec *record.Record) {
	if rec.BodySHA256 == "" {
		rec.BodySHA256 = record.SHA256Hex(rec.Body)
	}
	if rec.Attributes == nil {
		rec.Attributes = map[string]record.Attribute{}
	}
	if rec.SizeBytes == 0 {
		rec.SizeBytes = record.MessageSize(rec.Body, rec.Attributes)
	}
}
