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

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// ReadRecords streams message records from r: NDJSON (one record a line),
// or a JSON array as printed by `sample -o json`, optionally gzip-compressed.
// Each record is decoded (envelope, failure) before fn sees it. name is used
// in error messages. Unreadable input is a bad-input error with the line.
func ReadRecords(r io.Reader, name string, fn func(rec *record.Record, parsed any) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	zipped := false
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return errs.BadInputf("%s: not a readable gzip file (%v); pass an NDJSON file of message records", name, err)
		}
		defer gz.Close()
		br = bufio.NewReaderSize(gz, 1<<20)
		zipped = true
	}
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
			return readArray(br, name, zipped, fn)
		}
		break
	}
	line := 0
	for {
		raw, err := readLine(br, maxRecordLine)
		if err == errLineTooLong {
			return errs.BadInputf("%s:%d: a line longer than %d MiB is not a message record (SQS bodies are at most 1 MiB); pass NDJSON message records", name, line+1, maxRecordLine>>20)
		}
		if err != nil && err != io.EOF {
			// The stream broke inside this line: say why, not that the
			// cut-off line is not a record.
			return readErr(err)
		}
		if len(raw) > 0 {
			line++
			raw = bytes.TrimSpace(raw)
			if len(raw) > 0 {
				var rec record.Record
				if jerr := json.Unmarshal(raw, &rec); jerr != nil {
					return errs.BadInputf("%s:%d: not a message record (%v); pass NDJSON as written by `dlqctl sample -o ndjson` or an archive part", name, line, jerr)
				}
				if rec.MessageID == "" && rec.Body == "" {
					return errs.BadInputf("%s:%d: record has neither message_id nor body; pass NDJSON message records", name, line)
				}
				fill(&rec)
				if ferr := fn(&rec, Decode(&rec)); ferr != nil {
					return ferr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
	}
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
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// isDamagedGzip reports whether err comes from corrupt or truncated gzip
// data.
func isDamagedGzip(err error) bool {
	var corrupt flate.CorruptInputError
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.As(err, &corrupt)
}

func readArray(r io.Reader, name string, zipped bool, fn func(rec *record.Record, parsed any) error) error {
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
		if err := fn(&rec, Decode(&rec)); err != nil {
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
