package ui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"sync"
	"syscall"

	"github.com/dlqctl/dlqctl/pkg/errs"
)

// LockedBuffer is a bytes.Buffer safe for concurrent writers and a reader
// (the UI keeps the readers' diagnostics in one while the screen is up).
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Read(p)
}

// RunChild runs exe ARGS (dlqctl itself, with -o ndjson among ARGS) as a
// child process, reports each of its NDJSON events and returns its
// summary, exit code and standard error.
func RunChild(ctx context.Context, exe string, args []string, event func(RunEvent)) RunResult {
	c := exec.Command(exe, args...)
	c.Stdin = nil
	var stderr LockedBuffer
	c.Stderr = &stderr
	out, err := c.StdoutPipe()
	if err != nil {
		return RunResult{Code: -1, Err: err}
	}
	if err := c.Start(); err != nil {
		return RunResult{Code: -1, Err: err}
	}
	// Ctrl-C in the UI stops the child the way Ctrl-C stops it in a
	// shell: SIGINT, then it finishes its batch and prints its summary.
	stop := context.AfterFunc(ctx, func() { _ = c.Process.Signal(syscall.SIGINT) })
	defer stop()
	var res RunResult
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var m map[string]any
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		typ, _ := m["type"].(string)
		if typ == "summary" || typ == "" {
			res.Summary = m
		}
		event(RunEvent{Type: typ, Fields: m})
	}
	err = c.Wait()
	res.Code = 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.Code = ee.ExitCode()
		if res.Code < 0 {
			res.Code = errs.ExitInterrupted
		}
	case err != nil:
		res.Code, res.Err = -1, err
	}
	var all bytes.Buffer
	_, _ = io.Copy(&all, &stderr)
	res.Stderr = all.String()
	return res
}
