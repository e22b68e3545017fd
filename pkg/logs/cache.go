package logs

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dlqctl/dlqctl/pkg/record"
)

// NegativeTTL is how long "the logs say nothing" is trusted: log events
// can arrive in CloudWatch Logs minutes after they were written, so a
// message not found is searched again after this long. What was found is
// kept for good.
const NegativeTTL = time.Hour

// Cache keeps lookup results in an append-only NDJSON file under the state
// directory, one per set of log groups and window: re-running classify
// does not search the logs again. A nil *Cache caches nothing.
type Cache struct {
	path    string
	refresh bool
	now     func() time.Time
	mu      sync.Mutex
	loaded  bool
	entries map[string]cacheEntry
}

type cacheEntry struct {
	ID      string          `json:"id"`
	At      time.Time       `json:"at"`
	Failure *record.Failure `json:"failure"`
}

// OpenCache returns the cache for groups and window (the --logs-window
// text, "" for the default) under dir (the state directory). With refresh
// nothing cached is used, but new results are still written.
func OpenCache(dir string, groups []string, window string, refresh bool) *Cache {
	h := sha256.Sum256([]byte(strings.Join(groups, "\x00") + "\x01" + window))
	return &Cache{path: filepath.Join(dir, "logs", hex.EncodeToString(h[:8])+".ndjson"), refresh: refresh, now: time.Now}
}

// Path is the cache file.
func (c *Cache) Path() string { return c.path }

func (c *Cache) load() error {
	if c.loaded {
		return nil
	}
	c.loaded = true
	c.entries = map[string]cacheEntry{}
	fh, err := os.Open(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("logs cache: %w", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e cacheEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ID == "" || e.Failure == nil {
			continue // a line cut short by a crash: searched again
		}
		c.entries[e.ID] = e
	}
	return nil
}

func (c *Cache) get(id string) (*record.Failure, bool) {
	if c == nil || c.refresh {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.load() != nil {
		return nil, false
	}
	e, ok := c.entries[id]
	if !ok || (!e.Failure.HasContext() && c.now().Sub(e.At) > NegativeTTL) {
		return nil, false
	}
	return e.Failure, true
}

// putAll appends results in one write.
func (c *Cache) putAll(res map[string]*record.Failure) error {
	if c == nil || len(res) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.load()
	at := c.now().UTC()
	var buf []byte
	for id, f := range res {
		e := cacheEntry{ID: id, At: at, Failure: f}
		c.entries[id] = e
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		buf = append(append(buf, b...), '\n')
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return fmt.Errorf("logs cache: %w", err)
	}
	fh, err := os.OpenFile(c.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("logs cache: %w", err)
	}
	_, err = fh.Write(buf)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("logs cache: %w", err)
	}
	return nil
}
