package inspect

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"

	"github.com/dlqctl/dlqctl/pkg/errs"
	"github.com/dlqctl/dlqctl/pkg/queue"
)

// ReadRecords streams message records from r: NDJSON (one record a line),
// or a JSON array as printed by `sample -o json`, optionally gzip-compressed.
// Each record is decoded (envelope, failure) before fn sees it. name is used
// in error messages. Unreadable input is a bad-input error with the line.
func ReadRecords(r io.Reader, name string, fn func(rec *queue.Record, parsed any) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return errs.BadInputf("%s: not a readable gzip file (%v); pass an NDJSON file of message records", name, err)
		}
		defer gz.Close()
		br = bufio.NewReaderSize(gz, 1<<20)
	}
	// Skip leading whitespace to see whether this is an array.
	for {
		b, err := br.Peek(1)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t' {
			_, _ = br.ReadByte()
			continue
		}
		if b[0] == '[' {
			return readArray(br, name, fn)
		}
		break
	}
	line := 0
	for {
		raw, err := br.ReadBytes('\n')
		if len(raw) > 0 {
			line++
			raw = bytes.TrimSpace(raw)
			if len(raw) > 0 {
				var rec queue.Record
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
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

func readArray(r io.Reader, name string, fn func(rec *queue.Record, parsed any) error) error {
	dec := json.NewDecoder(r)
	if _, err := dec.Token(); err != nil {
		return errs.BadInputf("%s: not a JSON array of message records (%v)", name, err)
	}
	i := 0
	for dec.More() {
		i++
		var rec queue.Record
		if err := dec.Decode(&rec); err != nil {
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
func fill(rec *queue.Record) {
	if rec.BodySHA256 == "" {
		rec.BodySHA256 = queue.SHA256Hex(rec.Body)
	}
	if rec.Attributes == nil {
		rec.Attributes = map[string]queue.Attribute{}
	}
	if rec.SizeBytes == 0 {
		rec.SizeBytes = queue.MessageSize(rec.Body, rec.Attributes)
	}
}
