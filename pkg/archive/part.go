package archive

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"os"
	"sync"

	"github.com/dlqctl/dlqctl/pkg/inspect"
	"github.com/dlqctl/dlqctl/pkg/record"
)

// partWriter streams message records into one gzip-compressed NDJSON part:
// records -> NDJSON -> gzip -> (SHA-256, byte count, sink). The sink is a
// temporary file for real runs and io.Discard for --dry-run estimates, so
// memory does not grow with the part.
type partWriter struct {
	file   *os.File // nil for a discard sink
	sink   *countingWriter
	sum    hash.Hash
	gz     *gzip.Writer
	raw    *countingWriter // uncompressed NDJSON bytes
	buf    *bufio.Writer
	enc    *json.Encoder
	closed bool

	records       int
	first, last   string
	sha256Hex     string
	sha256Raw     []byte
	compressedLen int64
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// newPartWriter starts a part in a temporary file in dir ("" = os.TempDir),
// or, with discard, counts bytes without storing them.
func newPartWriter(dir string, discard bool) (*partWriter, error) {
	p := &partWriter{sum: sha256.New()}
	var dst io.Writer = io.Discard
	if !discard {
		f, err := os.CreateTemp(dir, "dlqctl-part-*.ndjson.gz")
		if err != nil {
			return nil, err
		}
		p.file = f
		dst = f
	}
	p.sink = &countingWriter{w: io.MultiWriter(dst, p.sum)}
	p.gz = gzPool.Get().(*gzip.Writer)
	p.gz.Reset(p.sink)
	p.raw = &countingWriter{w: p.gz}
	p.buf = bufPool.Get().(*bufio.Writer)
	p.buf.Reset(p.raw)
	p.enc = json.NewEncoder(p.buf)
	p.enc.SetEscapeHTML(false)
	return p, nil
}

// Write appends one record as a line of NDJSON, with its error
// fingerprint (what `group --by error` counts by), so query engines can
// group by it without dlqctl's normalisation.
func (p *partWriter) Write(rec *record.Record) error {
	rec.ErrorFingerprint = inspect.ErrorFingerprint(rec)
	if err := p.enc.Encode(rec.JSONForm()); err != nil {
		return err
	}
	p.records++
	if p.first == "" {
		p.first = rec.MessageID
	}
	p.last = rec.MessageID
	return nil
}

// Size is the compressed size so far (lagging by what gzip still buffers).
func (p *partWriter) Size() int64 { return p.sink.n }

// Uncompressed is the NDJSON size so far.
func (p *partWriter) Uncompressed() int64 { return p.raw.n + int64(p.buf.Buffered()) }

// Finish flushes and closes the gzip stream and computes the digest. The
// file stays open for upload.
func (p *partWriter) Finish() error {
	if p.closed {
		return nil
	}
	p.closed = true
	if err := p.buf.Flush(); err != nil {
		return err
	}
	if err := p.gz.Close(); err != nil {
		return err
	}
	if p.file != nil {
		if err := p.file.Sync(); err != nil {
			return err
		}
	}
	p.sha256Raw = p.sum.Sum(nil)
	p.sha256Hex = hex.EncodeToString(p.sha256Raw)
	p.compressedLen = p.sink.n
	return nil
}

// Reader returns the finished part from its start.
func (p *partWriter) Reader() (io.ReadSeeker, error) {
	if _, err := p.file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return p.file, nil
}

// Discard removes the temporary file and gives the compressor and buffer
// back for the next part; the writer is not used afterwards.
func (p *partWriter) Discard() {
	if p.file != nil {
		name := p.file.Name()
		p.file.Close()
		os.Remove(name)
		p.file = nil
	}
	if p.gz != nil {
		p.gz.Reset(io.Discard)
		gzPool.Put(p.gz)
		p.gz = nil
	}
	if p.buf != nil {
		p.buf.Reset(io.Discard)
		bufPool.Put(p.buf)
		p.buf = nil
	}
}

// gzPool and bufPool keep the compressors (about 800 KB each) and write
// buffers of finished parts for the next ones: a transforming redrive
// writes a small part per round of uploads, and allocating them afresh
// each time was most of its allocations.
var (
	gzPool = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(io.Discard, gzip.DefaultCompression)
		return w
	}}
	bufPool = sync.Pool{New: func() any { return bufio.NewWriterSize(io.Discard, 256<<10) }}
)
