package archive

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// Format identifies the manifest layout; readers refuse other major versions.
const Format = "dlqctl-archive/1"

// Manifest describes one archive run. It is written once, at the end of the
// run (also after a failure or an interrupt, listing the parts that were
// verified), next to the parts, as _manifest.json (the leading "_" keeps
// query engines from reading it as data).
type Manifest struct {
	Format      string    `json:"format"`
	ToolVersion string    `json:"tool_version"`
	RunID       string    `json:"run_id"`
	Bucket      string    `json:"bucket"`
	Prefix      string    `json:"prefix"`
	Queue       QueueInfo `json:"queue"`
	Selection   string    `json:"selection"`
	StartedAt   time.Time `json:"started_at"`
	FinishedAt  time.Time `json:"finished_at"`
	// Deleted says whether the run deleted archived messages from the queue
	// (--delete). Per part, Part.Deleted says how many.
	Deleted bool `json:"deleted"`
	// Encryption is the server-side encryption requested for every object.
	Encryption string `json:"encryption,omitempty"`
	KMSKeyID   string `json:"kms_key_id,omitempty"`
	// Complete is false when the run stopped early (error, interrupt,
	// in-flight limit, --max); Note says why.
	Complete bool   `json:"complete"`
	Note     string `json:"note,omitempty"`
	Parts    []Part `json:"parts"`
	Totals   Totals `json:"totals"`
}

// QueueInfo names the archived queue.
type QueueInfo struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	ARN  string `json:"arn"`
	FIFO bool   `json:"fifo,omitempty"`
}

// Part is one verified gzip NDJSON object.
type Part struct {
	Key string `json:"key"`
	// Records is the number of message records in the part.
	Records int `json:"records"`
	// Bytes is the size of the object (compressed); SHA256 its hex digest.
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// UncompressedBytes is the size of the NDJSON inside.
	UncompressedBytes int64  `json:"uncompressed_bytes"`
	FirstMessageID    string `json:"first_message_id"`
	LastMessageID     string `json:"last_message_id"`
	// Deleted is how many of the part's messages were deleted from the
	// queue after verification; DeleteFailed how many could not be.
	Deleted      int `json:"deleted"`
	DeleteFailed int `json:"delete_failed,omitempty"`
}

// Totals sum the parts.
type Totals struct {
	Parts             int   `json:"parts"`
	Records           int   `json:"records"`
	Bytes             int64 `json:"bytes"`
	UncompressedBytes int64 `json:"uncompressed_bytes"`
	Deleted           int   `json:"deleted"`
	DeleteFailed      int   `json:"delete_failed"`
}

// Sum recomputes Totals from Parts.
func (m *Manifest) Sum() {
	t := Totals{Parts: len(m.Parts)}
	for _, p := range m.Parts {
		t.Records += p.Records
		t.Bytes += p.Bytes
		t.UncompressedBytes += p.UncompressedBytes
		t.Deleted += p.Deleted
		t.DeleteFailed += p.DeleteFailed
	}
	m.Totals = t
}

// Marshal renders the manifest as indented JSON.
func (m *Manifest) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// DecodeManifest reads a manifest; name is used in error messages. Anything
// that is not a dlqctl manifest is a bad-input error.
func DecodeManifest(r io.Reader, name string) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(io.LimitReader(r, 256<<20))
	if err := dec.Decode(&m); err != nil {
		return nil, errs.BadInputf("%s is not a dlqctl archive manifest (%v); pass an archive run's %s or its folder", name, err, ManifestName)
	}
	if !strings.HasPrefix(m.Format, "dlqctl-archive/") {
		return nil, errs.BadInputf("%s is not a dlqctl archive manifest (format %q); pass an archive run's %s or its folder", name, m.Format, ManifestName)
	}
	if m.Format != Format {
		return nil, errs.BadInputf("%s uses archive format %s, this dlqctl reads %s; use a newer dlqctl", name, m.Format, Format)
	}
	for i, p := range m.Parts {
		if p.Key == "" {
			return nil, errs.BadInputf("%s: part %d has no key; the manifest is damaged", name, i+1)
		}
	}
	return &m, nil
}

// LooksLikeManifest reports whether the first bytes of a JSON document
// carry the dlqctl manifest format marker.
func LooksLikeManifest(head []byte) bool {
	s := string(head)
	i := strings.Index(s, `"format"`)
	if i < 0 {
		return false
	}
	rest := strings.TrimLeft(s[i+len(`"format"`):], " \t\r\n:")
	return strings.HasPrefix(rest, `"dlqctl-archive/`)
}

func partLabel(i int, p Part) string { return fmt.Sprintf("part %d (%s)", i+1, p.Key) }
