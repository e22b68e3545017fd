package archive

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// PartCheck is the verification result of one part.
type PartCheck struct {
	Key      string   `json:"key"`
	Records  int      `json:"records"`
	Bytes    int64    `json:"bytes"`
	SHA256   string   `json:"sha256"`
	OK       bool     `json:"ok"`
	Problems []string `json:"problems,omitempty"`
	// Sources counts the part's records by the queue they were
	// dead-lettered from, where they say (a restore's warning).
	Sources map[string]int `json:"-"`
}

// VerifyReport is the result of VerifyArchive.
type VerifyReport struct {
	Manifest string      `json:"manifest"`
	RunID    string      `json:"run_id"`
	Queue    string      `json:"queue"`
	OK       bool        `json:"ok"`
	Records  int         `json:"records"`
	Bytes    int64       `json:"bytes"`
	Parts    []PartCheck `json:"parts"`
	Problems []string    `json:"problems,omitempty"` // manifest-level
	// Sources sums the parts' Sources.
	Sources map[string]int `json:"-"`
}

// VerifyArchive re-reads every part of the manifest at ref and checks its
// size and SHA-256, that it is valid gzip, that every line parses as a
// message record whose body matches its body_sha256, the record count and
// the first and last message ids. onPart, when set, is called after each
// part. A report with OK false is not an error: the caller decides.
func VerifyArchive(ctx context.Context, ref Ref, onPart func(PartCheck)) (*VerifyReport, error) {
	m, err := ReadManifest(ctx, ref)
	if err != nil {
		return nil, err
	}
	rep := &VerifyReport{Manifest: ref.Name(), RunID: m.RunID, Queue: m.Queue.Name, OK: true, Parts: []PartCheck{}}
	sum := Totals{Parts: len(m.Parts)}
	for i, p := range m.Parts {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		pc := checkPart(ctx, ref.Src, i, p)
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		rep.Parts = append(rep.Parts, pc)
		for q, n := range pc.Sources {
			if rep.Sources == nil {
				rep.Sources = map[string]int{}
			}
			rep.Sources[q] += n
		}
		rep.Records += pc.Records
		rep.Bytes += pc.Bytes
		sum.Records += p.Records
		sum.Bytes += p.Bytes
		if !pc.OK {
			rep.OK = false
		}
		if onPart != nil {
			onPart(pc)
		}
	}
	if m.Totals.Parts != sum.Parts || m.Totals.Records != sum.Records || m.Totals.Bytes != sum.Bytes {
		rep.OK = false
		rep.Problems = append(rep.Problems, fmt.Sprintf("manifest totals (%d parts, %d records, %d bytes) do not match its parts (%d, %d, %d)",
			m.Totals.Parts, m.Totals.Records, m.Totals.Bytes, sum.Parts, sum.Records, sum.Bytes))
	}
	return rep, nil
}

func checkPart(ctx context.Context, src Source, i int, p Part) PartCheck {
	pc := PartCheck{Key: p.Key, OK: true}
	bad := func(format string, a ...any) {
		pc.OK = false
		pc.Problems = append(pc.Problems, fmt.Sprintf(format, a...))
	}
	rc, err := src.Open(ctx, p.Key)
	if err != nil {
		bad("cannot read %s: %v", partLabel(i, p), firstLine(err))
		return pc
	}
	defer rc.Close()
	h := sha256.New()
	counted := &countingWriter{w: h}
	tee := io.TeeReader(rc, counted)
	gz, err := gzip.NewReader(bufio.NewReaderSize(tee, 256<<10))
	if err != nil {
		bad("not gzip: %v", err)
		_, _ = io.Copy(io.Discard, tee)
	} else {
		var first, last string
		line := 0
		rerr := readLines(gz, func(raw []byte) error {
			line++
			var rec record.Record
			if err := unmarshalRecord(raw, &rec); err != nil {
				return fmt.Errorf("line %d is not a message record: %v", line, err)
			}
			if rec.BodySHA256 != record.SHA256Hex(rec.Body) {
				return fmt.Errorf("line %d (message %s): body does not match its body_sha256", line, rec.MessageID)
			}
			if first == "" {
				first = rec.MessageID
			}
			last = rec.MessageID
			pc.Records++
			if q := rec.SourceQueue(); q != "" {
				if pc.Sources == nil {
					pc.Sources = map[string]int{}
				}
				pc.Sources[q]++
			}
			return nil
		})
		if rerr != nil {
			bad("%v", rerr)
		}
		// Read what gzip left (trailing data) so the digest covers the object.
		_, _ = io.Copy(io.Discard, tee)
		if rerr == nil {
			if pc.Records != p.Records {
				bad("holds %d records, the manifest says %d", pc.Records, p.Records)
			}
			if first != p.FirstMessageID || last != p.LastMessageID {
				bad("first/last message id %s/%s, the manifest says %s/%s", first, last, p.FirstMessageID, p.LastMessageID)
			}
		}
	}
	pc.Bytes = counted.n
	pc.SHA256 = hex.EncodeToString(h.Sum(nil))
	if pc.Bytes != p.Bytes {
		bad("is %d bytes, the manifest says %d", pc.Bytes, p.Bytes)
	}
	if pc.SHA256 != p.SHA256 {
		bad("SHA-256 %s, the manifest says %s", pc.SHA256, p.SHA256)
	}
	return pc
}

// readLines calls fn for every non-empty line of r (lines may be up to a
// few MiB: a 1 MiB body JSON-escaped).
func readLines(r io.Reader, fn func([]byte) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		raw, err := br.ReadBytes('\n')
		if len(trimSpace(raw)) > 0 {
			if ferr := fn(trimSpace(raw)); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not readable gzip: %v", err)
		}
	}
}
